package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/headroom-llm/headroom/objstore"
	"github.com/headroom-llm/headroom/rundir"
)

func newUploadCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "upload RUN|DIR s3://BUCKET/PREFIX",
		Short: "Copy a run directory, or every run under a directory, to object storage (each run's data first, its manifest last)",
		Long: `Upload copies a local run directory to an s3:// location: every table part
and the server log first, the manifest last, so a reader there never sees a
manifest without its data. It completes an upload that a sweep or probe
writing to s3:// could not finish (the message names the local copy).

Given a directory that holds runs (an archive) instead of one run, it copies
every run under it to the same path under the location, 16 runs at once,
so that an archive of thousands of runs goes up in one command. A run that
could not be copied is named in the error; run the command again to
finish (runs already there are copied again).

Credentials and region come from the AWS SDK's standard chain (environment,
~/.aws files, SSO, instance or container role); a custom endpoint from
AWS_ENDPOINT_URL_S3. Nothing about them is written into the run.`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !objstore.IsURL(args[1]) {
				return usageError{fmt.Errorf("%s: want an s3://bucket/prefix location", args[1])}
			}
			if !rundir.IsRun(args[0]) {
				runs, err := findRuns(args[0])
				if err != nil {
					return err
				}
				n, err := uploadRuns(cmd.Context(), args[0], args[1], runs, uploadGrace)
				if err != nil {
					return fmt.Errorf("uploaded %d of %d runs: %w", n, len(runs), err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "uploaded %d runs from %s to %s\n", n, args[0], args[1])
				return nil
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), uploadGrace)
			defer cancel()
			if err := uploadRun(ctx, args[0], args[1]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "uploaded %s to %s\n", args[0], args[1])
			return nil
		},
	}
}
