package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/headroom-llm/headroom/objstore"
)

func newUploadCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "upload RUN s3://BUCKET/PREFIX",
		Short: "Copy a run directory to object storage (its data first, the manifest last)",
		Long: `Upload copies a local run directory to an s3:// location: every table part
and the server log first, the manifest last, so a reader there never sees a
manifest without its data. It completes an upload that a sweep or probe
writing to s3:// could not finish (the message names the local copy).

Credentials and region come from the AWS SDK's standard chain (environment,
~/.aws files, SSO, instance or container role); a custom endpoint from
AWS_ENDPOINT_URL_S3. Nothing about them is written into the run.`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !objstore.IsURL(args[1]) {
				return usageError{fmt.Errorf("%s: want an s3://bucket/prefix location", args[1])}
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
