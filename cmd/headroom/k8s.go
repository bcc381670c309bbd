package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/headroom-llm/headroom/internal/k8sjob"
)

// k8sFlags are the flags of --emit-k8s-job.
type k8sFlags struct {
	emit                     bool
	name, namespace, image   string
	output, secret, cpu, mem string
	mergeWait                time.Duration
}

func (f *k8sFlags) define(fl *pflag.FlagSet) {
	fl.BoolVar(&f.emit, "emit-k8s-job", false, "print a Kubernetes Indexed Job that runs this sweep as --shard N shards, and a Job that merges them; run nothing")
	fl.StringVar(&f.name, "k8s-name", "headroom-sweep", "with --emit-k8s-job: the Job's name (the merge Job adds -merge; the runs go in a folder of this name)")
	fl.StringVar(&f.namespace, "k8s-namespace", "", "with --emit-k8s-job: the Jobs' namespace (default: kubectl's)")
	fl.StringVar(&f.image, "k8s-image", "", "with --emit-k8s-job: a container image with headroom as its entrypoint")
	fl.StringVar(&f.output, "k8s-output", "", "with --emit-k8s-job: where the shards write their runs: pvc:CLAIM (a ReadWriteMany volume, mounted at /runs) or s3://bucket/prefix")
	fl.StringVar(&f.secret, "k8s-secret", "", "with --emit-k8s-job: a Secret whose keys become every pod's environment (OPENAI_API_KEY, AWS_ACCESS_KEY_ID, …)")
	fl.StringVar(&f.cpu, "k8s-cpu", "2", "with --emit-k8s-job: each shard's CPU (requests = limits)")
	fl.StringVar(&f.mem, "k8s-memory", "2Gi", "with --emit-k8s-job: each shard's memory (requests = limits)")
	fl.DurationVar(&f.mergeWait, "k8s-merge-wait", 2*time.Hour, "with --emit-k8s-job: how long the merge Job waits for the shards to finish")
}

// emitFlags are the flags that describe the Job, not the sweep: they are
// not passed on to the shards.
var emitFlags = map[string]bool{
	"emit-k8s-job": true, "k8s-name": true, "k8s-namespace": true, "k8s-image": true, "k8s-output": true,
	"k8s-secret": true, "k8s-cpu": true, "k8s-memory": true, "k8s-merge-wait": true,
	// set by the Job itself
	"shard": true, "shard-from-env": true, "start-at": true, "out": true,
	// never written into a manifest: from the Secret's OPENAI_API_KEY
	"api-key": true,
}

// emitK8sJob prints the Jobs of a sweep run as sf.shard.count shards with
// the flags given (fl).
func emitK8sJob(w io.Writer, fl *pflag.FlagSet, sf *shardFlags, startAtGiven bool) error {
	k := sf.k8s
	if sf.shard.count == 0 {
		return usageError{errors.New("--emit-k8s-job needs --shard N (or I/N): the number of shards")}
	}
	if !startAtGiven {
		return usageError{errors.New("--emit-k8s-job needs --start-at: a time far enough ahead for every pod to start (e.g. +5m), written into the Job")}
	}
	if fl.Changed("api-key") {
		return usageError{errors.New("--emit-k8s-job does not write --api-key into a manifest: put OPENAI_API_KEY in a Secret and name it with --k8s-secret")}
	}
	if time.Until(sf.startAt) < 30*time.Second {
		return usageError{fmt.Errorf("--start-at %s is less than 30 s ahead: the pods must be scheduled and started before it", sf.startAt.Format(time.RFC3339))}
	}
	var args []string
	fl.Visit(func(f *pflag.Flag) {
		if emitFlags[f.Name] {
			return
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok && f.Value.Type() == "stringSlice" {
			for _, v := range sv.GetSlice() {
				args = append(args, "--"+f.Name+"="+v)
			}
			return
		}
		args = append(args, "--"+f.Name+"="+f.Value.String())
	})
	shards, merge, err := k8sjob.Build(k8sjob.Spec{
		Name: k.name, Namespace: k.namespace, Image: k.image, Shards: sf.shard.count, SweepArgs: args,
		StartAt: sf.startAt.UTC().Format(time.RFC3339Nano), Output: k.output, Secret: k.secret,
		CPU: k.cpu, Memory: k.mem, MergeWait: k.mergeWait.String(),
	})
	if err != nil {
		return usageError{fmt.Errorf("--emit-k8s-job: %w", err)}
	}
	out, err := k8sjob.YAML(shards, merge)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "# headroom sweep as %d shards from %s; apply with: kubectl apply -f FILE\n", sf.shard.count, strings.TrimSpace(sf.startAt.UTC().Format(time.RFC3339)))
	_, err = w.Write(out)
	return err
}
