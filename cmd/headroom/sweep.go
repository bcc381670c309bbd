package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/headroom-llm/headroom/analyze/compare"
	"github.com/headroom-llm/headroom/collect/loadgen"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/headroom-llm/headroom/collect/sweep"
	"github.com/headroom-llm/headroom/internal/termsafe"
	"github.com/headroom-llm/headroom/rundir"
	"github.com/headroom-llm/headroom/slo"
)

// sweepFlags are the command line of headroom sweep.
type sweepFlags struct {
	baseURL, endpoint, model, apiKey       string
	concurrency                            []int
	rate                                   []float64
	requestsPerLevel, warmup, sharedPrefix int
	durationPerLevel, timeout              time.Duration
	prompt, output                         distFlags
	dataset                                string
	seed                                   int64
	temperature                            float64
	serverLogs                             []string
	serverCmd, balance                     string
	serverTimeout, metricsInterval         time.Duration
	out, label, description                string
	tags                                   []string
	maxErrorRate                           float64
	noGPU, fixedOutput                     bool
	resume                                 string
	shard                                  shardFlags

	// The search and the saturation stop.
	findMax           bool
	slo               *slo.SLO
	findMaxLimit      float64
	findMaxPrecision  float64
	stopWhenSaturated bool

	// Arrivals, requests and what vllm bench serve calls them
	// (sweepcompat.go).
	burstiness float64
	ramp       rampFlags
	headers    [][2]string
	sampling   samplingFlags
	compat     compatFlags
	noProgress bool

	// A trace to replay.
	trace, traceFormat string
	traceSpeeds        []float64
	traceBlockSize     int

	// The dataset's format and sampling.
	datasetName    string
	disableShuffle bool
	maxModelLen    int
	outputGiven    bool
}

// resumeFlags may be given with --resume: where the server is and how to
// reach it, and the error policy. Every other flag is the workload, which
// comes from the run's manifest.
var resumeFlags = map[string]bool{
	"resume": true, "base-url": true, "api-key": true, "server-log": true, "server-cmd": true,
	"server-timeout": true, "metrics-interval": true, "no-gpu": true, "max-error-rate": true,
	"header": true, "disable-tqdm": true, "host": true, "port": true,
}

type distFlags struct {
	mean           int
	kind           string
	stddev         float64
	minTok, maxTok int
}

func (d distFlags) dist() sweep.Dist {
	return sweep.Dist{Kind: d.kind, Mean: float64(d.mean), StdDev: d.stddev, Min: d.minTok, Max: d.maxTok}
}

