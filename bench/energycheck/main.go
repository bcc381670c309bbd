// Command energycheck compares, for each GPU of a headroom run, the energy
// NVML's total-energy counter says was drawn (gpu_telemetry.energy_mj, the
// difference between samples) with the energy from integrating NVML's power
// samples (trapezoids over power_w): over the whole run, over consecutive
// slices, and with every Nth sample only (a sparser sampling, as a sweep's
// 0.5 s against a probe's 50 ms). bench/h200/energy-check.sh runs it on the
// H200 after a probe.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"

	"github.com/headroom-llm/headroom/rundir"
)

func main() {
	slice := flag.Duration("slice", 2e9, "length of the slices compared")
	every := flag.Int("every", 20, "also integrate every Nth sample only")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: energycheck [--slice 2s] [--every 20] RUN_DIR")
		os.Exit(2)
	}
	rows, err := rundir.ReadTable[rundir.GPUTelemetryRow](flag.Arg(0), rundir.TableGPUTelemetry)
	if err != nil {
		fmt.Fprintln(os.Stderr, "energycheck:", err)
		os.Exit(1)
	}
	report(os.Stdout, rows, slice.Nanoseconds(), *every)
}

func report(w io.Writer, rows []rundir.GPUTelemetryRow, sliceNS int64, every int) {
	byDev := map[int32][]rundir.GPUTelemetryRow{}
	for _, r := range rows {
		byDev[r.Device] = append(byDev[r.Device], r)
	}
	devs := make([]int32, 0, len(byDev))
	for d := range byDev {
		devs = append(devs, d)
	}
	slices.Sort(devs)
	for _, d := range devs {
		rs := byDev[d]
		sort.Slice(rs, func(i, j int) bool { return rs[i].TimeNS < rs[j].TimeNS })
		have := 0
		for _, r := range rs {
			if r.EnergyMJ != nil {
				have++
			}
		}
		span := seconds(rs[len(rs)-1].TimeNS - rs[0].TimeNS)
		fmt.Fprintf(w, "GPU %d: %d samples over %.1f s; %d carry energy_mj\n", d, len(rs), span, have)
		if have != len(rs) || len(rs) < 2 {
			fmt.Fprintln(w, "  the energy counter is missing: nothing to compare (NVML_ERROR_NOT_SUPPORTED, an old driver, or a run recorded before headroom read it)")
			continue
		}
		c, p := counterJ(rs), trapezoidJ(rs)
		fmt.Fprintf(w, "  whole run: counter %.1f J, integrated power %.1f J, integrated/counter %.4f, mean power %.1f W\n", c, p, p/c, c/span)
		if every > 1 {
			var sub []rundir.GPUTelemetryRow
			for i := 0; i < len(rs); i += every {
				sub = append(sub, rs[i])
			}
			if len(sub) >= 2 {
				fmt.Fprintf(w, "  every %dth sample: counter %.1f J, integrated %.1f J, integrated/counter %.4f\n", every, counterJ(sub), trapezoidJ(sub), trapezoidJ(sub)/counterJ(sub))
			}
		}
		fmt.Fprintf(w, "  %.0f s slices: start_s  counter_J  integrated_J  integrated/counter  mean_W\n", seconds(sliceNS))
		var ratios []float64
		for lo := rs[0].TimeNS; lo+sliceNS <= rs[len(rs)-1].TimeNS; lo += sliceNS {
			var s []rundir.GPUTelemetryRow
			for _, r := range rs {
				if r.TimeNS >= lo && r.TimeNS <= lo+sliceNS {
					s = append(s, r)
				}
			}
			if len(s) < 2 {
				continue
			}
			cj, pj := counterJ(s), trapezoidJ(s)
			if cj <= 0 {
				continue
			}
			ratios = append(ratios, pj/cj)
			fmt.Fprintf(w, "    %6.0f  %9.1f  %12.1f  %18.4f  %6.1f\n", seconds(lo-rs[0].TimeNS), cj, pj, pj/cj, cj/seconds(s[len(s)-1].TimeNS-s[0].TimeNS))
		}
		if len(ratios) > 0 {
			slices.Sort(ratios)
			fmt.Fprintf(w, "  slice ratios integrated/counter: min %.4f median %.4f max %.4f over %d slices\n", ratios[0], ratios[len(ratios)/2], ratios[len(ratios)-1], len(ratios))
		}
	}
}

func seconds(ns int64) float64 { return float64(ns) / 1e9 }

func counterJ(rs []rundir.GPUTelemetryRow) float64 {
	return float64(*rs[len(rs)-1].EnergyMJ-*rs[0].EnergyMJ) / 1e3
}

func trapezoidJ(rs []rundir.GPUTelemetryRow) float64 {
	var j float64
	for i := 1; i < len(rs); i++ {
		j += (rs[i-1].PowerW + rs[i].PowerW) / 2 * seconds(rs[i].TimeNS-rs[i-1].TimeNS)
	}
	return j
}
