// Command headroom tells an LLM-serving team where their box stops and why.
//
// This is a minimal root command so that the probe can be built and tested
// on its own branch; the foundation's root command replaces it.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Stdout, os.Stderr, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "headroom:", err)
		os.Exit(1)
	}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "headroom",
		Short:         "Where an LLM-serving box stops, and why",
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.AddCommand(newProbeCmd())
	return root
}

func run(ctx context.Context, stdout, stderr io.Writer, args []string) error {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	return root.ExecuteContext(ctx)
}
