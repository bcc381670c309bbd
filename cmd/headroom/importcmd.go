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
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "Turn another tool's result file into a run directory",
		Long: `Import converts a result file of another tool into a run directory that
'headroom report' and 'headroom compare' read like headroom's own runs.

Formats (detected from the content):
  roofline_<GPU>.json   the seed's roofline probe (script 01)
  serving_sweep.json    the seed's serving sweep (script 02)

What a format does not record (driver, per-request times, ...) is listed in
the manifest and in the report.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := importer.Options{Label: label}
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
				base := filepath.Base(args[0])
				out = strings.TrimSuffix(base, filepath.Ext(base)) + ".run"
			}
			run, err := importer.Import(args[0], out, opts)
			if err != nil {
				return fmt.Errorf("import: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "imported %s (%s) into %s\n", args[0], run.Manifest.Source.Tool, run.Dir)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "run directory to create (default: FILE's name with .run)")
	cmd.Flags().StringVar(&date, "date", "", "when the imported measurement was taken (YYYY-MM-DD); default: the file's modification time")
	cmd.Flags().StringVar(&label, "label", "", "label for the run in reports")
	return cmd
}