func newSweepCmd() *cobra.Command {
	var f sweepFlags
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Sweep concurrency (or arrival rate) against an OpenAI-compatible server",
		Long: `Sweep streams requests to an OpenAI-compatible server (vLLM, SGLang,
llama.cpp, Ollama, TGI) at rising concurrency and records every request and every streamed chunk with the time it arrived,
the server's /metrics every second, GPU telemetry when the server is on this
host, and the server's log (--server-log or --server-cmd) into a run
directory. Ctrl-C stops within a second and keeps a valid partial run.

  headroom sweep --base-url http://127.0.0.1:8000
  headroom sweep --server-cmd "vllm serve MODEL --port 8000" --concurrency 1,4,16,64
  headroom sweep --rate 1,2,4,8 --concurrency 256 --duration-per-level 60s

See docs/sweep.md for every flag, the definitions (TTFT, ITL, TPOT) and
the caveats.`,
		Args:        exactArgs(0),
		Annotations: map[string]string{"aliases": aliasNames()},
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			if err := f.compat.apply(cmd.Flags(), &f); err != nil {
				return usageError{err}
			}
			if !cmd.Flags().Changed("api-key") {
				f.apiKey = os.Getenv("OPENAI_API_KEY")
			}
			// Whatever fails, the message printed holds no secret of the flags.
			secrets := sweep.KnownSecrets(f.baseURL, f.apiKey, f.serverCmd, append([]string{f.label, f.description}, f.tags...)...)
			for _, h := range f.headers {
				secrets.Add(h[1])
			}
			defer func() { err = secrets.Error(err) }()
			if f.resume != "" {
				var bad []string
				cmd.Flags().Visit(func(fl *pflag.Flag) {
					if !resumeFlags[fl.Name] {
						bad = append(bad, "--"+fl.Name)
					}
				})
				if len(bad) > 0 {
					return usageError{fmt.Errorf("%s: a resumed sweep sends the workload recorded in %s; only --base-url, --api-key, --header, --server-cmd, --server-log, --server-timeout, --metrics-interval, --no-gpu and --max-error-rate may be given",
						strings.Join(bad, ", "), filepath.Join(f.resume, "manifest.json"))}
				}
				return resumeSweep(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f, cmd.Flags().Changed("base-url"), cmd.Flags().Changed("max-error-rate"))
			}
			startAtGiven := cmd.Flags().Changed("start-at")
			if f.shard.k8s.emit {
				return emitK8sJob(cmd.OutOrStdout(), cmd.Flags(), &f.shard, startAtGiven)
			}
			shardOpt, err := f.shard.option(startAtGiven)
			if err != nil {
				return err
			}
			var extra []sweep.Option
			if shardOpt != nil {
				extra = append(extra, shardOpt)
			}
			return runSweep(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f, cmd.Flags().Changed("concurrency"), extra...)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.baseURL, "base-url", "http://127.0.0.1:8000", "the server's address (with or without /v1); several replicas of one model: their addresses, comma-separated, and the load is spread over them")
	choiceVar(fl, &f.balance, "balance", string(loadgen.LeastOutstanding), []string{string(loadgen.LeastOutstanding), string(loadgen.RoundRobin)},
		"with several --base-url: send each request to the replica with the fewest in flight, or to each in turn")
	fl.StringVar(&f.endpoint, "endpoint", string(sweep.DefaultEndpoint), "completions (/v1/completions) or chat (/v1/chat/completions), or the path itself (/v1/chat/completions, /proxy/v1/completions)")
	fl.StringVar(&f.model, "model", "", "model name (default: the first model of /v1/models)")
	fl.StringVar(&f.apiKey, "api-key", "", "API key sent as a Bearer token (default: $OPENAI_API_KEY); never written to disk")
	intsVar(fl, &f.concurrency, "concurrency", 1, "1,4,16", sweep.DefaultLevels, "closed-loop concurrency levels, comma-separated; with --rate: the cap on requests in flight")
	positivesVar(fl, &f.rate, "rate", "0.5,1,2", "open loop: arrival rates in requests/s, comma-separated, one level each (Poisson; see --burstiness)")
	fl.Float64Var(&f.burstiness, "burstiness", sweep.DefaultBurstiness, "open loop: gamma shape of the gaps between arrivals (1: Poisson; below 1 burstier, above 1 more even)")
	fl.IntVar(&f.requestsPerLevel, "requests-per-level", sweep.DefaultRequestsPerLevel, fmt.Sprintf("measured requests per level (0: 4 × concurrency, open loop 16 s of arrivals, at least %d so p99 is a tail estimate)", sweep.DefaultMinRequestsPerLevel))
	fl.DurationVar(&f.durationPerLevel, "duration-per-level", 0, "send measured requests for this long per level instead of a count (e.g. 60s)")
	fl.IntVar(&f.warmup, "warmup", sweep.DefaultWarmup, "warm-up requests per level, kept and marked (-1: the level's concurrency; open loop: 1 s of arrivals)")
	fl.IntVar(&f.prompt.mean, "prompt-tokens", sweep.DefaultPromptTokens, "prompt length in tokens (the mean for normal/lognormal)")
	fl.StringVar(&f.prompt.kind, "prompt-dist", sweep.DistFixed, "prompt length distribution: fixed, uniform, normal, lognormal")
	fl.Float64Var(&f.prompt.stddev, "prompt-stddev", 0, "prompt length standard deviation in tokens (normal, lognormal; uniform without bounds)")
	fl.IntVar(&f.prompt.minTok, "prompt-min", 0, "smallest prompt length (uniform: the range's start)")
	fl.IntVar(&f.prompt.maxTok, "prompt-max", 0, "largest prompt length (uniform: the range's end)")
	fl.IntVar(&f.output.mean, "output-tokens", sweep.DefaultOutputTokens, "output length in tokens (max_tokens; the mean for normal/lognormal)")
	fl.StringVar(&f.output.kind, "output-dist", sweep.DistFixed, "output length distribution: fixed, uniform, normal, lognormal")
	fl.Float64Var(&f.output.stddev, "output-stddev", 0, "output length standard deviation in tokens")
	fl.IntVar(&f.output.minTok, "output-min", 0, "smallest output length (uniform: the range's start)")
	fl.IntVar(&f.output.maxTok, "output-max", 0, "largest output length (uniform: the range's end)")
	fl.IntVar(&f.sharedPrefix, "shared-prefix", 0, "start every prompt with the same N tokens (prefix-caching variation)")
	fl.StringVar(&f.dataset, "dataset", "", "prompts from a file: ShareGPT JSON, JSONL of {\"prompt\": ...} or {\"messages\": [...]}, or Hugging Face rows (see --dataset-name)")
	fl.Int64Var(&f.seed, "seed", sweep.DefaultSeed, "seed of every random choice: the same seed sends the same workload")
	fl.Float64Var(&f.temperature, "temperature", sweep.DefaultTemperature, "sampling temperature")
	fl.BoolVar(&f.fixedOutput, "fixed-output", true, "send min_tokens = max_tokens and ignore_eos (dropped automatically if the server rejects them)")
	fl.DurationVar(&f.timeout, "timeout", sweep.DefaultTimeout, "per-request timeout, from send to the end of the stream")
	fl.Float64Var(&f.maxErrorRate, "max-error-rate", sweep.DefaultMaxErrorRate, "stop when more than this fraction of a level's requests fail (1: never)")
	fl.StringArrayVar(&f.serverLogs, "server-log", nil, "follow this server log file during the sweep (like tail -F); with several --base-url, give it once per replica, in the same order")
	fl.StringVar(&f.serverCmd, "server-cmd", "", "start the server with this shell command, capture its output, stop it at the end")
	fl.DurationVar(&f.serverTimeout, "server-timeout", sweep.DefaultServerTimeout, "how long to wait for --server-cmd's server to answer")
	fl.DurationVar(&f.metricsInterval, "metrics-interval", sweep.DefaultMetricsInterval, "how often to scrape /metrics (0: never)")
	fl.BoolVar(&f.noGPU, "no-gpu", false, "do not sample GPU telemetry")
	fl.StringVarP(&f.out, "out", "o", "", "run directory to create (default: runs/sweep-<UTC time>)")
	fl.StringVar(&f.label, "label", "", "label for the run in reports")
	fl.StringVar(&f.description, "description", "", "what the engine and model are, when that is not obvious (manifest engine.description)")
	fl.StringSliceVar(&f.tags, "tag", nil, "tag for the run (repeatable)")
	fl.StringVar(&f.resume, "resume", "", "continue the interrupted sweep in this run directory, with the workload of its manifest")
	f.shard.define(fl)
	fl.BoolVar(&f.findMax, "find-max", false, "search the highest load meeting --slo: double from the first --concurrency (or --rate) until a level fails, then bisect")
	parsedVar(fl, &f.slo, "slo", "slo", "", "latency SLO for --find-max, e.g. ttft_p99=2s,tpot_p99=100ms (metrics ttft, tpot, itl, e2e; TTFT from the intended send time)", slo.Parse)
	fl.Float64Var(&f.findMaxLimit, "find-max-limit", 0, fmt.Sprintf("highest load --find-max probes (default: concurrency %d, or 1024 × the first rate)", sweep.DefaultFindMaxLimit))
	fl.Float64Var(&f.findMaxPrecision, "find-max-precision", sweep.DefaultFindMaxPrecision, "--find-max stops when the interval is at most this fraction of the load found (0: adjacent concurrencies)")
	fl.BoolVar(&f.stopWhenSaturated, "stop-when-saturated", false, "stop raising the load once throughput is flat and TTFT grows level over level (the manifest says where)")
	addCompatFlags(fl, &f)
	return cmd
}

