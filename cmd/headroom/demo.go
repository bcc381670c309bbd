package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/headroom-llm/headroom/examples"
)

func newDemoCmd() *cobra.Command {
	var out, example string
	var list bool
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
			runDir := filepath.Join(out, "run-"+example)
			if err := os.RemoveAll(runDir); err != nil {
				return err
			}
			if _, err := examples.Extract(example, runDir); err != nil {
				return err
			}
			set, err := defaultSettings()
			if err != nil {
				return err
			}
			paths, err := writeReport([]string{runDir}, out, "both", set)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "example run %q extracted to %s\n", example, runDir)
			for _, p := range paths {
				fmt.Fprintln(cmd.OutOrStdout(), "wrote", p)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "headroom-demo", "output directory")
	cmd.Flags().StringVar(&example, "example", examples.Default, "which bundled run (see --list)")
	cmd.Flags().BoolVar(&list, "list", false, "list the bundled runs")
	return cmd
}
