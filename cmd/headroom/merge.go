package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/headroom-llm/headroom/collect/merge"
	"github.com/headroom-llm/headroom/rundir"
)

func newMergeCmd() *cobra.Command {
	var (
		out   string
		bound time.Duration
		wait  time.Duration
	)
	cmd := &cobra.Command{
		Use:   "merge SHARD... -o RUN",
		Short: "Merge the runs of a sweep's shards (sweep --shard I/N) into one run",
		Long: `Merge joins the runs that the shards of one sweep wrote (headroom sweep
--shard I/N, one per client host) into one run that report and compare read
like any other: every request and chunk is kept, its times corrected by its
shard's clock offset, each level's window is the union of the shards'. A
shard that is missing or stopped early is named, and the levels it had a
share of are marked partial. The same shards always give the same run.

  headroom merge runs/shard-0 runs/shard-1 runs/shard-2 -o runs/merged
  headroom merge --wait 1h s3://bucket/sweep/shard-0 s3://bucket/sweep/shard-1 -o s3://bucket/sweep/merged

See docs/distributed.md.`,
		Args: minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageError{errors.New("merge needs -o RUN: the run directory to create")}
			}
			return runMerge(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args, out, bound, wait)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&out, "out", "o", "", "run directory (or s3:// location) to create")
	fl.DurationVar(&bound, "clock-bound", merge.DefaultClockBound, "flag shards whose clock offset is less certain than this")
	fl.DurationVar(&wait, "wait", 0, "wait up to this long for every shard's run to finish (a merge Job started with the shards); then merge what there is")
	return cmd
}

func runMerge(ctx context.Context, stdout, stderr io.Writer, args []string, out string, bound, wait time.Duration) error {
	dirs, err := waitForShards(ctx, stderr, args, wait)
	if err != nil {
		return err
	}
	o, err := newRunOutput(ctx, out)
	if err != nil {
		return err
	}
	start := time.Now()
	run, err := merge.Merge(dirs, o.dir, merge.Options{ClockBound: bound})
	if err != nil {
		return errors.Join(err, o.finish())
	}
	took := time.Since(start)
	reqs, err := rundir.ReadTable[rundir.RequestRow](run.Dir, rundir.TableRequests)
	if err != nil {
		return err
	}
	// The summary goes in before the run is uploaded (-o s3://...).
	writeSummary(stderr, run)
	if err := o.finish(); err != nil {
		return err
	}
	merge.WriteSummary(stdout, run, merge.Summarize(reqs))
	for _, w := range run.Manifest.Warnings {
		fmt.Fprintln(stderr, "warning:", w)
	}
	state := "complete"
	if !run.Manifest.Complete {
		state = "partial"
	}
	fmt.Fprintf(stdout, "wrote %s: %s run merged from %d shards in %.2f s; next: headroom report %s\n", o.name(), state, len(dirs), took.Seconds(), o.name())
	return nil
}

// waitForShards opens the shards' runs, waiting up to wait for each to be
// there and finished (complete, or stopped with a reason). A shard that
// is not there when the wait ends is left out (merge names it missing);
// one there but unfinished is merged as it is (a shard killed mid-level).
func waitForShards(ctx context.Context, stderr io.Writer, args []string, wait time.Duration) ([]rundir.Dir, error) {
	deadline := time.Now().Add(wait)
	var dirs []rundir.Dir
	for _, a := range args {
		for {
			d, err := openRunDir(ctx, a)
			var m *rundir.Manifest
			if err == nil {
				m, err = d.Manifest()
			}
			if err == nil && (m.Complete || m.Stopped != nil || wait == 0 || !time.Now().Before(deadline)) {
				dirs = append(dirs, d)
				break
			}
			if err != nil && (wait == 0 || !time.Now().Before(deadline)) {
				if wait > 0 {
					fmt.Fprintf(stderr, "merge: %s: not there after waiting %v (%v): merged without it\n", a, wait, err)
					break
				}
				return nil, fmt.Errorf("merge: %w", err)
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(5 * time.Second):
			}
		}
	}
	if len(dirs) == 0 {
		return nil, errors.New("merge: none of the shards is there")
	}
	return dirs, nil
}
