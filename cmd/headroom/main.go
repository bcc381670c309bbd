// Command headroom measures where an LLM serving box stops, and why: a GPU
// roofline probe, a streaming load sweep against an OpenAI-compatible
// server, and a report that joins them.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	// The first Ctrl-C cancels the context so collectors can flush and mark
	// the run incomplete; a second one kills the process the usual way.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command line and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCmd(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "headroom: "+oneLine(err.Error()))
	var ue usageError
	var gf gateFailed
	switch {
	case errors.As(err, &ue):
		return 2
	case errors.As(err, &gf):
		return 3
	case errors.Is(err, context.Canceled):
		return 130
	}
	return 1
}

// usageError marks errors in how a command was called (exit code 2).
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// oneLine keeps an error message to one line, as users and scripts expect.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}
