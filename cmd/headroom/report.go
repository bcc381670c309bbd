package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/render"
)

func newReportCmd() *cobra.Command {
	var out, format string
	cmd := &cobra.Command{
		Use:   "report RUN...",
		Short: "Analyze run directories and write report.html, report.md and analysis.json",
		Args:  minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "md" && format != "html" && format != "both" {
				return usageError{fmt.Errorf("--format %q: want md, html or both", format)}
			}
			if out == "" {
				if len(args) > 1 {
					return usageError{fmt.Errorf("with several runs, say where the report goes with --out")}
				}
				out = args[0]
			}
			paths, err := writeReport(args, out, format, analyze.Default())
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
	cmd.Flags().StringVar(&format, "format", "both", "md, html or both")
	return cmd
}

// writeReport loads, analyzes and renders runs into dir.
func writeReport(runDirs []string, dir, format string, opts analyze.Options) ([]string, error) {
	var runs []*analyze.Run
	for _, d := range runDirs {
		r, err := analyze.Load(d)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	rep, err := analyze.Analyze(runs, opts)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	paths, err := render.Files(dir, rep, format)
	if err != nil {
		return nil, err
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode analysis.json: %w", err)
	}
	p := filepath.Join(dir, "analysis.json")
	if err := os.WriteFile(p, append(data, '\n'), 0o644); err != nil {
		return nil, err
	}
	return append(paths, p), nil
}
