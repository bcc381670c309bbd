// Package compare turns many run directories into one comparison: the
// headline numbers of each run, overlaid curves, what differs in their
// context, and whether differences between groups of runs (labels, tags,
// engine versions, ...) are larger than chance. It is pure like package
// analyze: runs in, a plain model out (rendered by package render and
// written as comparison.json), no printing. It uses analyze for every
// per-run number and stats for every test, so a number in a
// comparison is the number `headroom report` shows for the same run.
package compare

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/internal/buildinfo"
	"github.com/headroom-llm/headroom/internal/uniq"
	"github.com/headroom-llm/headroom/rundir"
	"github.com/headroom-llm/headroom/stats"
)

// Options are the comparison settings.
type Options struct {
	// GroupBy is the key runs are grouped by (see groupValue): "label" by
	// default. Runs in one group are repeats of one configuration.
	GroupBy string
	// Baseline lists run directories that form the baseline group; empty
	// means the first group is the baseline.
	Baseline []string
	// Settings are the analysis settings of every run (SLO, cost inputs,
	// thresholds); their bootstrap settings drive the two-sample intervals.
	Settings analyze.Settings
	// Alpha is the significance level of every test (0.05 by default).
	Alpha float64
	// Rules, when given, are the regression gate.
	Rules []Rule
	// GateNeedsSignificance makes a rule fail only when its change is
	// also significant at Alpha (when a test can be made).
	GateNeedsSignificance bool
	// Cache, when set, keeps each run's summary between comparisons
	// (CompareDirs and Index): see SummaryCache.
	Cache SummaryCache
	// AllowDiffer lists keys of MustMatch that may differ between the
	// groups compared besides GroupBy (e.g. engine.name, to compare two
	// engines grouped by label).
	AllowDiffer []string
}

// DefaultOptions are the options of `headroom compare` without flags.
func DefaultOptions() Options {
	return Options{GroupBy: "label", Settings: analyze.Default(), Alpha: 0.05}
}

// Comparison is the comparison model: what the renderer shows and what
// comparison.json holds. Units are in field names, as in analyze.Report.
type Comparison struct {
	Title            string    `json:"title"`
	GeneratedAt      time.Time `json:"generated_at"`
	HeadroomVersion  string    `json:"headroom_version"`
	GroupBy          string    `json:"group_by"`
	Alpha            float64   `json:"alpha"`
	PercentileMethod string    `json:"percentile_method"`
	// SLO is the SLO goodput was judged against, nil when none was given.
	SLO  *analyze.SLO `json:"slo,omitempty"`
	Runs []Run        `json:"runs"`
	// LeftOut are the runs that failed or measured nothing: listed apart,
	// with why, and in no group.
	LeftOut []LeftOut `json:"left_out,omitempty"`
	// Groups are the runs grouped by GroupBy, the baseline first.
	Groups []Group `json:"groups"`
	// Contexts diffs the runs' context: one diff of the sweeps and one of
	// the probe-only runs (a probe has no engine or workload, so diffing it
	// with a sweep would list every key).
	Contexts    []ContextDiff     `json:"contexts"`
	Comparisons []GroupComparison `json:"comparisons,omitempty"`
	Gate        *Gate             `json:"gate,omitempty"`
	// Pareto is every run's levels on one Pareto chart (output tok/s per
	// GPU against tok/s per user), the frontier marked across the runs.
	Pareto   []analyze.ParetoPoint `json:"pareto,omitempty"`
	Warnings []Warning             `json:"warnings,omitempty"`

	manifests map[string]*rundir.Manifest // by run directory, for the index
}

// Warning is something about the comparison as a whole that its reader
// must know: a Warn* kind and what it is about.
type Warning struct {
	Kind  string `json:"kind"`
	Dir   string `json:"dir,omitempty"`   // WarnIncomplete: the run
	Count int    `json:"count,omitempty"` // WarnNonFinite: how many values
}

