package render

import (
	"strings"

	"github.com/headroom-llm/headroom/analyze"
)

// energyFromText says how a level's energy was measured.
var energyFromText = map[string]string{
	analyze.EnergyFromCounter: "NVML energy counter",
	analyze.EnergyFromPower:   "NVML power samples, integrated",
	analyze.EnergyFromRAPL:    "RAPL counters",
}

// energyColumns are the energy per output token's columns of a per-level
// table: what a token costs in joules on this box, over each level's
// measured window. They join the run's Pareto table, the other view of what
// each level delivers for what it costs, or stand in a table of their own
// where the run has no Pareto point.
type energyColumns struct {
	head  []string
	fold  []bool
	cells func(l *analyze.LevelStats) []string // nil: the level has no energy
	notes []string
}

// energyOf is r's energy columns, ok false when no level has energy.
func energyOf(r *analyze.RunAnalysis) (ec energyColumns, ok bool) {
	if r.Sweep == nil {
		return ec, false
	}
	var cpu, gpu bool
	froms := map[string]bool{}
	for _, l := range r.Sweep.Levels {
		if e := l.Energy; e != nil {
			gpu = gpu || e.GPUDevices > 0
			cpu = cpu || e.CPUEnergyFrom != ""
			froms[e.GPUEnergyFrom], froms[e.CPUEnergyFrom] = true, true
		}
	}
	if !gpu && !cpu {
		// Nothing to say: the over-time section says no telemetry was recorded.
		return ec, false
	}
	col := func(head string, fold bool) {
		ec.head, ec.fold = append(ec.head, head), append(ec.fold, fold)
	}
	if gpu {
		col("GPU J/token", false)
		col("GPU power (W)", true)
	}
	if cpu {
		col("CPU J/token", false)
		col("CPU power (W)", true)
	}
	col("Energy window", true)
	if gpu {
		col("GPU energy (J)", true)
	}
	ec.cells = func(l *analyze.LevelStats) []string {
		e := l.Energy
		if e == nil {
			return nil
		}
		var row []string
		if gpu {
			row = append(row, orDash(e.GPUJPerOutputToken, sig), orDash(e.GPUPowerW, sig))
		}
		if cpu {
			row = append(row, orDash(e.CPUJPerOutputToken, sig), orDash(e.CPUPowerW, sig))
		}
		row = append(row, dur(e.WindowS)+", "+thousands(e.OutputTokens, 0)+" output tokens")
		if gpu {
			row = append(row, orDash(e.GPUJ, sig))
		}
		return row
	}
	var how []string
	for _, k := range []string{analyze.EnergyFromCounter, analyze.EnergyFromPower, analyze.EnergyFromRAPL} {
		if froms[k] {
			how = append(how, energyFromText[k])
		}
	}
	drew := "GPUs"
	switch {
	case gpu && cpu:
		drew = "GPUs and the CPU"
	case cpu:
		drew = "CPU"
	}
	note := "Energy per output token: what the " + drew +
		" drew over each level's measured window (" + strings.Join(how, " and ") + ") divided by the window's output tokens; lower is better"
	if froms[analyze.EnergyFromPower] {
		note += ". Power samples (every 0.5 s) joined by straight lines can miss a shorter burst; the GPU's energy counter, where recorded, counts every joule"
	}
	ec.notes = append(ec.notes, sentence(note))
	if cpu {
		ec.notes = append(ec.notes, "CPU energy is the packages and DRAM of the sweep's host: the load generator's own CPU is in it when it runs there.")
	}
	return ec, true
}

// energySection is the energy per output token at each level in a table
// of its own, for a run whose Pareto view has no point to join it to.
func energySection(id string, r *analyze.RunAnalysis) section {
	s := section{ID: id, Title: "Energy per output token"}
	ec, ok := energyOf(r)
	if !ok {
		return s
	}
	a := axisOf(r.Sweep)
	t := table{
		Caption: "Energy per output token over each level's measured window; " + contextLine(r, nil) + ".",
		Head:    append([]string{a.head(), "Output tok/s"}, ec.head...),
		Fold:    append([]bool{false, false}, ec.fold...),
		Notes:   ec.notes,
	}
	for i := range r.Sweep.Levels {
		l := &r.Sweep.Levels[i]
		if cells := ec.cells(l); cells != nil {
			t.Rows = append(t.Rows, append([]string{a.cell(l.Concurrency, l.RateRPS), sig(l.OutputTokPerS)}, cells...))
		}
	}
	t.Right = make([]bool, len(t.Head))
	for i := range t.Right {
		t.Right[i] = true
	}
	s.Tables = append(s.Tables, t)
	return s
}
