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
	"time"

	"github.com/headroom-llm/headroom/collect/server"
	"github.com/headroom-llm/headroom/internal/termsafe"
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go watchSignals(sigs, cancel, os.Stderr, func() {
		server.KillAll()
		os.Exit(130)
	}, time.Now)
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// sameSignalWindow is how close a second Ctrl-C must follow the first to
// be the same one delivered twice (to the process and to its group) rather
// than a person pressing it again.
const sameSignalWindow = 50 * time.Millisecond

// watchSignals makes the first Ctrl-C (or SIGTERM) cancel the context, so
// that collectors flush what they measured and mark the run incomplete,
// and a second Ctrl-C quit at once (quit): a server that headroom started is
// killed first, and the run keeps every level already on disk.
//
// A signal sent to a process and then to its process group arrives twice
// within microseconds (GNU timeout does that, and so does anything that
// stops a group); a copy must not count as a second Ctrl-C, which loses the
// interrupted level. So SIGTERM never quits at once (what sends it, a
// supervisor or timeout, escalates to SIGKILL by itself), and a SIGINT
// within sameSignalWindow of the first signal is its copy. The loop does
// nothing but receive, so that a copy is timed as close to its arrival as
// possible. now is the clock (time.Now; a test's own).
func watchSignals(sigs <-chan os.Signal, cancel context.CancelFunc, stderr io.Writer, quit func(), now func() time.Time) {
	sig := <-sigs
	first := now()
	go func() {
		fmt.Fprintf(stderr, "\nheadroom: %s: stopping and writing what was measured (Ctrl-C again quits at once)\n", sigName(sig))
		cancel()
	}()
	for sig := range sigs {
		if sig != os.Interrupt || now().Sub(first) < sameSignalWindow {
			continue
		}
		fmt.Fprintf(stderr, "headroom: %s again: quitting now; the run keeps every level already written\n", sigName(sig))
		quit()
		return
	}
}

func sigName(sig os.Signal) string {
	if sig == os.Interrupt {
		return "interrupted"
	}
	return sig.String()
}

// run executes one command line and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	// Whatever a command prints may quote a server, a log or a shared run:
	// no control character of theirs reaches the terminal as one.
	stdout, stderr = termsafe.Writer{W: stdout}, termsafe.Writer{W: stderr}
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
