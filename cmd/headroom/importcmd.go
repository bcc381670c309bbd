package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/headroom-llm/headroom/collect/importer"
)

func newImportCmd() *cobra.Command {
	var out, date, label string
	var tags []string
	cmd := &cobra.Command{
		Use:   "import FILE|DIR...",
		Short: "Turn other tools' result files into a run directory",
		Long: `Import converts result files of other tools into a run directory that
'headroom report' and 'headroom compare' read like headroom's own runs.

Formats (detected from the content, not the name):
  roofline_<GPU>.json          a PyTorch roofline probe's result (bandwidth, GEMM sweep)
  serving_sweep.json           a Python serving sweep's result (levels, latencies)
  vllm bench serve JSON        --save-result, with --save-detailed for per-request
                               times; several results (--append-result) are levels
  vllm bench sweep directory   the run=N.json files of each combination (or a
                               summary.json, or the experiment's summary.csv)
  AIPerf artifact directory    profile_export.jsonl (per request), with the load
                               setting from profile_export_aiperf.json beside it;
                               profile_export_aiperf.json (or .csv) alone gives
                               aggregates
  GenAI-Perf profile_export.json   every experiment is a level;
                               profile_export_genai_perf.json gives aggregates
  guidellm benchmarks.json/.yaml   every benchmark (strategy) is a level

Several files (or artifact directories) of one tool become the levels of one
sweep, e.g. one vllm bench serve result per --max-concurrency. Results whose
recorded settings differ (model, metadata, server or benchmark overrides, closed
or open loop), or that repeat a load level, become separate runs under --out,
one directory each, named by what sets them apart.

What a format does not record (per-token times, server log, GPU, ...) is listed
in the manifest (source.lacks) and in the report; times that were reconstructed
rather than measured are named in the manifest's notes. See docs/imports.md.`,
		Args: minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := importer.Options{Label: label}
			for _, t := range tags {
				for _, s := range strings.Split(t, ",") {
					if s = strings.TrimSpace(s); s != "" {
						opts.Tags = append(opts.Tags, s)
					}
				}
			}
			if date != "" {
				t, err := time.Parse("2006-01-02", date)
				if err != nil {
					t, err = time.Parse(time.RFC3339, date)
				}
				if err != nil {
					return usageError{fmt.Errorf("--date %q: want YYYY-MM-DD or RFC 3339", date)}
				}
				opts.Date = t
			}
			if out == "" {
				if len(args) > 1 {
					return usageError{fmt.Errorf("with several files, say where the run goes with --out")}
				}
				base := filepath.Base(strings.TrimRight(args[0], "/"))
				out = strings.TrimSuffix(base, filepath.Ext(base)) + ".run"
			}
			runs, err := importer.ImportAll(args, out, opts)
			for _, run := range runs {
				writeSummary(cmd.ErrOrStderr(), run)
				fmt.Fprintf(cmd.OutOrStdout(), "imported %s (%s) into %s\n", run.Manifest.Source.File, run.Manifest.Source.Tool, run.Dir)
			}
			if err != nil {
				return fmt.Errorf("import: %w", err)
			}
			if len(runs) > 1 {
				fmt.Fprintf(cmd.OutOrStdout(), "%d runs: the results differ in their settings or repeat a load level; compare them with `headroom compare %s/*`\n", len(runs), out)
			}
			if lacks := runs[0].Manifest.Source.Lacks; len(lacks) > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "the source lacks: %s\n", strings.Join(lacks, "; "))
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "run directory to create (default: FILE's name with .run)")
	cmd.Flags().StringVar(&date, "date", "", "when the imported measurement was taken (YYYY-MM-DD or RFC 3339); default: the time the file records, else its modification time")
	cmd.Flags().StringVar(&label, "label", "", "label for the run in reports and comparisons")
	cmd.Flags().StringSliceVar(&tags, "tag", nil, "tag for the run, KEY=VALUE (repeatable), for 'headroom compare --group-by tag:KEY'")
	return cmd
}
