package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// errNotImplemented is returned by commands whose issue has not landed yet.
// They exit non-zero: a placeholder must never look like it worked.
var errNotImplemented = errors.New("not implemented yet")

func placeholder(use, short, issue string) *cobra.Command {
	return &cobra.Command{
		Use:                use,
		Short:              short + " (not implemented yet)",
		Long:               short + ".\n\nNot implemented yet: see " + issue + ". The command exits with status 1.",
		DisableFlagParsing: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New(use + ": " + errNotImplemented.Error() + " (" + issue + ")")
		},
	}
}

func newSweepCmd() *cobra.Command {
	return placeholder("sweep", "Sweep concurrency against an OpenAI-compatible server", "issue 4")
}
