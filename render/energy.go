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
		s.Missing = "No energy was measured: the sweep recorded neither GPU telemetry (NVML) nor the CPU's RAPL counters. Run headroom sweep on the server's host (as root for RAPL)."
		return s
	}
	a := axisOf(r.Sweep)
	t := table{
		Caption: "Energy over each level's measured window; " + contextLine(r, nil) + ".",
		Head:    []string{a.head(), "Output tok/s", "Window", "Output tokens"},
		Right:   []bool{true, true, true, true},
	}
	if gpu {
		t.Head = append(t.Head, "GPU power (W)", "GPU energy (J)", "GPU J/output token")
		t.Right = append(t.Right, true, true, true)
	}
	if cpu {
		t.Head = append(t.Head, "CPU power (W)", "CPU J/output token")
		t.Right = append(t.Right, true, true)
	}
	for _, l := range r.Sweep.Levels {
		e := l.Energy
		if e == nil {
			continue
		}
		row := []string{a.cell(l.Concurrency, l.RateRPS), sig(l.OutputTokPerS), dur(e.WindowS), thousands(e.OutputTokens, 0)}
		if gpu {
			row = append(row, orDash(e.GPUPowerW, sig), orDash(e.GPUJ, sig), orDash(e.GPUJPerOutputToken, sig))
		}
		if cpu {
			row = append(row, orDash(e.CPUPowerW, sig), orDash(e.CPUJPerOutputToken, sig))
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