// Warning kinds.
const (
	// WarnIncomplete: a run's collector was interrupted; its numbers cover
	// only what it measured.
	WarnIncomplete = "incomplete"
	// WarnNonFinite: values computed were not finite (an overflow) and are
	// 0 or left out.
	WarnNonFinite = "non_finite"
)

func (c *Comparison) manifest(dir string) *rundir.Manifest {
	if m := c.manifests[dir]; m != nil {
		return m
	}
	return &rundir.Manifest{}
}

// Run is one run's summary.
type Run struct {
	Dir string `json:"dir"`
	// Label is the manifest's label, else the directory's name, with as
	// many parent directories as tell it from the other runs' labels
	// ("h200/probe" and "h200-1b/probe").
	Label    string    `json:"label"`
	Tags     []string  `json:"tags,omitempty"`
	Group    string    `json:"group"`
	Kinds    []string  `json:"kinds"`
	Complete bool      `json:"complete"`
	Start    time.Time `json:"start_time"`
	End      time.Time `json:"end_time,omitzero"`
	// DurationS is how long the measurement took, end minus start; 0
	// unknown. (Not the wall the run hit: that is Sweep.Wall.)
	DurationS float64 `json:"duration_s"`
	// Context in short, for tables: the GPU and how many, driver,
	// engine ("vllm 0.11.0"), model, quantization, and the tool an
	// imported run came from with what it lacks.
	GPUName      string   `json:"gpu_name,omitempty"`
	GPUCount     int      `json:"gpu_count,omitempty"`
	Driver       string   `json:"driver,omitempty"`
	Engine       string   `json:"engine,omitempty"`
	EngineName   string   `json:"engine_name,omitempty"`
	EngineVer    string   `json:"engine_version,omitempty"`
	Model        string   `json:"model,omitempty"`
	Quantization string   `json:"quantization,omitempty"`
	Mode         string   `json:"mode,omitempty"`
	SourceTool   string   `json:"source_tool,omitempty"`
	Lacks        []string `json:"lacks,omitempty"`
	// Sweep holds the headline numbers; nil for a probe-only run.
	Sweep *SweepSummary `json:"sweep,omitempty"`
	// Roofline is the run's probe, nil when it has none.
	Roofline *analyze.Roofline `json:"roofline,omitempty"`
	Warnings []string          `json:"warnings,omitempty"`

	samples []analyze.LevelSamples
}

// SweepSummary is what the headline table shows of a sweep. Zero means
// "not available"; the *Missing fields say why.
type SweepSummary struct {
	Source            string          `json:"source"` // requests or level_stats
	Axis              string          `json:"axis"`   // concurrency or rate_rps
	PeakOutputTokPerS float64         `json:"peak_output_tok_per_s"`
	PeakLoad          analyze.LoadKey `json:"peak_load,omitzero"`
	PeakConcurrency   int             `json:"peak_concurrency"`
	// TPOTKnee is the first level whose p50 TPOT exceeds the knee factor
	// times the baseline; zero when the sweep did not reach it.
	TPOTKnee            analyze.LoadKey `json:"tpot_knee,omitzero"`
	TPOTKneeConcurrency int             `json:"tpot_knee_concurrency"`
	Plateau             analyze.LoadKey `json:"plateau,omitzero"`
	PlateauConcurrency  int             `json:"plateau_concurrency"`
	Recommended         analyze.LoadKey `json:"recommended,omitzero"`
	RecommendedConc     int             `json:"recommended_concurrency"`
	BaselineTPOTP50S    float64         `json:"baseline_tpot_p50_s"`
	// SLO goodput: the output throughput of the highest level inside the
	// SLO (when one was given).
	SLOOutputTokPerS float64         `json:"slo_output_tok_per_s"`
	SLOLoad          analyze.LoadKey `json:"slo_load,omitzero"`
	SLOMissing       string          `json:"slo_missing,omitempty"` // an SLOMissing* value
	// Cost at the honest operating point (the SLO's, else the peak).
	USDPerMTokOutput float64  `json:"usd_per_mtok_output"`
	CostPoint        string   `json:"cost_point,omitempty"`
	CostMissing      []string `json:"cost_missing,omitempty"` // analyze.CostNeeds* codes
	// Wall is the diagnosis' primary wall (an analyze.Wall* value) and
	// WallAt the level it is first seen at.
	Wall   string          `json:"wall,omitempty"`
	WallAt analyze.LoadKey `json:"wall_at,omitzero"`
	// Then are the secondary walls, in order of load, with their levels.
	Then     []WallAt `json:"then,omitempty"`
	Requests int      `json:"requests"`
	Errors   int      `json:"errors"`
	Levels   []Level  `json:"levels"`
	// Pareto is the run's own Pareto view (analyze.SweepAnalysis.Pareto).
	Pareto *analyze.Pareto `json:"pareto,omitempty"`
}