// sweepOptions turns the flags into the load generator's options.
func sweepOptions(f sweepFlags, concurrencyGiven bool, progress func(sweep.Progress), logf func(string, ...any)) ([]sweep.Option, error) {
	levels := f.concurrency
	opts := []sweep.Option{
		sweep.WithEndpoint(sweep.Endpoint(f.endpoint)),
		sweep.WithModel(f.model),
		sweep.WithAPIKey(f.apiKey),
		sweep.WithRequestsPerLevel(f.requestsPerLevel),
		sweep.WithDurationPerLevel(f.durationPerLevel),
		sweep.WithWarmup(f.warmup),
		sweep.WithPromptTokens(f.prompt.dist()),
		sweep.WithOutputTokens(f.output.dist()),
		sweep.WithSharedPrefix(f.sharedPrefix),
		sweep.WithSeed(f.seed),
		sweep.WithTemperature(f.temperature),
		sweep.WithFixedOutput(f.fixedOutput),
		sweep.WithTimeout(f.timeout),
		sweep.WithMaxErrorRate(f.maxErrorRate),
		sweep.WithMetricsInterval(f.metricsInterval),
		sweep.WithLabel(f.label),
		sweep.WithEngineDescription(f.description),
		sweep.WithTags(f.tags...),
		sweep.WithBalance(loadgen.Balance(f.balance)),
		sweep.WithProgress(progress),
		sweep.WithLogf(logf),
	}
	switch {
	case f.trace != "":
		// a trace times its own requests: --concurrency is the cap (workloadOptions)
	case f.ramp.strategy != "":
		// a ramp is one level: --concurrency is its cap (workloadOptions)
	case f.findMax && len(f.rate) == 0:
		// a search of concurrency starts from --concurrency (workloadOptions)
	case len(f.rate) > 0:
		capConc := 0
		if concurrencyGiven {
			if len(levels) != 1 {
				return nil, usageError{errors.New("with --rate, --concurrency is one number: the cap on requests in flight")}
			}
			capConc = levels[0]
		}
		opts = append(opts, sweep.WithRates(capConc, f.rate...))
	default:
		opts = append(opts, sweep.WithLevels(levels...))
	}
	more, err := workloadOptions(f, concurrencyGiven)
	if err != nil {
		return nil, err
	}
	opts = append(opts, more...)
	server, err := serverOptions(f)
	if err != nil {
		return nil, err
	}
	return append(opts, server...), nil
}

