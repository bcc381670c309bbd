package main

import (
	"cmp"
	"errors"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

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
		msg := err.Error()
		if s := suggestFlag(c, msg); s != "" {
			msg += " (did you mean " + s + "?)"
		}
		return usageError{errors.New(msg + " (see '" + c.CommandPath() + " --help')")}
	})
	root.AddCommand(
		newProbeCmd(),
		newSweepCmd(),
		newReportCmd(),
		newPredictCmd(),
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

// suggestFlag names the command's flags closest to an unknown one in a
// pflag error ("unknown flag: --num-promts"): those within two edits, or
// that contain the name given or are contained in it, best first. Hidden
// flags and the names in the command's "aliases" annotation count too.
func suggestFlag(c *cobra.Command, msg string) string {
	name, ok := strings.CutPrefix(msg, "unknown flag: --")
	if !ok || name == "" {
		return ""
	}
	name, _, _ = strings.Cut(name, "=")
	names := strings.Split(c.Annotations["aliases"], ",")
	c.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	for _, n := range names {
		if n == "" {
			continue
		}
		d := levenshtein(name, n)
		if d > 2 && !(len(name) >= 4 && (strings.Contains(n, name) || strings.Contains(name, n))) {
			continue
		}
		cs = append(cs, cand{n, d})
	}
	slices.SortStableFunc(cs, func(a, b cand) int { return cmp.Or(a.d-b.d, strings.Compare(a.name, b.name)) })
	cs = slices.CompactFunc(cs, func(a, b cand) bool { return a.name == b.name })
	var out []string
	for i, x := range cs {
		if i == 3 {
			break
		}
		out = append(out, "--"+x.name)
	}
	return strings.Join(out, " or ")
}

// levenshtein is the edit distance between a and b (bytes: flag names are ASCII).
func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, sub)
		}
		prev = cur
	}
	return prev[len(b)]
}
