package render

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/rundir"
)

// runFactsSection opens the details of a run that is not page one's: its
// figures as cards.
func runFactsSection(id string, rep *analyze.Report, r *analyze.RunAnalysis) section {
	return section{ID: id, Title: "In short", Facts: headlineFacts(rep, r)}
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

// costFact is a run's cost card: the blended cost per million tokens at
// its honest operating point (the SLO's when given, else the peak), with
// the API price it is quoted against, in the same unit.
func costFact(rep *analyze.Report, r *analyze.RunAnalysis) fact {
	const label = "Cost per million tokens (prompt + output)"
	c := r.Sweep.Cost
	if c == nil {
		return fact{Label: label, Value: "not computed: give a GPU price (--gpu-hour-usd or --gpu-preset)", Missing: true}
	}
	if len(c.Points) == 0 {
		return fact{Label: label, Value: "not computed: " + strings.Join(costNeeds(c.Missing), "; "), Missing: true}
	}
	p := honestPoint(c)
	f := fact{Label: label, Note: "at the " + p.Name}
	if p.USDPerMTokBlended > 0 {
		f.Value = usd(p.USDPerMTokBlended)
	} else {
		f.Label = "Cost per million output tokens"
		f.Value = usd(p.USDPerMTokOutput)
	}
	if a := p.Nearest; a != nil {
		f.Note += fmt.Sprintf("; API %s (%s, %s)", usd(a.APIUSDPerMTokBlended), a.API.Provider, priceSource(a.API))
		f.Link = a.API.SourceURL
	} else if len(p.Comparisons) > 0 {
		f.Note += "; no API price for this model or its size in the price table"
	}
	return f
}

// priceSource is a price's date and how sure its source is.
func priceSource(a analyze.APIPrice) string {
	if a.Verified {
		return a.Date
	}
	return a.Date + ", secondary source"
}

// honestPoint is the cost point a run is quoted at: the SLO operating
// point when there is one, else the peak.
func honestPoint(c *analyze.Cost) analyze.CostPoint {
	p := c.Points[len(c.Points)-1]
	for _, q := range c.Points {
		if q.Name == analyze.CostSLO {
			p = q
		}
	}
	return p
}

// apiWords names an API price with how it relates to the run's model, its
// date and how sure its source is: "Llama 3.1 8B Instant on Groq (same
// model; price of 2025-01-01, secondary source)".
func apiWords(a analyze.PriceComparison) string {
	var how []string
	switch a.Match {
	case analyze.MatchSameModel:
		how = append(how, "same model")
	case analyze.MatchNearestParams:
		how = append(how, "nearest API model by active parameters, "+sig(a.ParamsRatio)+"× this model's")
	default:
		how = append(how, "another model")
	}
	how = append(how, "price of "+a.API.Date)
	if !a.API.Verified {
		how = append(how, "secondary source")
	}
	return fmt.Sprintf("%s on %s (%s)", a.API.Model, a.API.Provider, strings.Join(how, "; "))
}

// costSentence is the fourth sentence of the answer: what a million
// tokens cost, against the nearest API price.
func costSentence(rep *analyze.Report, r *analyze.RunAnalysis) string {
	c := r.Sweep.Cost
	if c == nil {
		return "The cost per million tokens is not computed: give a GPU price (--gpu-hour-usd, or --gpu-preset with a name from headroom prices)."
	}
	if len(c.Points) == 0 {
		return sentence("The cost per million tokens is not computed: " + strings.Join(costNeeds(c.Missing), "; "))
	}
	p := honestPoint(c)
	cost, unit := p.USDPerMTokBlended, "prompt and output tokens together"
	if cost <= 0 {
		cost, unit = p.USDPerMTokOutput, "output tokens"
	}
	s := fmt.Sprintf("At the %s a million tokens cost %s (%s)", p.Name, usd(cost), unit)
	if a := p.Nearest; a != nil {
		s += fmt.Sprintf(", against %s for %s: self-hosting is %s", usd(a.APIUSDPerMTokBlended), apiWords(*a), cheaper(a.CheaperFactor))
	} else if len(p.Comparisons) > 0 {
		s += "; the price table has no API price for this model or its size"
	}
	return s + "."
}

// contextLine is a run's context in one line: model, quantization (else
// dtype), engine and version, GPU, date.
func contextLine(r *analyze.RunAnalysis, rl *analyze.Roofline) string {
	get := func(key string) string { return contextValueOf(r, key) }
	var parts []string
	if m := get(analyze.CtxModel); m != "" {
		parts = append(parts, m)
	}
	if q := get(analyze.CtxQuantization); q != "" && q != "none" {
		parts = append(parts, q)
	} else if d := get(analyze.CtxDType); d != "" {
		parts = append(parts, d)
	}
	if e := get(analyze.CtxEngine); e != "" {
		parts = append(parts, strings.TrimSpace(e+" "+get(analyze.CtxEngineVersion)))
	}
	gpu := ""
	if m := r.Manifest; m != nil && len(m.GPUs) > 0 {
		gpu = m.GPUs[0].Name
		if len(m.GPUs) > 1 {
			gpu = fmt.Sprintf("%d× %s", len(m.GPUs), gpu)
		}
	} else if rl != nil && rl.GPU != "" {
		gpu = rl.GPU
	} else if r.Sweep != nil && r.Sweep.Cost != nil && r.Sweep.Cost.Basis == analyze.CostPerHost {
		gpu = "no GPU"
	}
	if gpu != "" {
		parts = append(parts, gpu)
	}
	if d := get(analyze.CtxDate); d != "" {
		parts = append(parts, d)
	}
	return strings.Join(parts, " · ")
}

// appendixSections are the reference parts: the probe (once per probe
// run), the runs' context side by side, the method, the raw data.
func appendixSections(rep *analyze.Report) []section {
	var out []section
	for i := range rep.Runs {
		if rl := rep.Runs[i].Roofline; rl != nil {
			out = append(out, probeSection(fmt.Sprintf("run%d-probe", i+1), &rep.Runs[i], rl, len(rep.Runs) > 1))
		}
	}
	out = append(out, contextSection("context", rep), methodologySection("methodology", rep), filesSection("files", rep))
	return out
}

// contextSection is every run's full context: what the runs share once,
// then what differs, one column per run. Every number in the report holds
// for this configuration only.
func contextSection(id string, rep *analyze.Report) section {
	s := section{
		ID:    id,
		Title: "Run context",
		Read:  "Every number in this report holds for this configuration only; change any of it and measure again.",
	}
	var labels []string
	values := map[string][]string{}
	for i := range rep.Runs {
		r := &rep.Runs[i]
		for _, c := range r.Context {
			label := contextLabel(c)
			if _, ok := values[label]; !ok {
				labels = append(labels, label)
				values[label] = make([]string, len(rep.Runs))
			}
			values[label][i] = contextValue(c)
		}
		if len(r.Missing) > 0 {
			what := "The run lacks"
			if len(rep.Runs) > 1 {
				what = fmt.Sprintf("Run %d lacks", i+1)
			}
			s.Notes = append(s.Notes, fmt.Sprintf("%s: %s. Numbers above lack it; record it in the next run.", what, strings.Join(missingLabels(r.Missing), ", ")))
		}
	}
	shared := table{Head: []string{"", ""}}
	if len(rep.Runs) > 1 {
		shared = table{Caption: "The same in every run that records it.", Head: []string{"", "Value", "Runs"}}
	}
	differs := table{Caption: "Different between the runs.", Head: []string{""}}
	for i := range rep.Runs {
		differs.Head = append(differs.Head, fmt.Sprintf("Run %d", i+1))
	}
	for _, l := range labels {
		var runs []string
		v, same := "", true
		for i, x := range values[l] {
			if x == "" {
				continue
			}
			runs = append(runs, fmt.Sprint(i+1))
			if v != "" && x != v {
				same = false
			}
			v = x
		}
		switch {
		case len(rep.Runs) == 1:
			shared.Rows = append(shared.Rows, []string{l, v})
		case same:
			who := "all"
			if len(runs) < len(rep.Runs) {
				who = strings.Join(runs, ", ")
			}
			shared.Rows = append(shared.Rows, []string{l, v, who})
		default:
			differs.Rows = append(differs.Rows, append([]string{l}, values[l]...))
		}
	}
	if len(shared.Rows) > 0 {
		s.Tables = append(s.Tables, splitRows(shared, 10)...)
	}
	if len(differs.Rows) > 0 {
		s.Tables = append(s.Tables, differs)
	}
	return s
}

// methodologySection says once how the numbers were made and what limits
// them.
func methodologySection(id string, rep *analyze.Report) section {
	s := section{ID: id, Title: "Methodology and caveats"}
	set := rep.Settings
	var sweep *analyze.SweepAnalysis
	var rl *analyze.Roofline
	for i := range rep.Runs {
		if sweep == nil {
			sweep = rep.Runs[i].Sweep
		}
		if rl == nil {
			rl = rep.Runs[i].Roofline
		}
	}
	if sweep != nil {
		imported := false
		for i := range rep.Runs {
			imported = imported || (rep.Runs[i].Sweep != nil && rep.Runs[i].Sweep.Source == analyze.SourceLevelStats)
		}
		src := "per-request timings (requests and tokens tables)"
		if imported {
			src += "; an imported run has per-level statistics only, so its intervals, ITL and per-request goodput are missing"
		}
		s.Sentences = append(s.Sentences,
			"Sweep statistics come from "+src+". Warm-up requests of every level are excluded; latencies are over successful requests.",
			"Percentiles: "+orText(rep.PercentileMethod, "not stated")+percentilesOfImports(rep)+". TTFT is send to first non-empty chunk; TPOT is (end − first token) ÷ (output tokens − 1); ITL is the gap between chunks.",
			fmt.Sprintf("Knees: the TPOT knee is the first level whose p50 TPOT exceeds %s× its value at the lowest level; throughput has plateaued when later levels gain less than %s per doubling of concurrency; a level with more than %s failed requests is not sustained.",
				sig(set.TPOTKneeFactor), percent(set.PlateauGainPerDoubling), percent(set.MaxErrorFraction)))
		if set.Confidence > 0 {
			s.Sentences = append(s.Sentences, fmt.Sprintf("Intervals are %s bootstrap intervals (%d resamples, seed %d), so the same run gives the same report.",
				percent(set.Confidence), set.BootstrapResamples, set.BootstrapSeed))
		}
	}
	if rl != nil {
		s.Sentences = append(s.Sentences,
			fmt.Sprintf("Roofline: one GEMM shape, (B,%d) @ (%d,%d) in %s, swept over B; intensity = 2·B·K·N ÷ bytes moved, "+
				"which is about B while the weights dominate the bytes. Peak is the best measured GEMM, bandwidth the best "+
				"measured copy, ridge = peak ÷ bandwidth, knee = the smallest B at %.0f%% of peak.",
				rl.K, rl.K, rl.N, rl.DType, 100*analyze.KneeFraction))
	}
	var noteOrder []string
	noteRuns := map[string][]string{}
	for i := range rep.Runs {
		r := &rep.Runs[i]
		var notes []string
		if r.Sweep != nil {
			notes = append(notes, notesWhere(r.Sweep.Notes, func(n analyze.Note) bool { return !unavailable(n) })...)
		}
		if m := r.Manifest; m != nil {
			if m.Source != nil {
				notes = append(notes, fmt.Sprintf("Imported from %s (%s, sha256 %s).", m.Source.Tool, m.Source.File, short(m.Source.SHA256)))
				for _, l := range m.Source.Lacks {
					notes = append(notes, "The source does not record "+l+".")
				}
			}
			if !m.Complete {
				why := "collection did not finish"
				if m.Stopped != nil {
					why += " (" + m.Stopped.Reason + ")"
				}
				notes = append(notes, "The run is incomplete: "+why+". Numbers cover what was measured before it stopped.")
			}
			notes = append(notes, sentences(m.Notes)...)
		}
		for _, n := range notes {
			if _, ok := noteRuns[n]; !ok {
				noteOrder = append(noteOrder, n)
			}
			noteRuns[n] = append(noteRuns[n], fmt.Sprint(i+1))
		}
	}
	// A note several runs share is said once, naming them.
	for _, n := range noteOrder {
		switch runs := noteRuns[n]; {
		case len(rep.Runs) == 1:
			s.Notes = append(s.Notes, n)
		case len(runs) == 1:
			s.Notes = append(s.Notes, "Run "+runs[0]+": "+n)
		default:
			s.Notes = append(s.Notes, "Runs "+strings.Join(runs, ", ")+": "+n)
		}
	}
	s.Notes = append(s.Notes, "A benchmark is a snapshot of a configuration: results hold for this model, card, driver, "+
		"engine version and flags only.")
	return s
}

// filesSection lists each run's raw data, one row per table, so a reader
// can check any number.
func filesSection(id string, rep *analyze.Report) section {
	s := section{
		ID:    id,
		Title: "Raw data",
		Read: "Each run directory holds every measurement this report was made from: manifest.json and one folder " +
			"of Parquet files per table, readable with DuckDB, pandas or Polars (see docs/run-format.md).",
	}
	t := table{Caption: "One row per table (a folder of Parquet files) or file; the count of files in each run.", Head: []string{"File or table", "What it holds"}, Right: []bool{false, false}}
	var order []string
	rows := map[string][]string{}
	for i := range rep.Runs {
		r := &rep.Runs[i]
		if len(rep.Runs) > 1 {
			s.Sentences = append(s.Sentences, fmt.Sprintf("Run %d: %s", i+1, r.Dir))
			t.Head, t.Right = append(t.Head, fmt.Sprintf("Run %d", i+1)), append(t.Right, true)
		} else {
			s.Sentences = append(s.Sentences, "Run directory: "+r.Dir)
			t.Head, t.Right = append(t.Head, "Files"), append(t.Right, true)
		}
		for _, e := range inventory(r.Files) {
			if _, ok := rows[e.name]; !ok {
				order = append(order, e.name)
				rows[e.name] = append([]string{e.name, e.what}, slices.Repeat([]string{"–"}, len(rep.Runs))...)
			}
			rows[e.name][2+i] = integer(e.files)
		}
	}
	if len(order) == 0 {
		s.Notes = append(s.Notes, "The analysis did not list the runs' files.")
		return s
	}
	for _, name := range order {
		t.Rows = append(t.Rows, rows[name])
	}
	s.Tables = append(s.Tables, t)
	return s
}

// inventoryRow is one table (a folder of Parquet parts) or one file of a
// run directory.
type inventoryRow struct {
	name, what string
	files      int
}

// inventory groups a run's files by table, in the order they come.
func inventory(files []string) []inventoryRow {
	var out []inventoryRow
	at := map[string]int{}
	for _, f := range files {
		dir, _, nested := strings.Cut(filepath.ToSlash(f), "/")
		name := f
		if nested {
			name = dir + "/"
		}
		if i, ok := at[name]; ok {
			out[i].files++
			continue
		}
		at[name] = len(out)
		out = append(out, inventoryRow{name: name, what: fileWhat(f), files: 1})
	}
	return out
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
	rundir.TableProbeModelGEMM: "probe: the model's decode GEMMs, per batch",
	rundir.TableLevels:         "sweep: one row per load level",
	rundir.TableRequests:       "sweep: one row per request",
	rundir.TableTokens:         "sweep: one row per streamed chunk",
	rundir.TableServerMetrics:  "sweep: scraped /metrics samples",
	rundir.TableGPUTelemetry:   "sweep: NVML samples",
	rundir.TableClientSamples:  "sweep: the load generator's self-check",
	rundir.TableServerLogLines: "sweep: receive time of each server.log line",
	rundir.TableLevelStats:     "imported per-level statistics",
	rundir.TableServerCPU:      "sweep: the server process's CPU, per thread",
	rundir.TableCPUEnergy:      "sweep: the host's RAPL energy counters",
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// trimFloat formats a percentile without trailing zeros: 99, 99.9.
func trimFloat(v float64) string {
	s := fmt.Sprintf("%.3f", v)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// percentilesOfImports adds, when a run's percentiles are an imported
// tool's own, that its tables name their method instead.
func percentilesOfImports(rep *analyze.Report) string {
	for i := range rep.Runs {
		if sw := rep.Runs[i].Sweep; sw != nil && sourceMethod(sw) != "" {
			return "; an imported run's percentiles are its tool's, as its latency table says"
		}
	}
	return ""
}
