package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/headroom-llm/headroom/analyze/compare"
	"github.com/headroom-llm/headroom/objstore"
	"github.com/headroom-llm/headroom/render"
	"github.com/headroom-llm/headroom/rundir"
)

// gateFailed is returned when the regression gate fails; the process then
// exits with status 3, so CI can tell a regression (3) from a broken call
// (2) or a failure to read the runs (1).
type gateFailed struct{ error }

func (e gateFailed) Unwrap() error { return e.error }

type compareFlags struct {
	out, format, groupBy, index string
	cache                       string
	rules                       []compare.Rule
	baselines, allowDiffer      []string
	labels                      [][2]string // RUN, NAME
	alpha                       float64
	gateSignificant             bool
	analysis                    reportFlags
}

func newCompareCmd() *cobra.Command {
	var f compareFlags
	cmd := &cobra.Command{
		Use:   "compare RUN|DIR|s3://BUCKET/PREFIX...",
		Short: "Compare runs: overlaid curves, headline numbers, what differs, significance, a regression gate",
		Long: `Compare reads run directories (a directory that is not a run is searched
recursively for runs) and writes compare.md, compare.html and comparison.json:
the three panels and the rooflines of every run overlaid, a table of headline
numbers per run (peak throughput, TPOT knee, SLO goodput, $/Mtok, the wall hit),
and the context keys whose values differ between runs (engine version, flags,
model, quantization, GPU, driver, ...).

Runs are grouped by --group-by (default: label; also dir, tag:KEY, a tag's key,
any context key or any manifest field by its JSON path). Runs in one group are
repeats of one configuration; every other group is compared with the baseline
group (--baseline, else the first group) and each difference says whether it
is significant: Mann-Whitney U on per-run values or per-request latencies, or
a bootstrap interval of a p99 ratio.

Before claiming a difference, compare checks that the groups ran the same
workload (endpoint, loop, prompt and output lengths, prefix, dataset) on the
same model, quantization, engine and GPUs; where one of those differs (other
than the --group-by key, or one given to --allow-differ) the groups are shown
side by side as "not comparable: KEY differs" and nothing is tested. Runs that
failed or measured nothing are listed apart, with why, and form no group.

Regression gate: --fail-if "throughput<-5%,ttft_p99>+10%" checks each rule for
every candidate group against the baseline and prints one line per violated
rule. Metrics: ` + strings.Join(compare.MetricNames(), ", ") + `;
changes in % or absolute (ms, s, tok/s, usd).

Exit status: 0 compared (gate passed or none given), 1 the runs could not be
read or analysed, 2 wrong usage, 3 the regression gate failed (a rule was
violated, or could not be checked), 130 interrupted.

With --index FILE, also writes one row per run as Parquet (runs.parquet) for
DuckDB, pandas or Polars; see docs/compare.md.

With --cache DIR, each complete run's summary is kept in DIR and reused by the
next compare (or index) of the same run with the same settings, which then
reads one small file per run instead of the run's tables and log: the fast way
to compare a large archive again.`,
		Args: minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCompare(cmd.Context(), cmd.OutOrStdout(), args, &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.out, "out", "o", ".", "directory for compare.md, compare.html and comparison.json")
	choiceVar(fl, &f.format, "format", "both", []string{"md", "html", "both", "none"}, "md, html, both, or none (only comparison.json, the index and the gate)")
	fl.StringVar(&f.groupBy, "group-by", "label", "group runs by label, dir, tag:KEY, or a context key such as engine.version, gpu.name, engine.quantization, \"engine.flag --enable-prefix-caching\"")
	fl.StringSliceVar(&f.baselines, "baseline", nil, "run (or directory of runs) forming the baseline group; repeatable")
	fl.Var(&pairsFlag{dst: &f.labels, want: "RUN=NAME"}, "label", "RUN=NAME: label a run for this comparison (the manifest is not changed); repeatable")
	parsedVar(fl, &f.rules, "fail-if", "rules", "", "regression gate, e.g. \"throughput<-5%,ttft_p99>+10%\": exit 3 when a rule holds", compare.ParseRules)
	fl.BoolVar(&f.gateSignificant, "gate-significant", false, "a gate rule fails only when its change is also significant (or cannot be tested)")
	fl.StringSliceVar(&f.allowDiffer, "allow-differ", nil, "context keys that may differ between the groups compared besides --group-by (of: "+strings.Join(compare.MustMatch, ", ")+")")
	fl.Float64Var(&f.alpha, "alpha", 0.05, "significance level of the tests")
	fl.StringVar(&f.index, "index", "", "also write the index of the runs as one Parquet file here (e.g. runs.parquet)")
	cacheFlag(fl, &f.cache)
	f.analysis.register(cmd)
	return cmd
}

func runCompare(ctx context.Context, stdout io.Writer, args []string, f *compareFlags) error {
	if !(f.alpha > 0 && f.alpha < 1) {
		return usageError{fmt.Errorf("--alpha %v: want a probability between 0 and 1", f.alpha)}
	}
	defer compare.ArchiveGC()()
	opts := compare.DefaultOptions()
	set, err := f.analysis.settings()
	if err != nil {
		return err
	}
	opts.Settings, opts.GroupBy, opts.Alpha, opts.GateNeedsSignificance = set, f.groupBy, f.alpha, f.gateSignificant
	for _, k := range f.allowDiffer {
		if !slices.Contains(compare.MustMatch, k) {
			return usageError{fmt.Errorf("--allow-differ %q: not a key that must match; those are %s", k, strings.Join(compare.MustMatch, ", "))}
		}
	}
	opts.AllowDiffer = f.allowDiffer
	opts.Rules = f.rules
	if opts.Cache, err = summaryCache(f.cache); err != nil {
		return err
	}
	labels := map[string]string{}
	for _, l := range f.labels {
		labels[filepath.Clean(l[0])] = l[1]
	}

	// The baseline's runs come first, then the others, each run once.
	var dirs []rundir.Dir
	seen := map[string]bool{}
	addRuns := func(arg string) ([]string, error) {
		found, err := findRunDirs(ctx, arg)
		if err != nil {
			return nil, err
		}
		var added []string
		for _, d := range found {
			if key := runKey(d); !seen[key] {
				seen[key] = true
				dirs = append(dirs, d)
			}
			added = append(added, d.Name)
		}
		return added, nil
	}
	for _, b := range f.baselines {
		added, err := addRuns(b)
		if err != nil {
			return err
		}
		opts.Baseline = append(opts.Baseline, added...)
	}
	for _, a := range args {
		if _, err := addRuns(a); err != nil {
			return err
		}
	}

	// --label names must name runs compared; they apply as the runs load.
	byDir := map[string]string{}
	for _, d := range dirs {
		if name, ok := labels[filepath.Clean(d.Name)]; ok {
			byDir[d.Name] = name
			delete(labels, filepath.Clean(d.Name))
		}
	}
	for run := range labels {
		return usageError{fmt.Errorf("--label %s=...: %s is not among the runs compared", run, run)}
	}
	res, err := compare.CompareDirs(ctx, dirs, byDir, opts)
	if nothing := (*compare.NothingToCompareError)(nil); errors.As(err, &nothing) {
		return fmt.Errorf("compare: no run has numbers to compare (%s)", render.LeftOutList(nothing.LeftOut))
	}
	if err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	paths, err := writeTo(ctx, f.out, func(dir string) ([]string, error) {
		var paths []string
		if f.format != "none" {
			if paths, err = render.CompareFiles(dir, res, f.format); err != nil {
				return nil, err
			}
		}
		data, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("encode comparison.json: %w", err)
		}
		jp := filepath.Join(dir, "comparison.json")
		if err := rundir.WriteOutput(jp, append(data, '\n')); err != nil {
			return nil, err
		}
		return append(paths, jp), nil
	})
	if err != nil {
		return err
	}
	if f.index != "" {
		where, name := filepath.Split(f.index)
		if objstore.IsURL(f.index) {
			where, name = path.Split(f.index)
		}
		ip, err := writeTo(ctx, cmp.Or(where, "."), func(dir string) ([]string, error) {
			p := filepath.Join(dir, name)
			return []string{p}, res.WriteIndex(p)
		})
		if err != nil {
			return fmt.Errorf("--index: %w", err)
		}
		paths = append(paths, ip...)
	}
	left := ""
	if n := len(res.LeftOut); n > 0 {
		left = fmt.Sprintf("; %d left out (failed or empty, see compare.md)", n)
	}
	fmt.Fprintf(stdout, "compared %d runs in %d groups (grouped by %s)%s\n", len(res.Runs), len(res.Groups), res.GroupBy, left)
	for _, p := range paths {
		fmt.Fprintln(stdout, "wrote", p)
	}
	if g := res.Gate; g != nil {
		bad := 0
		for _, r := range g.Results {
			if r.Status != "pass" {
				fmt.Fprintln(stdout, render.GateLine(res, r))
				bad++
			}
		}
		if g.Failed {
			return gateFailed{fmt.Errorf("regression gate failed: %d of %d checks violated or unchecked", bad, len(g.Results))}
		}
		fmt.Fprintf(stdout, "regression gate passed: %d checks\n", len(g.Results))
	}
	return nil
}

// findRuns returns arg itself when it is a run directory, else every run
// directory under it.
func findRuns(arg string) ([]string, error) {
	st, err := os.Stat(arg)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s: not a directory (give run directories, or directories holding runs)", arg)
	}
	if rundir.IsRun(arg) {
		return []string{arg}, nil
	}
	runs, err := rundir.FindRuns(arg)
	if err != nil {
		return nil, err
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("%s: %w", arg, errors.New("no run directories under it (no manifest.json found)"))
	}
	return runs, nil
}
