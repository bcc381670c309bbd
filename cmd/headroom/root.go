package main

import (
	"errors"
	"io"

	"github.com/spf13/cobra"

	"github.com/headroom-llm/headroom/internal/buildinfo"
)

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "headroom",
		Short: "Where your LLM serving box stops, and why",
		Long: `headroom measures the hardware ceiling of a GPU (probe), what an
OpenAI-compatible inference server achieves under load (sweep), and joins
the two into a report: roofline gap, knees, goodput under an SLO, the wall
that was hit, and cost per million tokens.

Runs are directories (manifest.json + Parquet) that any later headroom, or
DuckDB, pandas and Polars, can read: see docs/run-format.md.`,
		Version:       buildinfo.Version(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{errors.New(err.Error() + " (see '" + c.CommandPath() + " --help')")}
	})
	root.AddCommand(
		newProbeCmd(),
		newSweepCmd(),
		newReportCmd(),
		newCompareCmd(),
		newIndexCmd(),
		newUploadCmd(),
		newMergeCmd(),
		newImportCmd(),
		newInspectLogCmd(),
		newDemoCmd(),
		newPricesCmd(),
		newVersionCmd(),
	)
	return root
}

// exactArgs and minArgs wrap cobra's argument checks as usage errors.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(n)(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}

func minArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.MinimumNArgs(n)(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}
