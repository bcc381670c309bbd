package render

import (
	"fmt"
	"strings"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/rundir"
)

// headlineSection is what gets forwarded: the four numbers a reader needs
// first, each either measured or saying why not.
func headlineSection(id string, r *analyze.RunAnalysis) section {
	s := section{ID: id, Title: "Headline"}
	missing := func(label, why string) fact { return fact{Label: label, Value: why, Missing: true} }
	sweepWhy := "not measured: no load sweep in this run"
	s.Facts = []fact{
		missing("Peak sustained throughput", sweepWhy),
		missing("Recommended concurrency cap", sweepWhy),
		missing("Wall hit", sweepWhy),
		missing("Cost per million tokens", sweepWhy),
	}
	if rl := r.Roofline; rl != nil {
		s.Facts = append(s.Facts, fact{
			Label: "Hardware ceiling",
			Value: fmt.Sprintf("%s %s peak, %s, ridge %s FLOP/byte", tflops(rl.PeakFLOPPerS), rl.DType, gbps(rl.BandwidthBytesPerS), sig(rl.RidgeFLOPPerByte)),
			Note:  orMissing(rl.GPU, ""),
		})
	}
	return s
}

// summarySection holds the four sentences on the shape of the throughput
// curve that the seed says to publish.
func summarySection(id string, r *analyze.RunAnalysis) section {
	s := section{ID: id, Title: "The throughput curve in four sentences"}
	s.Missing = noSweep("throughput curve to describe")
	return s
}

// sweepSection is the seed's three panels: throughput, TPOT and TTFT
// against concurrency, with the knees marked.
func sweepSection(id string, r *analyze.RunAnalysis) section {
	return section{
		ID:    id,
		Title: "Throughput, TPOT and TTFT against concurrency",
		Read: "Throughput climbs, then flattens: the flattening is the real operating ceiling. TPOT stays flat " +
			"while decode is memory-bound (extra users are nearly free), then rises at the knee. TTFT p99 pulling " +
			"away from p50 is queueing.",
		Missing: noSweep("throughput, TPOT or TTFT curve"),
	}
}

// goodputSection shows throughput that meets the SLO, level by level.
func goodputSection(id string, r *analyze.RunAnalysis) section {
	return section{
		ID:    id,
		Title: "Goodput under the SLO",
		Read: "A level's goodput is its throughput when its p99 TTFT and p99 TPOT are inside the SLO; the " +
			"first level outside the SLO is where usable capacity stopped, whatever the throughput column says.",
		Missing: noSweep("goodput"),
	}
}

// diagnosisSection shows which wall was hit, with the evidence.
func diagnosisSection(id string, r *analyze.RunAnalysis) section {
	return section{
		ID:    id,
		Title: "Diagnosis: which wall was hit",
		Read: "Four checks, each with its evidence: KV-cache wall (preemptions, cache near full), compute knee " +
			"(clean log, GPU busy), queueing (TTFT tail pulling away while TPOT is flat), client-bound (the load " +
			"generator could not keep up).",
		Missing: noSweep("wall to diagnose"),
	}
}

// timelineSection shows the server's KV-cache usage and queue over time.
func timelineSection(id string, r *analyze.RunAnalysis) section {
	return section{
		ID:    id,
		Title: "KV cache and queue over time",
		Read: "The server's KV-cache usage and waiting requests through the sweep, with the level boundaries " +
			"marked. A cache near 100% at the knee points to the KV-cache wall; a growing queue to queueing.",
		Missing: noSweep("server metrics timeline"),
	}
}

// telemetrySection shows the GPU's utilisation, power and clocks.
func telemetrySection(id string, r *analyze.RunAnalysis) section {
	return section{
		ID:      id,
		Title:   "GPU telemetry",
		Read:    "GPU utilisation, power and SM clock through the sweep. Falling clocks at high power mean throttling.",
		Missing: noSweep("GPU telemetry"),
	}
}