// Why a run has no SLO goodput (SweepSummary.SLOMissing).
const (
	SLOMissingNoSLO   = "no_slo"      // no SLO was given (--slo)
	SLOMissingNoLevel = "no_level_in" // no level met the SLO
)

// WallAt is a wall (an analyze.Wall* value) and the level it is first
// seen at.
type WallAt struct {
	Wall string          `json:"wall"`
	At   analyze.LoadKey `json:"at"`
}

// Level is one load level of a run, for the overlaid panels and the gate.
type Level struct {
	Load          analyze.LoadKey `json:"load"`
	Concurrency   int             `json:"concurrency"`
	RateRPS       float64         `json:"rate_rps,omitempty"`
	Requests      int             `json:"requests"`
	Errors        int             `json:"errors"`
	OutputTokPerS float64         `json:"output_tok_per_s"`
	TTFTP50S      float64         `json:"ttft_p50_s"`
	TTFTP99S      float64         `json:"ttft_p99_s"`
	TPOTP50S      float64         `json:"tpot_p50_s"`
	TPOTP99S      float64         `json:"tpot_p99_s"`
	E2EP50S       float64         `json:"e2e_p50_s"`
	E2EP99S       float64         `json:"e2e_p99_s"`
}

// ContextDiff is the diff of the context of a set of runs of one kind:
// the keys whose values are not the same for all of them (Differs, one
// value per run of Runs) and those they share (Same, one value).
type ContextDiff struct {
	Kind    string    `json:"kind"` // "sweep" or "probe"
	Runs    []int     `json:"runs"` // indexes into Comparison.Runs
	Differs []DiffRow `json:"differs"`
	Same    []DiffRow `json:"same"`
}

func contextDiffs(c *Comparison, ms []*rundir.Manifest) []ContextDiff {
	var out []ContextDiff
	for _, kind := range []string{"sweep", "probe"} {
		d := ContextDiff{Kind: kind}
		var sub []*rundir.Manifest
		for i, r := range c.Runs {
			if (r.Sweep != nil) == (kind == "sweep") {
				d.Runs = append(d.Runs, i)
				sub = append(sub, ms[i])
			}
		}
		if len(sub) == 0 {
			continue
		}
		d.Differs, d.Same = diffManifests(sub)
		out = append(out, d)
	}
	return out
}

// Group is a set of runs with the same GroupBy value.
type Group struct {
	Name     string `json:"name"`
	Runs     []int  `json:"runs"` // indexes into Comparison.Runs
	Baseline bool   `json:"baseline"`
}

// Compare summarises the runs and compares their groups.
func Compare(ctx context.Context, runs []*analyze.Run, opts Options) (*Comparison, error) {
	sums := make([]Run, len(runs))
	per := perRunSettings(opts)
	err := parallel(ctx, len(runs), func(i int) error {
		s, err := summarize(runs[i], per)
		if err != nil {
			return fmt.Errorf("%s: %w", runs[i].Dir, err)
		}
		sums[i] = s
		return nil
	})
	if err != nil {
		return nil, err
	}
	return compareSummaries(runs, sums, opts)
}

