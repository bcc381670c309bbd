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

	"github.com/headroom-llm/headroom/collect/server"
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	go handleSignals(cancel, os.Stderr)
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// handleSignals makes the first Ctrl-C (or SIGTERM) cancel the context, so
// that collectors flush what they measured and mark the run incomplete,
// and a second one quit at once: a server that headroom started is killed
// first, and the run keeps every level already on disk.
func handleSignals(cancel context.CancelFunc, stderr io.Writer) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	sig := <-sigs
	fmt.Fprintf(stderr, "\nheadroom: %s: stopping and writing what was measured (Ctrl-C again quits at once)\n", sigName(sig))
	cancel()
	sig = <-sigs
	fmt.Fprintf(stderr, "headroom: %s again: quitting now; the run keeps every level already written\n", sigName(sig))
	server.KillAll()
	os.Exit(130)
}

func sigName(sig os.Signal) string {
	if sig == os.Interrupt {
		return "interrupted"
	}
	return sig.String()
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
