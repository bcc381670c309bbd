package analyze

import (
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/headroom-llm/headroom/rundir"
)

// LevelEnergy is the energy drawn over a level's measured window, from the
// GPUs' telemetry and the host's RAPL counters, and per output token.
//
// Each source's energy is taken between its first and last samples inside
// the window and scaled to the whole window (× window ÷ sampled span, the
// mean power over the span times the window), so that it matches the
// tokens counted over the window; with samples every 0.5 s the span falls
// short of the window by less than a sample interval at each end.
type LevelEnergy struct {
	// GPUJ is the GPUs' energy, summed over devices; GPUEnergyFrom says how
	// it was measured (EnergyFromCounter, EnergyFromPower); GPUDevices how
	// many GPUs it covers.
	GPUJ          float64 `json:"gpu_j,omitempty"`
	GPUEnergyFrom string  `json:"gpu_energy_from,omitempty"`
	GPUDevices    int     `json:"gpu_devices,omitempty"`
	// GPUJPerOutputToken is GPUJ over the window's output tokens.
	GPUJPerOutputToken float64 `json:"gpu_j_per_output_token,omitempty"`
	// GPUPowerW is GPUJ over the window: the mean power of the GPUs.
	GPUPowerW float64 `json:"gpu_power_w,omitempty"`
	// CPUJ is the host's RAPL energy (package and DRAM zones, summed:
	// EnergyFromRAPL), when the sweep could read it; CPUZones names them.
	CPUJ               float64  `json:"cpu_j,omitempty"`
	CPUEnergyFrom      string   `json:"cpu_energy_from,omitempty"`
	CPUZones           []string `json:"cpu_zones,omitempty"`
	CPUJPerOutputToken float64  `json:"cpu_j_per_output_token,omitempty"`
	CPUPowerW          float64  `json:"cpu_power_w,omitempty"`
	// WindowS is the measured window; OutputTokens the tokens over it.
	WindowS      float64 `json:"window_s"`
	OutputTokens float64 `json:"output_tokens"`
}

// How a level's energy was measured (LevelEnergy.*EnergyFrom).
const (
	// EnergyFromCounter: NVML's total-energy counter (Volta and later),
	// the difference between the first and last samples in the window.
	EnergyFromCounter = "nvml_energy_counter"
	// EnergyFromPower: NVML power samples integrated over time
	// (trapezoids), where the GPU has no energy counter or the run was
	// recorded before headroom read it.
	EnergyFromPower = "integrated_power_samples"
	// EnergyFromRAPL: the CPU's RAPL counters (Linux powercap).
	EnergyFromRAPL = "rapl"
)

// levelEnergy measures each level's energy from the run's telemetry; the
// level's mean GPU power (Server.GPUPowerMeanW) is then the GPU energy over
// the window, one rule for the timeline and the cost.
func levelEnergy(run *Run, levels []LevelStats) {
	gpu := byKey(run.GPU, func(r rundir.GPUTelemetryRow) int32 { return r.Device }, func(r rundir.GPUTelemetryRow) int64 { return r.TimeNS })
	cpu := byKey(run.CPUEnergy, func(r rundir.CPUEnergyRow) string { return r.Zone }, func(r rundir.CPUEnergyRow) int64 { return r.TimeNS })
	for i := range levels {
		l := &levels[i]
		from, to := l.WarmupEndNS, l.EndNS
		if from == 0 || to <= from {
			continue
		}
		tokens := float64(l.OutputTokens)
		if tokens == 0 {
			tokens = l.OutputTokPerS * l.WindowS
		}
		window := float64(to-from) / 1e9
		e := LevelEnergy{WindowS: window, OutputTokens: tokens}
		e.GPUJ, e.GPUEnergyFrom, e.GPUDevices = gpuEnergy(gpu, from, to)
		for _, zone := range slices.Sorted(maps.Keys(cpu)) {
			rows := cpu[zone]
			if !countsCPUEnergy(rows[0].Name) {
				continue
			}
			if j, ok := raplEnergy(rows, from, to); ok {
				e.CPUJ += j
				e.CPUZones = append(e.CPUZones, rows[0].Name)
			}
		}
		if e.GPUDevices == 0 && len(e.CPUZones) == 0 {
			continue
		}
		if e.GPUDevices > 0 {
			e.GPUPowerW = e.GPUJ / window
			l.Server.GPUPowerMeanW = e.GPUPowerW
			if tokens > 0 {
				e.GPUJPerOutputToken = e.GPUJ / tokens
			}
		}
		if len(e.CPUZones) > 0 {
			e.CPUEnergyFrom = EnergyFromRAPL
			e.CPUPowerW = e.CPUJ / window
			if tokens > 0 {
				e.CPUJPerOutputToken = e.CPUJ / tokens
			}
		}
		l.Energy = &e
	}
}

