package render

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/rundir"
)

// headlineSection is what gets forwarded: the verdict in one sentence,
// then the numbers a reader needs first, each either measured or saying
// why not.
func headlineSection(id string, rep *analyze.Report, r *analyze.RunAnalysis) section {
	s := section{ID: id, Title: "Headline"}
	missing := func(label, why string) fact { return fact{Label: label, Value: why, Missing: true} }
	if sw := r.Sweep; sw == nil {
		why := "not measured: no load sweep in this run"
		s.Facts = []fact{missing("Peak sustained throughput", why), missing("Operating point", why),
			missing("Wall hit", why), missing("Cost per million tokens", why)}
	} else {
		k, a, d, op := sw.Knees, axisOf(sw), sw.Diagnosis, sw.Operating
		s.Sentences = []string{headlineSentence(d, op)}
		s.Facts = append(s.Facts, fact{Label: "Wall hit", Value: wallAt(d.Primary),
			Note: "confidence " + nameOr(confidenceNames, d.Confidence.Level) + ": " + confidenceNote(d.Confidence) + "; the diagnosis below gives the evidence"})
		for _, w := range d.Secondary {
			s.Facts = append(s.Facts, fact{Label: "Then", Value: wallAt(w)})
		}
		if op.At.Valid() {
			note := "the largest load inside the SLO with every lower load inside it too"
			if op.SLOSource == analyze.SLODefault {
				note += "; the SLO is the default (" + sloText(op.SLO) + "): give --slo for your own"
			} else {
				note += " (" + sloText(op.SLO) + ")"
			}
			if !op.Reliable {
				note += "; its p99s rest on fewer than 100 requests per level, so they are the largest values seen"
			}
			s.Facts = append(s.Facts, fact{Label: "Operating point", Value: pointValue(op.At), Note: note})
		} else {
			s.Facts = append(s.Facts, missing("Operating point", strings.TrimPrefix(operatingText(op), "no level")))
		}
		if op.FreeTo.Valid() {
			s.Facts = append(s.Facts, fact{Label: "Free concurrency", Value: "up to " + pointValue(op.FreeTo),
				Note: fmt.Sprintf("p50 TPOT stays within %s× of its %s value there: extra requests cost almost no per-token latency", sig(k.TPOTKneeFactor), pointName(baselinePoint(sw)))})
		}
		if k.PeakLevel >= 0 && k.PeakOutputTokPerS > 0 {
			note := "output tokens, at " + a.name(k.PeakConcurrency, k.PeakRateRPS)
			for _, l := range sw.Levels {
				if l.LevelIndex == k.PeakLevel && l.Errors > 0 {
					// within the error limit, but not clean: say so
					note += fmt.Sprintf("; %s of its %s requests failed (%s)", integer(l.Errors), integer(l.Requests), percent(l.ErrorFraction))
				}
			}
			s.Facts = append(s.Facts, fact{Label: "Peak sustained throughput", Value: tokPerS(k.PeakOutputTokPerS), Note: note})
		} else {
			s.Facts = append(s.Facts, missing("Peak sustained throughput", "no level finished within the error limit"))
		}
		s.Facts = append(s.Facts, costFact(rep, r))
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

// pointValue is a load on its own, with its unit: "8 concurrent requests"
// or "4 req/s".
func pointValue(p analyze.LoadPoint) string {
	if p.Axis == analyze.AxisRate {
		return sig(p.RateRPS) + " req/s"
	}
	if p.Concurrency == 1 {
		return "1 concurrent request"
	}
	return integer(p.Concurrency) + " concurrent requests"
}

// baselinePoint is the level TPOT is compared with.
func baselinePoint(sw *analyze.SweepAnalysis) analyze.LoadPoint {
	if l := levelByIndex(sw, sw.Knees.BaselineLevel); l != nil {
		return analyze.LoadPoint{LevelIndex: l.LevelIndex, Axis: sw.Knees.Axis, Concurrency: l.Concurrency, RateRPS: l.RateRPS}
	}
	return analyze.LoadPoint{LevelIndex: -1, Axis: sw.Knees.Axis}
}

// costFact is the headline's cost: the analyzer's headline figure when it
// is about this run, else this run's honest operating point.
func costFact(rep *analyze.Report, r *analyze.RunAnalysis) fact {
	const label = "Cost per million tokens"
	if h := rep.Headline; h != nil && (h.Run == r.Dir || h.Run == runLabel(r)) {
		if h.USDPerMTokOutput <= 0 {
			return fact{Label: label, Value: orText(h.CostMissing, "not computed"), Missing: true}
		}
		f := fact{Label: label, Value: usd(h.USDPerMTokOutput) + " per Mtok output", Note: "at the " + h.CostPoint}
		if a := h.NearestAPI; a != nil {
			f.Note += apiNote(*a)
		}
		return f
	}
	c := r.Sweep.Cost
	if c == nil || len(c.Points) == 0 {
		return fact{Label: label, Value: "not computed: give --gpu-hour-usd (and --kwh-usd)", Missing: true}
	}
	p := c.Points[len(c.Points)-1]
	for _, q := range c.Points {
		if q.Name == analyze.CostSLO {
			p = q
		}
	}
	f := fact{Label: label, Value: usd(p.USDPerMTokOutput) + " per Mtok output", Note: "at the " + p.Name}
	if len(p.Comparisons) > 0 {
		f.Note += apiNote(p.Comparisons[0])
	}
	return f
}

// apiNote puts the nearest API price next to the headline cost, on the
// comparison's own basis.
func apiNote(a analyze.PriceComparison) string {
	return fmt.Sprintf("; on a %s basis %s against %s %s at %s (price of %s): self-hosting is %s",
		orText(a.Basis, "like-for-like"), usd(a.SelfUSDPerMTok), a.API.Provider, a.API.Model, usd(a.APIUSDPerMTokBlended), a.API.Date, cheaper(a.CheaperFactor))
}

// summarySection holds the four sentences on the shape of the throughput
// curve that the seed says to publish, written from the analyzer's numbers.
func summarySection(id string, r *analyze.RunAnalysis) section {
	s := section{ID: id, Title: "The throughput curve in four sentences"}
	switch {
	case r.Sweep == nil:
		s.Missing = noSweep("throughput curve to describe")
	case len(r.Sweep.Levels) == 0:
		s.Missing = "The sweep has too few levels to describe the curve's shape."
	default:
		s.Sentences = shapeSentences(r.Sweep)
	}
	return s
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
		v := c.Value
		if c.Source != "" {
			// Not from the manifest: say where, so the reader can check it.
			v += " (from " + c.Source + ")"
		}
		t.Rows = append(t.Rows, []string{c.Label, v})
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
func methodologySection(id string, rep *analyze.Report, r *analyze.RunAnalysis) section {
	s := section{ID: id, Title: "Methodology and caveats"}
	m := r.Manifest
	if sw := r.Sweep; sw != nil {
		set := rep.Settings
		src := "per-request timings (requests and tokens tables)"
		if sw.Source == analyze.SourceLevelStats {
			src = "per-level statistics imported from another tool; there are no per-request timings, so intervals, ITL and per-request goodput are missing"
		}
		s.Sentences = append(s.Sentences,
			"Sweep statistics come from "+src+". Warm-up requests of every level are excluded; latencies are over successful requests.",
			"Percentiles: "+orText(rep.PercentileMethod, "not stated")+". TTFT is send to first non-empty chunk; TPOT is (end − first token) ÷ (output tokens − 1); ITL is the gap between chunks.",
			fmt.Sprintf("Knees: the TPOT knee is the first level whose p50 TPOT exceeds %s× its value at the lowest level; throughput has plateaued when later levels gain less than %s per doubling of concurrency; a level with more than %s failed requests is not sustained.",
				sig(set.TPOTKneeFactor), percent(set.PlateauGainPerDoubling), percent(set.MaxErrorFraction)))
		if set.Confidence > 0 {
			s.Sentences = append(s.Sentences, fmt.Sprintf("Intervals are %s bootstrap intervals (%d resamples, seed %d), so the same run gives the same report.",
				percent(set.Confidence), set.BootstrapResamples, set.BootstrapSeed))
		}
		s.Notes = append(s.Notes, sentences(sw.Warnings)...)
	}
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
	for _, f := range r.Files {
		s.Files = append(s.Files, file{Path: f, What: fileWhat(f)})
	}
	if len(s.Files) == 0 {
		s.Notes = append(s.Notes, "The analysis did not list the run's files.")
	}
	return s
}

// fileWhat says what a file of a run directory holds.
func fileWhat(path string) string {
	dir, _, nested := strings.Cut(filepath.ToSlash(path), "/")
	switch {
	case path == rundir.ManifestFile:
		return "what was measured, on what, with which settings"
	case path == "server.log":
		return "the server's log, as captured"
	case nested && tableNames[dir] != "":
		return tableNames[dir]
	case strings.HasPrefix(path, "report.") || path == "analysis.json":
		return "this report"
	}
	return ""
}

var tableNames = map[string]string{
	rundir.TableProbeGEMM:      "probe: one row per GEMM shape",
	rundir.TableProbeBandwidth: "probe: bandwidth measurements",
	rundir.TableLevels:         "sweep: one row per load level",
	rundir.TableRequests:       "sweep: one row per request",
	rundir.TableTokens:         "sweep: one row per streamed chunk",
	rundir.TableServerMetrics:  "sweep: scraped /metrics samples",
	rundir.TableGPUTelemetry:   "sweep: NVML samples",
	rundir.TableClientSamples:  "sweep: the load generator's self-check",
	rundir.TableServerLogLines: "sweep: receive time of each server.log line",
	rundir.TableLevelStats:     "imported per-level statistics",
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