// CompareDirs loads and summarises each run (local or in object storage)
// on every CPU (remoteWorkers at once for runs in object storage) and
// keeps only its summary and manifest, so memory follows
// the number of runs, not the size of their tables; then it compares them
// as Compare does. labels, keyed by run directory, rename runs for this
// comparison.
func CompareDirs(ctx context.Context, dirs []rundir.Dir, labels map[string]string, opts Options) (*Comparison, error) {
	runs := make([]*analyze.Run, len(dirs))
	sums := make([]Run, len(dirs))
	per := perRunSettings(opts)
	perJSON, err := settingsJSON(per)
	if err != nil {
		return nil, err
	}
	err = parallelOn(ctx, workersFor(dirs), len(dirs), func(i int) error {
		m, s, err := summarizeDir(dirs[i], per, perJSON, opts.Cache, labels)
		runs[i], sums[i] = &analyze.Run{Dir: dirs[i].Name, Manifest: m}, s
		return err
	})
	if err != nil {
		return nil, err
	}
	return compareSummaries(runs, sums, opts)
}

// summarizeDir is run d's summary and manifest: the run's own summary
// when it holds (and the run is not relabelled), else the cache's when it
// holds the run, else loaded and analysed (and then cached, if a cache is
// given). labels rename runs as in CompareDirs (before the analysis, as
// without a cache; the cache keys on the new name too).
func summarizeDir(d rundir.Dir, per analyze.Settings, perJSON []byte, cache SummaryCache, labels map[string]string) (*rundir.Manifest, Run, error) {
	name, relabel := labels[d.Name]
	m, s, key, ok, err := lookupSummary(d, name, !relabel, perJSON, cache)
	if err != nil {
		return nil, Run{}, err
	}
	if ok {
		if relabel {
			m.Label = name
		}
		return m, s, nil
	}
	o := loadOptions
	o.Manifest = m // read by lookupSummary (nil where the load is to read it and report on it)
	r, err := analyze.LoadFrom(d, o)
	if err != nil {
		return nil, Run{}, err
	}
	if relabel {
		r.Manifest.Label = name
	}
	s, err = summarize(r, per)
	if err != nil {
		return nil, Run{}, fmt.Errorf("%s: %w", r.Dir, err)
	}
	if key != "" {
		if err := cache.put(key, s); err != nil {
			return nil, Run{}, err
		}
	}
	return r.Manifest, s, nil
}

// perRunSettings are the settings of each run's own analysis: no
// intervals, since the comparison's statistics are its own two-sample
// tests (skipping the bootstrap keeps archives fast).
func perRunSettings(opts Options) analyze.Settings {
	per := opts.Settings
	per.BootstrapResamples = 0
	return per
}

