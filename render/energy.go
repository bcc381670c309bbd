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

// energySection shows the energy per output token at each level, with the
// run's context: what a token costs in joules on this box.
func energySection(id string, r *analyze.RunAnalysis) section {
	s := section{
		ID:    id,
		Title: "Energy per output token",
		Read: "What the GPUs (and the CPU, where its RAPL counters could be read) drew over each level's measured window, " +
			"divided by the output tokens of that window: the lower, the less energy each token took.",
	}
	if r.Sweep == nil {
		return s
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
		// Nothing to say here: the over-time section says no telemetry was recorded.
		return s
	}
	a := axisOf(r.Sweep)
	// A narrow table (it sits beside the other per-level tables); the
	// window, its tokens and the energy itself are folded.
	t := table{
		Caption: "Energy per output token over each level's measured window; " + contextLine(r, nil) + ".",
		Head:    []string{a.head()},
		Right:   []bool{true},
		Fold:    []bool{false},
	}
	col := func(head string, fold bool) {
		t.Head, t.Right, t.Fold = append(t.Head, head), append(t.Right, true), append(t.Fold, fold)
	}
	if gpu {
		col("GPU power (W)", false)
		col("GPU J/output token", false)
	}
	if cpu {
		col("CPU power (W)", false)
		col("CPU J/output token", false)
	}
	col("Output tok/s", true)
	col("Window", true)
	col("Output tokens", true)
	if gpu {
		col("GPU energy (J)", true)
	}
	for _, l := range r.Sweep.Levels {
		e := l.Energy
		if e == nil {
			continue
		}
		row := []string{a.cell(l.Concurrency, l.RateRPS)}
		if gpu {
			row = append(row, orDash(e.GPUPowerW, sig), orDash(e.GPUJPerOutputToken, sig))
		}
		if cpu {
			row = append(row, orDash(e.CPUPowerW, sig), orDash(e.CPUJPerOutputToken, sig))
		}
		row = append(row, sig(l.OutputTokPerS), dur(e.WindowS), thousands(e.OutputTokens, 0))
		if gpu {
			row = append(row, orDash(e.GPUJ, sig))
		}
		t.Rows = append(t.Rows, row)
	}
	var how []string
	for _, k := range []string{analyze.EnergyFromCounter, analyze.EnergyFromPower, analyze.EnergyFromRAPL} {
		if froms[k] {
			how = append(how, energyFromText[k])
		}
	}
	t.Notes = append(t.Notes, sentence("Measured from "+strings.Join(how, " and ")+
		"; each source's energy between its first and last sample in the window, scaled to the whole window"))
	if froms[analyze.EnergyFromPower] {
		t.Notes = append(t.Notes, "Integrated power samples are NVML's power readings (sampled every 0.5 s in a sweep) joined by straight lines: "+
			"a burst shorter than the interval can be missed; the energy counter, where the GPU has one (Volta and later) and the run recorded it, counts every joule.")
	}
	if cpu {
		t.Notes = append(t.Notes, "CPU energy is the packages and DRAM of the sweep's host: the load generator's own CPU is in it when it runs there.")
	}
	s.Tables = append(s.Tables, t)
	return s
}