func runSweep(ctx context.Context, stdout, stderr io.Writer, f sweepFlags, concurrencyGiven bool, extra ...sweep.Option) error {
	pr := newProgressPrinter(stderr)
	logf := func(format string, args ...any) { pr.println(fmt.Sprintf(format, args...)) }
	opts, err := sweepOptions(f, concurrencyGiven, pr.update, logf)
	if err != nil {
		return err
	}
	opts = append(opts, extra...)
	s, err := sweep.New(f.baseURL, opts...)
	if err != nil {
		return usageError{err}
	}
	pr.planned, pr.off = s.Planned, f.noProgress
	out := f.out
	if out == "" {
		out = "runs/sweep-" + time.Now().UTC().Format("20060102T150405Z")
	}
	// An s3:// run is written here and mirrored as it is written.
	o, err := newRunOutput(ctx, out)
	if err != nil {
		return err
	}
	run, err := s.Record(ctx, o.dir)
	pr.finish()
	if run != nil && o.remote == "" && nothingMeasured(run) {
		kept, log := discardUnmeasured(run.Dir)
		fmt.Fprintln(stderr, nothingMeasuredText(run.Dir, kept, log))
		return err
	}
	var disk writtenState
	if run != nil {
		disk = onDisk(run) // the local copy, read before an upload removes it
		writeSummary(stderr, run)
	}
	uerr := o.finish()
	if run != nil && o.remote != "" {
		run.Dir = o.remote
		if uerr != nil {
			run.Dir = o.dir
		}
	}
	printSweepEnd(stdout, stderr, run, disk)
	return errors.Join(err, uerr)
}