func compareSummaries(runs []*analyze.Run, sums []Run, opts Options) (*Comparison, error) {
	if len(runs) == 0 {
		return nil, errors.New("no runs to compare")
	}
	if opts.Alpha <= 0 || opts.Alpha >= 1 {
		opts.Alpha = 0.05
	}
	if opts.GroupBy == "" {
		opts.GroupBy = "label"
	}
	c := &Comparison{
		Title:            "headroom comparison",
		GeneratedAt:      opts.Settings.Now.UTC(),
		HeadroomVersion:  buildinfo.Version(),
		GroupBy:          opts.GroupBy,
		Alpha:            opts.Alpha,
		PercentileMethod: stats.PercentileMethod,
		SLO:              opts.Settings.SLO,
		Runs:             sums,
	}
	for i, l := range defaultLabels(runs) {
		c.Runs[i].Label = l
	}
	all := make([]*rundir.Manifest, len(runs))
	c.manifests = make(map[string]*rundir.Manifest, len(runs))
	for i, r := range runs {
		all[i] = r.Manifest
		c.manifests[r.Dir] = r.Manifest
	}
	if err := checkGroupKey(opts.GroupBy, all); err != nil {
		return nil, err
	}
	// Failed and empty runs are listed apart and form no group.
	var kept []*analyze.Run
	var manifests []*rundir.Manifest
	summaries := make([]Run, 0, len(runs))
	for i, r := range runs {
		s := c.Runs[i]
		if why := unusable(s, r.Manifest); why != "" {
			l := LeftOut{Dir: s.Dir, Label: s.Label, Kinds: s.Kinds, Complete: s.Complete, Why: why, Stopped: r.Manifest.Stopped, Run: s}
			if why == LeftOutAllFailed {
				l.Requests = s.Sweep.Requests
			}
			c.LeftOut = append(c.LeftOut, l)
			continue
		}
		summaries = append(summaries, s)
		kept, manifests = append(kept, r), append(manifests, r.Manifest)
	}
	c.Runs = summaries
	if len(c.Runs) == 0 {
		return nil, &NothingToCompareError{LeftOut: c.LeftOut}
	}
	opts.Baseline = slices.DeleteFunc(slices.Clone(opts.Baseline), func(b string) bool {
		return slices.ContainsFunc(c.LeftOut, func(l LeftOut) bool { return sameDir(l.Dir, b) })
	})
	if err := group(c, kept, opts); err != nil {
		return nil, err
	}
	c.Contexts = contextDiffs(c, manifests)
	c.Pareto = paretoAcross(c.Runs)
	c.Comparisons = compareGroups(c, contextMaps(c.Runs, manifests), opts)
	if len(opts.Rules) > 0 {
		c.Gate = evaluateGate(c, opts)
	}
	for _, r := range c.Runs {
		if !r.Complete {
			c.Warnings = append(c.Warnings, Warning{Kind: WarnIncomplete, Dir: r.Dir})
		}
	}
	if n := analyze.ClearNonFinite(c); n > 0 {
		// an overflow in a ratio or a test: the comparison still stands, and says so
		c.Warnings = append(c.Warnings, Warning{Kind: WarnNonFinite, Count: n})
	}
	return c, nil
}

// defaultLabels labels each run: its manifest's label, else the shortest
// suffix of its directory's path (the name, then parent/name, ...) that no
// other run's label shares, so two runs named "probe" in different
// folders are not shown (or grouped) as one.
func defaultLabels(runs []*analyze.Run) []string {
	labels := make([]string, len(runs))
	var unlabelled []int
	explicit := map[string]bool{}
	for i, r := range runs {
		if labels[i] = r.Manifest.Label; labels[i] != "" {
			explicit[labels[i]] = true
		} else {
			unlabelled = append(unlabelled, i)
		}
	}
	// One pass per suffix length k counts the distinct directories that
	// share each suffix; most runs are told apart at k = 1.
	parts := make(map[int][]string, len(unlabelled))
	for _, i := range unlabelled {
		parts[i] = strings.Split(filepath.ToSlash(filepath.Clean(runs[i].Dir)), "/")
	}
	suffix := func(i, k int) string {
		p := parts[i]
		return strings.Join(p[max(len(p)-k, 0):], "/")
	}
	for k := 1; len(unlabelled) > 0; k++ {
		dirs := map[string]map[string]bool{}
		for _, i := range unlabelled {
			sfx := suffix(i, k)
			if dirs[sfx] == nil {
				dirs[sfx] = map[string]bool{}
			}
			dirs[sfx][filepath.Clean(runs[i].Dir)] = true
		}
		var left []int
		for _, i := range unlabelled {
			sfx := suffix(i, k)
			if k >= len(parts[i]) || !explicit[sfx] && len(dirs[sfx]) == 1 {
				labels[i] = sfx
			} else {
				left = append(left, i)
			}
		}
		unlabelled = left
	}
	return labels
}

func checkGroupKey(key string, ms []*rundir.Manifest) error {
	if key == "label" || key == "dir" || len(key) > 4 && key[:4] == "tag:" {
		return nil
	}
	if slices.ContainsFunc(ms, func(m *rundir.Manifest) bool { return hasGroupKey(key, m) }) {
		return nil
	}
	return fmt.Errorf("--group-by %q: no run has that key; use label, dir, tag:KEY, a tag's key, a manifest field (e.g. engine.base_url, gpus.0.uuid) or one of: %v", key, GroupKeys(ms)[2:])
}

