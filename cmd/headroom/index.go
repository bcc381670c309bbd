package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/headroom-llm/headroom/analyze/compare"
	"github.com/headroom-llm/headroom/objstore"
	"github.com/headroom-llm/headroom/rundir"
)

func newIndexCmd() *cobra.Command {
	var out, cache string
	var analysis reportFlags
	cmd := &cobra.Command{
		Use:   "index RUN|DIR|s3://BUCKET/PREFIX... -o DEST",
		Short: "Build a queryable dataset of many runs (hive-partitioned Parquet for DuckDB, Trino, Spark, Athena)",
		Long: `Index reads runs (a directory or s3:// location that is not a run is searched
for runs) and adds them to the dataset at DEST, a local directory or an s3://
location: four tables of Parquet files partitioned by the UTC day each run
started (runs/day=YYYY-MM-DD/...), which DuckDB, Trino, Spark and Athena read
without conversion:

  runs           one row per run: identity, context, workload, SLO, headline numbers, wall
  levels         one row per load level
  requests       one row per request (TTFT and E2E worked out), request_id unique across runs
  level_summary  one row per level: throughput and p50/p99 TTFT, TPOT, E2E

Every row carries its run's run_id. Indexing again adds only the runs not in
the dataset yet, as new files: nothing already written is rewritten.
docs/compare.md gives the CREATE TABLE statements and DuckDB queries.`,
		Example: `  headroom index runs/ -o archive-index/
  headroom index s3://bench/runs -o s3://bench/index --slo ttft_p99=2s`,
		Args: minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageError{errors.New("say where the dataset goes with -o DEST")}
			}
			set, err := analysis.settings()
			if err != nil {
				return err
			}
			sc, err := summaryCache(cache)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			st, err := datasetStore(ctx, out)
			if err != nil {
				return err
			}
			dirs, err := collectDirs(ctx, args)
			if err != nil {
				return err
			}
			defer compare.ArchiveGC()()
			stats, err := compare.IndexWith(ctx, dirs, st, set, sc)
			if err != nil {
				return fmt.Errorf("index: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "indexed %d new runs (%d requests) into %s; %d of %d were indexed before\n",
				stats.Runs, stats.Requests, out, stats.Skipped, len(dirs))
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "the dataset: a directory or an s3:// location (created, or added to)")
	cacheFlag(cmd.Flags(), &cache)
	analysis.register(cmd)
	return cmd
}

func cacheFlag(fl *pflag.FlagSet, dst *string) {
	fl.StringVar(dst, "cache", "", "keep each complete run's summary in this local directory and reuse it next time (same run, same settings)")
}

// summaryCache is --cache's directory; the cache is local only.
func summaryCache(dir string) (compare.SummaryCache, error) {
	if objstore.IsURL(dir) {
		return "", usageError{fmt.Errorf("--cache %s: the summary cache is a local directory", dir)}
	}
	return compare.SummaryCache(dir), nil
}

// collectDirs finds the runs of every argument, each run once.
func collectDirs(ctx context.Context, args []string) ([]rundir.Dir, error) {
	var out []rundir.Dir
	seen := map[string]bool{}
	for _, a := range args {
		found, err := findRunDirs(ctx, a)
		if err != nil {
			return nil, err
		}
		for _, d := range found {
			if key := runKey(d); !seen[key] {
				seen[key] = true
				out = append(out, d)
			}
		}
	}
	return out, nil
}

// datasetStore is the dataset at out: a local directory or an s3:// prefix.
func datasetStore(ctx context.Context, out string) (compare.DatasetStore, error) {
	if !objstore.IsURL(out) {
		return compare.LocalDataset(out), nil
	}
	loc, c, err := openLocation(ctx, out)
	if err != nil {
		return nil, err
	}
	return s3Dataset{ctx: ctx, c: c, loc: loc}, nil
}

type s3Dataset struct {
	ctx context.Context
	c   *objstore.Client
	loc objstore.Location
}

func (d s3Dataset) List(dir string) ([]string, error) {
	objs, err := d.c.List(d.ctx, d.loc.Bucket, d.loc.Key(dir)+"/")
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(objs))
	for _, o := range objs {
		names = append(names, strings.TrimPrefix(o.Key, d.loc.Key("")))
	}
	return names, nil
}

func (d s3Dataset) Read(name string) ([]byte, error) {
	return d.c.Get(d.ctx, d.loc.Bucket, d.loc.Key(name))
}

func (d s3Dataset) Write(name string, data []byte) error {
	return d.c.Put(d.ctx, d.loc.Bucket, d.loc.Key(name), data)
}