// resumeSweep continues the interrupted sweep in f.resume with the
// workload of its manifest (docs/sweep.md, "Resuming").
func resumeSweep(ctx context.Context, stdout, stderr io.Writer, f sweepFlags, baseURLGiven, maxErrorRateGiven bool) error {
	m, err := rundir.ReadManifest(f.resume)
	if err != nil {
		return fmt.Errorf("sweep --resume: %w", err)
	}
	if m.Complete {
		return fmt.Errorf("sweep --resume: %s: %w", f.resume, sweep.ErrNothingToResume)
	}
	opts, err := sweep.ResumeOptions(m)
	if err != nil {
		return fmt.Errorf("sweep --resume: %s: %w", filepath.Join(f.resume, rundir.ManifestFile), err)
	}
	baseURL := f.baseURL
	if !baseURLGiven && m.Engine != nil && m.Engine.BaseURL != "" {
		if u, err := url.Parse(m.Engine.BaseURL); err == nil && u.User != nil {
			// The manifest keeps the address with its password masked.
			return usageError{fmt.Errorf("sweep --resume: %s was recorded with credentials, which the run does not keep: give --base-url again", m.Engine.BaseURL)}
		}
		baseURL = m.Engine.BaseURL
		if len(m.Replicas) > 1 {
			urls := make([]string, len(m.Replicas))
			for i, r := range m.Replicas {
				urls[i] = r.BaseURL
			}
			baseURL = strings.Join(urls, ",")
		}
	}
	pr := newProgressPrinter(stderr)
	logf := func(format string, args ...any) { pr.println(fmt.Sprintf(format, args...)) }
	opts = append(opts, sweep.WithAPIKey(f.apiKey), sweep.WithMetricsInterval(f.metricsInterval),
		sweep.WithProgress(pr.update), sweep.WithLogf(logf))
	if maxErrorRateGiven {
		opts = append(opts, sweep.WithMaxErrorRate(f.maxErrorRate))
	}
	server, err := serverOptions(f)
	if err != nil {
		return err
	}
	for _, h := range f.headers {
		opts = append(opts, sweep.WithHeader(h[0], h[1]))
	}
	s, err := sweep.New(baseURL, append(opts, server...)...)
	if err != nil {
		return fmt.Errorf("sweep --resume: %s: %w", filepath.Join(f.resume, rundir.ManifestFile), err)
	}
	pr.planned, pr.off = s.Planned, f.noProgress
	run, err := s.Resume(ctx, f.resume)
	pr.finish()
	var disk writtenState
	if run != nil {
		disk = onDisk(run)
		writeSummary(stderr, run)
	}
	printSweepEnd(stdout, stderr, run, disk)
	return err
}

// writeSummary writes a complete run's summary into it, for compare and
// index of an archive to read instead of analysing the run again
// (rundir.SummaryFile). The run stands without it: a failure is a warning.
func writeSummary(stderr io.Writer, run *rundir.Run) {
	if !run.Manifest.Complete {
		return
	}
	set, err := defaultAnalysis()
	if err == nil {
		_, err = compare.WriteRunSummary(run.Dir, set)
	}
	if err != nil {
		fmt.Fprintf(stderr, "warning: %s: no summary for compare and index (they will analyse the run again): %v\n", run.Dir, err)
	}
}

// printSweepEnd prints the run's state and warnings after a sweep; disk is
// what the run directory held when the sweep ended.
func printSweepEnd(stdout, stderr io.Writer, run *rundir.Run, disk writtenState) {
	if run != nil {
		state := "complete"
		if !run.Manifest.Complete {
			state = "incomplete"
			if st := run.Manifest.Stopped; st != nil {
				state += " (" + st.Reason
				if st.Level != nil {
					state += fmt.Sprintf(" at level %d", *st.Level)
				}
				state += ")"
			}
		}
		for _, w := range run.Manifest.Warnings {
			fmt.Fprintln(stderr, "warning:", w)
		}
		next := "headroom report " + run.Dir
		if !run.Manifest.Complete {
			next += " (or headroom sweep --resume " + run.Dir + ")"
		}
		if !disk.written {
			fmt.Fprintf(stdout, "%s: %s run, but not all of it could be written; on disk: %s\n", run.Dir, state, disk.summary)
			return
		}
		if !run.Manifest.Complete {
			state += "; on disk: " + disk.summary
		}
		fmt.Fprintf(stdout, "wrote %s: %s run; next: %s\n", run.Dir, state, next)
	}
}

// writtenState is what a run directory held, read back after a sweep.
type writtenState struct {
	summary string
	written bool // every table and the final manifest read back
}