// summarize analyses one run alone and keeps what a comparison shows.
func summarize(run *analyze.Run, set analyze.Settings) (Run, error) {
	m := run.Manifest
	s := Run{
		Dir: run.Dir, Label: m.Label, Tags: m.Tags, Kinds: m.Kinds, Complete: m.Complete,
		Start: m.StartTime, End: m.EndTime, Warnings: m.Warnings,
	}
	if !m.EndTime.IsZero() && m.EndTime.After(m.StartTime) {
		s.DurationS = m.EndTime.Sub(m.StartTime).Seconds()
	}
	if len(m.GPUs) > 0 {
		s.GPUName, s.GPUCount, s.Driver = m.GPUs[0].Name, len(m.GPUs), m.GPUs[0].Driver
	}
	if e := m.Engine; e != nil {
		s.EngineName, s.EngineVer, s.Model, s.Quantization = e.Name, e.Version, e.Model, e.Quantization
		s.Engine = e.Name
		if e.Version != "" {
			s.Engine += " " + e.Version
		}
	}
	if w := m.Workload; w != nil {
		s.Mode = w.Mode
	}
	if src := m.Source; src != nil {
		s.SourceTool, s.Lacks = src.Tool, src.Lacks
	}
	rep, err := analyze.Analyze([]*analyze.Run{run}, set)
	if err != nil {
		return s, err
	}
	ra := rep.Runs[0]
	s.Roofline = ra.Roofline
	s.Warnings = uniq.AppendNonZero(s.Warnings, ra.Warnings...)
	if sw := ra.Sweep; sw != nil {
		s.Sweep = sweepSummary(sw)
		s.samples = analyze.RequestSamples(run, set)
	}
	return s, nil
}

func sweepSummary(sw *analyze.SweepAnalysis) *SweepSummary {
	k := sw.Knees
	s := &SweepSummary{
		Source: sw.Source, Axis: k.Axis,
		PeakOutputTokPerS: k.PeakOutputTokPerS, PeakConcurrency: k.PeakConcurrency,
		TPOTKneeConcurrency: k.TPOTKneeConcurrency, PlateauConcurrency: k.PlateauConcurrency,
		RecommendedConc: sw.Operating.At.Concurrency, BaselineTPOTP50S: k.BaselineTPOTP50S,
		Wall: sw.Diagnosis.Wall,
	}
	load := func(li int) analyze.LoadKey {
		for _, l := range sw.Levels {
			if l.LevelIndex == li {
				return l.Load
			}
		}
		return analyze.LoadKey{}
	}
	s.PeakLoad, s.TPOTKnee, s.Plateau, s.Recommended = load(k.PeakLevel), load(k.TPOTKneeLevel), load(k.PlateauLevel), load(sw.Operating.At.LevelIndex)
	d := sw.Diagnosis
	s.WallAt = load(d.Primary.At.LevelIndex)
	for _, w := range d.Secondary {
		s.Then = append(s.Then, WallAt{Wall: w.Kind, At: load(w.At.LevelIndex)})
	}
	// SLO goodput compares runs against the user's SLO only; the report's
	// default SLO sets each run's operating point but is not a goal the
	// runs were given.
	if g := sw.Goodput; g != nil && g.SLOSource == analyze.SLOUser {
		s.SLOOutputTokPerS = g.OperatingOutputTokPerS
		s.SLOLoad = load(g.OperatingLevel)
		if g.OperatingLevel < 0 {
			s.SLOMissing = SLOMissingNoLevel
		}
	} else {
		s.SLOMissing = SLOMissingNoSLO
	}
	if c := sw.Cost; c != nil && len(c.Points) > 0 {
		p := c.Points[len(c.Points)-1] // the SLO point when there is one
		s.USDPerMTokOutput, s.CostPoint = p.USDPerMTokOutput, p.Name
	} else if c != nil {
		s.CostMissing = c.Missing
	} else {
		s.CostMissing = []string{analyze.CostNeedsInputs}
	}
	s.Pareto = sw.Pareto
	for _, l := range sw.Levels {
		lv := Level{Load: l.Load, Concurrency: l.Concurrency, RateRPS: l.RateRPS, Requests: l.Requests, Errors: l.Errors, OutputTokPerS: l.OutputTokPerS}
		lv.TTFTP50S, lv.TTFTP99S = quantiles(l.TTFT)
		lv.TPOTP50S, lv.TPOTP99S = quantiles(l.TPOT)
		lv.E2EP50S, lv.E2EP99S = quantiles(l.E2E)
		s.Levels = append(s.Levels, lv)
		s.Requests += l.Requests
		s.Errors += l.Errors
	}
	return s
}