// costSection shows cost per million tokens against hosted API prices.
func costSection(id string, r *analyze.RunAnalysis) section {
	return section{
		ID:    id,
		Title: "Cost per million tokens",
		Read: "What the box costs per million output tokens at peak sustained throughput and at the SLO " +
			"operating point (the honest one), next to dated hosted API prices.",
		Missing: noSweep("throughput to price"),
	}
}

// contextSection is the run's full context: every number above holds for
// this configuration only.
func contextSection(id string, r *analyze.RunAnalysis) section {
	s := section{
		ID:    id,
		Title: "Run context",
		Read:  "Every number in this report holds for this configuration only; change any of it and measure again.",
	}
	t := table{Head: []string{"", ""}}
	for _, c := range r.Context {
		t.Rows = append(t.Rows, []string{c.Label, c.Value})
	}
	if len(t.Rows) > 0 {
		s.Tables = append(s.Tables, t)
	}
	if len(r.Missing) > 0 {
		s.Notes = append(s.Notes, "Missing context: "+strings.Join(r.Missing, ", ")+". Numbers above lack it; record it in the next run.")
	}
	return s
}

// methodologySection says how the numbers were made and what limits them.
func methodologySection(id string, r *analyze.RunAnalysis) section {
	s := section{ID: id, Title: "Methodology and caveats"}
	m := r.Manifest
	if r.Roofline != nil {
		s.Sentences = append(s.Sentences,
			fmt.Sprintf("Roofline: one GEMM shape, (B,%d) @ (%d,%d) in %s, swept over B; intensity = 2·B·K·N ÷ bytes moved, "+
				"which is about B while the weights dominate the bytes. Peak is the best measured GEMM, bandwidth the best "+
				"measured copy, ridge = peak ÷ bandwidth, knee = the smallest B at %.0f%% of peak (the seed's script 01).",
				r.Roofline.K, r.Roofline.K, r.Roofline.N, r.Roofline.DType, 100*analyze.KneeFraction))
	}
	if m != nil && m.Workload != nil && !m.Workload.FixedOutput {
		note := m.Workload.FixedOutputNote
		if note == "" {
			note = "the server did not accept min_tokens/ignore_eos"
		}
		s.Notes = append(s.Notes, "Output length was not fixed ("+note+"): requests stop at different lengths, so levels are less comparable.")
	}
	if m != nil && m.Source != nil {
		s.Sentences = append(s.Sentences, fmt.Sprintf("Imported from %s (%s, sha256 %s).", m.Source.Tool, m.Source.File, short(m.Source.SHA256)))
		for _, l := range m.Source.Lacks {
			s.Notes = append(s.Notes, "The source does not record "+l+".")
		}
	}
	if m != nil && !m.Complete {
		why := "collection did not finish"
		if m.Stopped != nil {
			why += " (" + m.Stopped.Reason + ")"
		}
		s.Notes = append(s.Notes, "The run is incomplete: "+why+". Numbers cover what was measured before it stopped.")
	}
	if m != nil {
		s.Notes = append(s.Notes, m.Notes...)
	}
	s.Notes = append(s.Notes, "A benchmark is a snapshot of a configuration: results hold for this model, card, driver, "+
		"engine version and flags only.")
	return s
}

// filesSection lists the run's raw data, so a reader can check any number.
func filesSection(id string, r *analyze.RunAnalysis) section {
	s := section{
		ID:    id,
		Title: "Raw data",
		Read: "The run directory holds every measurement this report was made from: manifest.json and one folder " +
			"of Parquet files per table, readable with DuckDB, pandas or Polars (see docs/run-format.md).",
	}
	s.Sentences = append(s.Sentences, "Run directory: "+r.Dir)
	var tables []string
	if r.Manifest != nil {
		for _, k := range r.Manifest.Kinds {
			switch k {
			case rundir.KindProbe:
				tables = append(tables, rundir.TableProbeGEMM, rundir.TableProbeBandwidth)
			case rundir.KindSweep:
				tables = append(tables, rundir.TableLevels, rundir.TableRequests, rundir.TableTokens)
			}
		}
	}
	for _, t := range tables {
		s.Files = append(s.Files, file{Path: t + "/", What: "Parquet table " + t})
	}
	return s
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
