package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/objstore"
	"github.com/headroom-llm/headroom/render"
	"github.com/headroom-llm/headroom/rundir"
)

// reportFlags are the analysis settings a user can set on `headroom report`.
type reportFlags struct {
	slo                                          *analyze.SLO
	percentiles                                  []float64
	modelConfig, gpuPreset, prices               string
	gpuHourUSD, hostHourUSD, kwhUSD, utilization float64
	gpus                                         int
	// runModels are RUN=config.json pairs (--model-config-for); predictFrom
	// the run the others are predicted from (--predict-from).
	runModels   []string
	predictFrom string
}

func (f *reportFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	parsedVar(fl, &f.slo, "slo", "slo", "", "latency SLO for goodput, e.g. ttft_p99=2s,tpot_p99=100ms (metrics ttft, tpot, itl, e2e)", analyze.ParseSLO)
	parsedVar(fl, &f.percentiles, "percentiles", "percentiles", "", "extra latency percentiles to report besides 50,90,99, e.g. 95,99.9", analyze.ParsePercentiles)
	fl.StringVar(&f.modelConfig, "model-config", "", "the served model's Hugging Face config.json, for the roofline gap")
	fl.Float64Var(&f.gpuHourUSD, "gpu-hour-usd", 0, "price of one GPU for one hour, in USD")
	fl.StringVar(&f.gpuPreset, "gpu-preset", "", "named hourly GPU price from the price table, instead of --gpu-hour-usd (headroom prices lists them)")
	fl.Float64Var(&f.hostHourUSD, "host-hour-usd", 0, "price of the whole host for one hour, in USD, for a run that used no GPU")
	fl.IntVar(&f.gpus, "gpus", 0, "GPUs serving the model (default: the GPUs the run lists)")
	fl.Float64Var(&f.kwhUSD, "kwh-usd", 0, "electricity price per kWh, in USD (power is not priced without it)")
	fl.Float64Var(&f.utilization, "utilization", 1, "share of hours the box serves at the measured rate, 0 < u <= 1")
	fl.StringArrayVar(&f.runModels, "model-config-for", nil, "RUN=config.json: the model of one run, when runs serve different models (e.g. quantizations); repeatable")
	fl.StringVar(&f.predictFrom, "predict-from", "", "a sweep RUN of this report to predict the others from (those with --model-config-for), set against what each measured")
	fl.StringVar(&f.prices, "prices", "", "YAML price table replacing the built-in API prices, GPU presets and board powers (headroom prices --yaml writes the built-in one to start from)")
}

// defaultAnalysis is the analysis of report, compare and index without
// flags: a run's own summary is made with it (sweep.go).
func defaultAnalysis() (analyze.Settings, error) {
	var f reportFlags
	f.register(&cobra.Command{})
	return f.settings()
}

// settings turns the flags into analysis settings; errors are usage errors.
func (f *reportFlags) settings() (analyze.Settings, error) {
	set := analyze.Default()
	var err error
	if f.slo != nil {
		set.SLO = f.slo
	}
	if f.percentiles != nil {
		set.Percentiles = f.percentiles
	}
	if f.modelConfig != "" {
		if set.Model, err = analyze.ReadModelConfig(f.modelConfig); err != nil {
			return set, err
		}
	}
	for _, pair := range f.runModels {
		run, config, ok := strings.Cut(pair, "=")
		if !ok || run == "" || config == "" {
			return set, usageError{fmt.Errorf("--model-config-for %q: want RUN=config.json", pair)}
		}
		m, err := analyze.ReadModelConfig(config)
		if err != nil {
			return set, err
		}
		if set.RunModels == nil {
			set.RunModels = map[string]*analyze.ModelSpec{}
		}
		set.RunModels[run] = m
	}
	set.PredictFrom = f.predictFrom
	switch {
	case f.gpuHourUSD < 0:
		return set, usageError{fmt.Errorf("--gpu-hour-usd %v: must be positive", f.gpuHourUSD)}
	case f.gpuHourUSD > 0 && f.gpuPreset != "":
		return set, usageError{fmt.Errorf("give --gpu-hour-usd or --gpu-preset, not both")}
	case f.hostHourUSD < 0:
		return set, usageError{fmt.Errorf("--host-hour-usd %v: must be positive", f.hostHourUSD)}
	case f.kwhUSD < 0:
		return set, usageError{fmt.Errorf("--kwh-usd %v: must not be negative", f.kwhUSD)}
	case !(f.utilization > 0 && f.utilization <= 1):
		return set, usageError{fmt.Errorf("--utilization %v: want a fraction in (0, 1]", f.utilization)}
	case f.gpus < 0:
		return set, usageError{fmt.Errorf("--gpus %d: must not be negative", f.gpus)}
	}
	prices, source, err := analyze.LoadPrices(f.prices)
	if err != nil {
		return set, err
	}
	if f.gpuPreset != "" {
		if _, err := prices.GPUPreset(f.gpuPreset); err != nil {
			return set, usageError{err}
		}
	}
	set.Cost = analyze.CostSettings{
		GPUHourUSD: f.gpuHourUSD, GPUPreset: f.gpuPreset, GPUs: f.gpus, KWhUSD: f.kwhUSD, HostHourUSD: f.hostHourUSD,
		Utilization: f.utilization, Prices: prices, PricesSource: source,
	}
	return set, nil
}