// onDisk says what the run directory holds, read back: the levels whose
// rows are on disk, and whether the manifest there is the run's last word.
// A write that failed (the open-files limit, a full disk) shows here, not
// in what the sweep meant to write.
func onDisk(run *rundir.Run) writtenState {
	levels, lerr := rundir.ReadTable[rundir.LevelRow](run.Dir, rundir.TableLevels)
	complete, requests := 0, int64(0)
	for _, l := range levels {
		if l.Complete {
			complete++
			requests += l.Requests
		}
	}
	summary := fmt.Sprintf("%d complete levels, %d measured requests", complete, requests)
	if lerr != nil {
		summary = "the levels table does not read back (" + lerr.Error() + ")"
	}
	m, err := rundir.ReadManifest(run.Dir)
	switch {
	case err != nil:
		return writtenState{summary + "; the manifest does not read back (" + err.Error() + ")", false}
	case m.Complete != run.Manifest.Complete || (m.Stopped == nil) != (run.Manifest.Stopped == nil):
		return writtenState{summary + "; the manifest there is from before the end (it could not be rewritten)", false}
	}
	return writtenState{summary, lerr == nil}
}

// progressPrinter shows one line per level on stderr: redrawn in place on
// a terminal, plain lines (phase starts and ends, every 10 s) otherwise,
// with the time left in the level and, when the levels are known ahead,
// in the sweep.
type progressPrinter struct {
	w        io.Writer
	terminal bool
	off      bool
	mu       sync.Mutex
	last     time.Time
	lastKey  string
	drawn    bool

	// planned gives the sweep's levels (nil: not known ahead); read once,
	// at the first update (a resume knows where it starts only then).
	planned func() []sweep.PlannedLevel
	plan    []sweep.PlannedLevel
	havePln bool
	// rps is the rate of finished requests of the latest measured phase,
	// the estimate for the closed-loop levels to come.
	rps float64
}

func newProgressPrinter(w io.Writer) *progressPrinter {
	p := &progressPrinter{w: termsafe.Raw(w)} // its own control sequences, and the terminal test
	if f, ok := p.w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.terminal = true
		}
	}
	return p
}

func (p *progressPrinter) line(pr sweep.Progress) string {
	what := fmt.Sprintf("c=%d", pr.Concurrency)
	if pr.RateRPS > 0 {
		what = fmt.Sprintf("rate=%g/s cap=%d", pr.RateRPS, pr.Concurrency)
	}
	count := fmt.Sprintf("%d", pr.Done)
	if pr.Total > 0 {
		count = fmt.Sprintf("%d/%d", pr.Done, pr.Total)
	} else if pr.Duration > 0 {
		count = fmt.Sprintf("%d (%.0f/%.0f s)", pr.Done, pr.Elapsed.Seconds(), pr.Duration.Seconds())
	}
	level := fmt.Sprintf("level %d", pr.LevelIndex+1)
	if pr.Levels > 0 {
		level = fmt.Sprintf("level %d/%d", pr.LevelIndex+1, pr.Levels)
	}
	s := fmt.Sprintf("%s %s %-7s requests %s  %.0f tok/s  errors %d",
		level, what, pr.Phase, count, pr.ChunksPerS(), pr.Errors)
	if eta := p.eta(pr); eta != "" {
		s += "  " + eta
	}
	return s
}

// eta says how long the level, and the sweep when its levels are known,
// still take: the phase's remaining requests at its rate so far (or its
// remaining duration), then each level to come by its arrivals (open
// loop) or at the latest level's rate of finished requests (closed loop,
// where a higher concurrency finishes at least as fast once the server is
// saturated: an upper estimate below saturation).
func (p *progressPrinter) eta(pr sweep.Progress) string {
	if pr.Phase == "done" || pr.Elapsed < time.Second {
		return ""
	}
	rate := float64(pr.Done) / pr.Elapsed.Seconds()
	var left time.Duration
	switch {
	case pr.Duration > 0:
		left = max(pr.Duration-pr.Elapsed, 0)
	case pr.Total > 0 && rate > 0:
		left = time.Duration(float64(pr.Total-pr.Done) / rate * float64(time.Second))
	default:
		return ""
	}
	if pr.Phase == "measure" && rate > 0 {
		p.rps = rate
	}
	out := "eta " + shortDuration(left)
	var more time.Duration
	known := p.plan != nil
	for _, l := range p.plan {
		switch {
		case l.Index < pr.LevelIndex:
		case l.Index == pr.LevelIndex:
			if pr.Phase == "warmup" && p.rps > 0 {
				more += time.Duration(float64(l.Requests-pr.Total) / p.rps * float64(time.Second))
			}
		case l.Duration > 0:
			more += l.Duration
		case l.RateRPS > 0:
			more += time.Duration(float64(l.Requests) / l.RateRPS * float64(time.Second))
		case p.rps > 0:
			more += time.Duration(float64(l.Requests) / p.rps * float64(time.Second))
		default:
			known = false
		}
	}
	if known && more > 0 {
		out += " (sweep ~" + shortDuration(left+more) + ")"
	}
	return out
}

