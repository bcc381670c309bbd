package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/examples"
)

func newDemoCmd() *cobra.Command {
	var out, example string
	var list, pdf bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Write a report of a real bundled run into ./headroom-demo/",
		Long: `Demo extracts a real recorded run bundled in the binary, analyzes it and
writes report.html, report.md and analysis.json, with the run's data beside
them, so you can see what headroom produces without a GPU or a server.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if list {
				for _, e := range examples.List {
					fmt.Fprintf(cmd.OutOrStdout(), "%-20s %s\n", e.Name, e.Description)
				}
				return nil
			}
			dir := filepath.Join(out, "example-"+example)
			if err := os.RemoveAll(dir); err != nil {
				return err
			}
			runDirs, spec, err := examples.Extract(example, dir)
			if err != nil {
				return err
			}
			// The example's own report settings, as a user would give them
			// to headroom report.
			flags := reportFlags{utilization: 1, modelConfig: spec.ModelConfig, gpuPreset: spec.GPUPreset, kwhUSD: spec.KWhUSD,
				predictFrom: spec.PredictFrom}
			for run, config := range spec.ModelConfigs {
				flags.runModels = append(flags.runModels, run+"="+config)
			}
			if spec.SLO != "" {
				slo, err := analyze.ParseSLO(spec.SLO)
				if err != nil {
					return fmt.Errorf("example %q: %w", example, err)
				}
				flags.slo = slo
			}
			set, err := flags.settings()
			if err != nil {
				return err
			}
			paths, err := writeReport(cmd.Context(), runDirs, out, "both", set, pdf)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "example %q extracted to %s\n", example, dir)
			for _, p := range paths {
				fmt.Fprintln(cmd.OutOrStdout(), "wrote", p)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "headroom-demo", "output directory")
	cmd.Flags().StringVar(&example, "example", examples.Default, "which bundled run (see --list)")
	cmd.Flags().BoolVar(&list, "list", false, "list the bundled runs")
	cmd.Flags().BoolVar(&pdf, "pdf", false, "also print report.html to report.pdf (A4) with a local Chromium or Chrome")
	return cmd
}