func quantiles(l *analyze.Latency) (p50, p99 float64) {
	if l == nil {
		return 0, 0
	}
	if v, ok := l.Quantile(50); ok {
		p50 = v
	}
	if v, ok := l.Quantile(99); ok {
		p99 = v
	}
	return p50, p99
}

// group assigns every run to a group: the baseline runs (if given) first,
// then the others by their GroupBy value, in order of first appearance.
func group(c *Comparison, runs []*analyze.Run, opts Options) error {
	isBase := make([]bool, len(runs))
	for _, b := range opts.Baseline {
		found := false
		for i, r := range runs {
			if sameDir(r.Dir, b) {
				isBase[i], found = true, true
			}
		}
		if !found {
			return fmt.Errorf("--baseline %s is not among the runs compared", b)
		}
	}
	index := map[string]int{}
	add := func(name string, i int, base bool) {
		gi, ok := index[name]
		if !ok {
			gi = len(c.Groups)
			index[name] = gi
			c.Groups = append(c.Groups, Group{Name: name, Baseline: base})
		}
		c.Groups[gi].Runs = append(c.Groups[gi].Runs, i)
		c.Runs[i].Group = name
	}
	if len(opts.Baseline) > 0 {
		// The baseline group is named by its runs' shared value, if they
		// share one; a candidate with the same value is a separate group.
		name := ""
		for i, r := range runs {
			if isBase[i] {
				v := runGroupValue(c, opts.GroupBy, i, r)
				if name == "" {
					name = v
				} else if name != v {
					name = "baseline"
				}
			}
		}
		for i := range runs {
			if isBase[i] {
				add("baseline: "+name, i, true)
			}
		}
		if len(c.Groups) > 0 && len(opts.Baseline) > 0 && c.Groups[0].Name == "baseline: baseline" {
			c.Groups[0].Name = "baseline"
			index["baseline"] = 0
			for _, i := range c.Groups[0].Runs {
				c.Runs[i].Group = "baseline"
			}
		}
	}
	for i, r := range runs {
		if !isBase[i] {
			add(runGroupValue(c, opts.GroupBy, i, r), i, false)
		}
	}
	if len(opts.Baseline) == 0 {
		// The first group with a sweep: probe-only runs have no numbers to
		// compare (their rooflines are overlaid all the same).
		for gi := range c.Groups {
			if hasSweep(c, c.Groups[gi]) {
				c.Groups[gi].Baseline = true
				break
			}
		}
	}
	return nil
}

// runGroupValue is the run's group value; by label, the label the
// comparison shows (see defaultLabels).
func runGroupValue(c *Comparison, key string, i int, r *analyze.Run) string {
	if key == "" || key == "label" {
		return c.Runs[i].Label
	}
	return groupValue(key, r.Dir, r.Manifest)
}

func hasSweep(c *Comparison, g Group) bool {
	for _, i := range g.Runs {
		if c.Runs[i].Sweep != nil {
			return true
		}
	}
	return false
}

func sameDir(a, b string) bool {
	ca, err1 := filepath.Abs(a)
	cb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && filepath.Clean(ca) == filepath.Clean(cb)
}

func mean(xs []float64) float64 {
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}