func newReportCmd() *cobra.Command {
	var out, format string
	var pdf bool
	var flags reportFlags
	cmd := &cobra.Command{
		Use: "report RUN...",
		Example: `  headroom report runs/sweep-20261130T120000Z
  headroom report s3://bench/runs/h200/sweep-1 -o report/`,
		Short: "Analyze run directories and write report.html, report.md and analysis.json",
		Long: `Report analyzes run directories and writes report.html, report.md and
analysis.json. Give a probe run with a sweep run (or one run holding both) for
the roofline gap; several sweep runs of the same configuration are treated as
repeats and get intervals across runs.`,
		Args: minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if pdf && format == "md" {
				return usageError{fmt.Errorf("--pdf prints report.html: use --format html or both")}
			}
			if out == "" {
				if len(args) > 1 {
					return usageError{fmt.Errorf("with several runs, say where the report goes with --out")}
				}
				out = args[0]
			}
			set, err := flags.settings()
			if err != nil {
				return err
			}
			paths, err := writeReport(cmd.Context(), args, out, format, set, pdf)
			if err != nil {
				return err
			}
			for _, p := range paths {
				fmt.Fprintln(cmd.OutOrStdout(), "wrote", p)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "directory for the report files (default: the run directory)")
	choiceVar(cmd.Flags(), &format, "format", "both", []string{"md", "html", "both"}, "md, html or both")
	cmd.Flags().BoolVar(&pdf, "pdf", false, "also print report.html to report.pdf (A4) with a local Chromium or Chrome")
	flags.register(cmd)
	return cmd
}

// loadReportInput reads one input of report: a run directory here or in
// object storage, or a bare server log or /metrics dump on this machine.
func loadReportInput(ctx context.Context, arg string) (*analyze.Run, error) {
	if !objstore.IsURL(arg) {
		return analyze.LoadWith(arg, analyze.LoadOptions{})
	}
	src, err := openRunDir(ctx, arg)
	if err != nil {
		return nil, err
	}
	return analyze.LoadFrom(src, analyze.LoadOptions{})
}

// writeReport loads, analyzes and renders runs (local or s3:// runs) into
// dir (a local directory or an s3:// location); with pdf, it also prints
// report.html to report.pdf.
func writeReport(ctx context.Context, runDirs []string, dir, format string, set analyze.Settings, pdf bool) ([]string, error) {
	if pdf {
		// Before the work: say at once that there is nothing to print with.
		if _, err := render.FindBrowser(); err != nil {
			return nil, err
		}
	}
	var runs []*analyze.Run
	for _, d := range runDirs {
		r, err := loadReportInput(ctx, d)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	rep, err := analyze.Analyze(runs, set)
	if err != nil {
		return nil, err
	}
	return writeTo(ctx, dir, func(dir string) ([]string, error) {
		paths, err := render.Files(dir, rep, format)
		if err != nil {
			return nil, err
		}
		data, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("encode analysis.json: %w", err)
		}
		p := filepath.Join(dir, "analysis.json")
		if err := rundir.WriteOutput(p, append(data, '\n')); err != nil {
			return nil, err
		}
		paths = append(paths, p)
		if pdf {
			out := filepath.Join(dir, "report.pdf")
			if err := render.PDF(filepath.Join(dir, "report.html"), out); err != nil {
				return paths, err
			}
			paths = append(paths, out)
		}
		return paths, nil
	})
}
