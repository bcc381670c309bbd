package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/headroom-llm/headroom/internal/buildinfo"
	"github.com/headroom-llm/headroom/rundir"
)

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the headroom version and the run format it writes",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "headroom %s (run format %d, %s, %s/%s)\n",
				buildinfo.Version(), rundir.FormatVersion, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}