// gpuEnergy is the GPUs' energy over [from, to]: from the energy counter
// when every GPU's samples in the window carry it, else from the power
// samples, for every GPU alike so the sum has one source.
func gpuEnergy(byDev map[int32][]rundir.GPUTelemetryRow, from, to int64) (float64, string, int) {
	var spans [][]rundir.GPUTelemetryRow
	counter := true
	for _, d := range slices.Sorted(maps.Keys(byDev)) {
		rows := inWindow(byDev[d], func(r rundir.GPUTelemetryRow) int64 { return r.TimeNS }, from, to)
		if len(rows) < 2 || rows[len(rows)-1].TimeNS == rows[0].TimeNS {
			continue
		}
		for _, r := range rows {
			counter = counter && r.EnergyMJ != nil
		}
		// A counter that went back (the driver reloaded) is not energy.
		counter = counter && *rows[len(rows)-1].EnergyMJ >= *rows[0].EnergyMJ
		spans = append(spans, rows)
	}
	if len(spans) == 0 {
		return 0, "", 0
	}
	window := float64(to - from)
	var total float64
	for _, rows := range spans {
		first, last := rows[0], rows[len(rows)-1]
		var j float64
		if counter {
			j = float64(*last.EnergyMJ-*first.EnergyMJ) / 1e3
		} else {
			for k := 1; k < len(rows); k++ {
				a, b := rows[k-1], rows[k]
				j += (a.PowerW + b.PowerW) / 2 * float64(b.TimeNS-a.TimeNS) / 1e9
			}
		}
		total += j * window / float64(last.TimeNS-first.TimeNS)
	}
	if counter {
		return total, EnergyFromCounter, len(spans)
	}
	return total, EnergyFromPower, len(spans)
}

// raplEnergy is one RAPL zone's energy over [from, to] (joules), its
// counter's wrap-arounds at max_energy_range_uj undone; false with fewer
// than two readings.
func raplEnergy(rows []rundir.CPUEnergyRow, from, to int64) (float64, bool) {
	rows = inWindow(rows, func(r rundir.CPUEnergyRow) int64 { return r.TimeNS }, from, to)
	if len(rows) < 2 || rows[len(rows)-1].TimeNS == rows[0].TimeNS {
		return 0, false
	}
	var uj float64
	for k := 1; k < len(rows); k++ {
		uj += float64(counterDelta(rows[k-1].EnergyUJ, rows[k].EnergyUJ, rows[k].MaxEnergyRangeUJ))
	}
	span := float64(rows[len(rows)-1].TimeNS - rows[0].TimeNS)
	return uj / 1e6 * float64(to-from) / span, true
}

// counterDelta is how far a counter that wraps to 0 after max advanced
// from prev to cur: across one wrap when cur is below prev. Sampled every
// 0.5 s, a RAPL package counter (a range of about 262 kJ) cannot wrap
// twice between readings below 500 kW.
func counterDelta(prev, cur, max int64) int64 {
	if cur >= prev {
		return cur - prev
	}
	if max <= 0 || prev > max {
		return 0 // a counter that went back without a known range: reset, not energy
	}
	return max - prev + cur
}

// countsCPUEnergy says which RAPL zones add up to the CPU's energy without
// counting twice: the packages and DRAM, not the cores and uncore inside
// a package, nor psys (the platform, packages included).
func countsCPUEnergy(name string) bool {
	return strings.HasPrefix(name, "package") || name == "dram"
}

func byKey[R any, K int32 | string](rows []R, key func(R) K, at func(R) int64) map[K][]R {
	out := map[K][]R{}
	for _, r := range rows {
		out[key(r)] = append(out[key(r)], r)
	}
	for _, rs := range out {
		sort.SliceStable(rs, func(i, j int) bool { return at(rs[i]) < at(rs[j]) })
	}
	return out
}

// inWindow is the rows (sorted by time) from from to to, both included.
func inWindow[R any](rows []R, at func(R) int64, from, to int64) []R {
	lo := sort.Search(len(rows), func(i int) bool { return at(rows[i]) >= from })
	hi := sort.Search(len(rows), func(i int) bool { return at(rows[i]) > to })
	return rows[lo:hi]
}