// shortDuration is 42s, 3m10s or 1h05m.
func shortDuration(d time.Duration) string {
	s := int(d.Round(time.Second).Seconds())
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	}
	return fmt.Sprintf("%dh%02dm", s/3600, s/60%60)
}

func (p *progressPrinter) update(pr sweep.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.off {
		return
	}
	if !p.havePln && p.planned != nil {
		p.plan, p.havePln = p.planned(), true
	}
	now := time.Now()
	key := fmt.Sprintf("%d-%s", pr.LevelIndex, pr.Phase)
	phaseChange := key != p.lastKey
	p.lastKey = key
	if p.terminal {
		if !phaseChange && now.Sub(p.last) < 100*time.Millisecond && pr.Done != pr.Total {
			return
		}
		p.last = now
		fmt.Fprintf(p.w, "\r\033[K%s", p.line(pr))
		p.drawn = true
		if pr.Phase == "done" {
			fmt.Fprintln(p.w)
			p.drawn = false
		}
		return
	}
	if phaseChange || now.Sub(p.last) >= 10*time.Second || (pr.Total > 0 && pr.Done == pr.Total) {
		p.last = now
		fmt.Fprintln(p.w, p.line(pr))
	}
}

// println prints a message line without garbling the progress line.
func (p *progressPrinter) println(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
	fmt.Fprintln(p.w, termsafe.Escape(s)) // p.w is the raw terminal: what s quotes from outside is escaped
}

func (p *progressPrinter) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprintln(p.w)
		p.drawn = false
	}
}

// serverOptions are the options about the server and the GPU, shared by a
// new sweep and a resumed one.
func serverOptions(f sweepFlags) ([]sweep.Option, error) {
	var opts []sweep.Option
	if len(f.serverLogs) > 0 && f.serverCmd != "" {
		return nil, usageError{errors.New("--server-log and --server-cmd do not mix: --server-cmd captures the server's output itself")}
	}
	if len(f.serverLogs) > 0 {
		opts = append(opts, sweep.WithServerLog(f.serverLogs...))
	}
	if f.serverCmd != "" {
		opts = append(opts, sweep.WithServerCmd(f.serverCmd, f.serverTimeout))
	}
	if f.noGPU {
		opts = append(opts, sweep.WithNoGPU())
	}
	return opts, nil
}

// nothingMeasured reports a sweep that stopped before any level was
// written (connection refused, a server that did not start, a bad dataset,
// Ctrl-C while preparing): the run holds no measurement to report or
// resume.
func nothingMeasured(run *rundir.Run) bool {
	return run.Manifest.Stopped != nil && !rundir.HasTable(run.Dir, rundir.TableRequests) && !rundir.HasTable(run.Dir, rundir.TableLevels)
}

// discardUnmeasured removes what a sweep that measured nothing wrote in
// dir, unless the server's log is there (a --server-cmd server that failed
// to start says why in it): it returns whether dir was kept, and why.
func discardUnmeasured(dir string) (kept, log bool) {
	if st, err := os.Stat(filepath.Join(dir, rundir.ServerLogFile)); err == nil && st.Size() > 0 {
		return true, true
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if e.IsDir() {
			os.Remove(p) // a table folder, empty: a folder with anything in it stays
		} else if e.Name() == rundir.ManifestFile {
			os.Remove(p)
		}
	}
	return os.Remove(dir) != nil, false
}

// nothingMeasuredText says plainly that a sweep measured nothing, and what
// is left of it.
func nothingMeasuredText(dir string, kept, log bool) string {
	const none = "nothing was measured: the sweep stopped before its first level"
	switch {
	case log:
		return fmt.Sprintf("%s. %s keeps the server's log (%s) and the error in %s, to see why; there is nothing in it to report or resume", none, dir, rundir.ServerLogFile, rundir.ManifestFile)
	case kept:
		return fmt.Sprintf("%s. %s keeps what else was in it; there is nothing in it to report or resume", none, dir)
	}
	return fmt.Sprintf("%s, so no run was left at %s", none, dir)
}
