package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/headroom-llm/headroom/collect/probe"
	"github.com/headroom-llm/headroom/cuda"
	"github.com/headroom-llm/headroom/internal/buildinfo"
	"github.com/headroom-llm/headroom/modelspec"
	"github.com/headroom-llm/headroom/rundir"
)

// probeFlags are the command line of `headroom probe`.
type probeFlags struct {
	out       string
	devices   string
	batches   []int
	k, n      int
	repeats   int
	window    time.Duration
	buffersMi []int
	noNVML    bool
	dtypes    []string
	// modelConfig is a Hugging Face config.json whose decode GEMMs are
	// timed at modelBatches.
	modelConfig  string
	modelBatches []int
	// Launch of the copy and sum kernels; hidden flags for tuning on new GPUs.
	copyThreads, copyBlocksPerSM int
}

func newProbeCmd() *cobra.Command {
	f := probeFlags{}
	cmd := &cobra.Command{
		Use:   "probe",
		Short: "Measure the GPU's roofline: memory bandwidth, bf16 GEMM peak, ridge point and knee",
		Long: `probe measures what the silicon can do, as the seed's roofline script does but
without Python: the bandwidth of a large device-to-device copy (bytes read plus
written), the bf16 throughput of (B,K)@(K,N) GEMMs over a sweep of batch sizes
B, and from them the peak, the ridge point (peak / bandwidth, in FLOP per byte)
and the knee (the smallest B reaching 90% of the peak). Every GEMM is checked
against a CPU reference; GPU clocks, power and throttling are recorded.

It needs an NVIDIA GPU with its driver (libcuda.so.1) and cuBLAS
(libcublas.so.13, .12 or .11; HEADROOM_CUBLAS=/path overrides the search).
Results go to a run directory (manifest.json + Parquet) for headroom report.
See docs/probe.md.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			return runProbe(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), f)
		},
		SilenceUsage: true,
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.out, "out", "o", "", "run directory to write (default headroom-probe-<UTC time>)")
	fl.StringVar(&f.devices, "devices", "0", `GPUs to probe: CUDA ordinals like "0,1", or "all" (each alone, then all at once)`)
	fl.IntSliceVar(&f.batches, "batches", probe.DefaultBatches, "batch sizes B of the (B,K)@(K,N) GEMM sweep")
	fl.IntVar(&f.k, "k", probe.DefaultK, "inner dimension K of the GEMM")
	fl.IntVar(&f.n, "n", probe.DefaultN, "output dimension N of the GEMM")
	fl.IntVar(&f.repeats, "repeats", probe.DefaultRepeats, "timed windows per point; the median is reported")
	fl.DurationVar(&f.window, "window", probe.DefaultWindow, "device time per timed window of back-to-back calls")
	defaultMi := make([]int, len(probe.DefaultBufferSizes))
	for i, s := range probe.DefaultBufferSizes {
		defaultMi[i] = int(s >> 20)
	}
	fl.IntSliceVar(&f.buffersMi, "buffers", defaultMi, "bandwidth buffer sizes in MiB")
	fl.BoolVar(&f.noNVML, "no-nvml", false, "do not sample clocks, power and throttling through NVML")
	fl.StringSliceVar(&f.dtypes, "dtype", []string{"bf16"}, "GEMM dtypes: bf16, and fp8 (E4M3 through cuBLASLt, the ceiling of FP8-served models) on GPUs that have it")
	fl.StringVar(&f.modelConfig, "model-config", "", "Hugging Face config.json of the served model: also time its own decode GEMMs (QKV, O, gate/up, down, LM head; MoE experts) at --model-batches, the measured step floor")
	fl.IntSliceVar(&f.modelBatches, "model-batches", probe.DefaultModelBatches, "decode batches at which --model-config's GEMMs are timed")
	fl.IntVar(&f.copyThreads, "copy-threads", probe.DefaultCopyThreads, "threads per block of the copy and read kernels")
	fl.IntVar(&f.copyBlocksPerSM, "copy-blocks-per-sm", probe.DefaultCopyBlocksPerSM, "blocks per multiprocessor of the copy and read kernels")
	_ = fl.MarkHidden("copy-threads")
	_ = fl.MarkHidden("copy-blocks-per-sm")
	return cmd
}

// parseDevices reads --devices: "all" (nil) or a comma-separated list of ordinals.
func parseDevices(s string) ([]int, error) {
	if strings.TrimSpace(s) == "all" {
		return nil, nil
	}
	var out []int
	for _, part := range strings.Split(s, ",") {
		d, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || d < 0 {
			return nil, usageError{fmt.Errorf("--devices %q: want \"all\" or CUDA ordinals like 0,1", s)}
		}
		out = append(out, d)
	}
	return out, nil
}

func runProbe(ctx context.Context, stdout, stderr io.Writer, f probeFlags) error {
	devices, err := parseDevices(f.devices)
	if err != nil {
		return err
	}
	sizes := make([]uint64, len(f.buffersMi))
	for i, mi := range f.buffersMi {
		if mi <= 0 {
			return usageError{fmt.Errorf("--buffers: %d MiB must be positive", mi)}
		}
		sizes[i] = uint64(mi) << 20
	}
	bar := newProgressBar(stderr)
	opts := []probe.Option{
		probe.WithBatches(f.batches...), probe.WithShape(f.k, f.n), probe.WithRepeats(f.repeats),
		probe.WithWindow(f.window), probe.WithBufferSizes(sizes...), probe.WithProgress(bar.update),
		probe.WithCopyLaunch(f.copyThreads, f.copyBlocksPerSM),
	}
	if devices != nil {
		opts = append(opts, probe.WithDevices(devices...))
	}
	for _, d := range f.dtypes {
		switch strings.ToLower(strings.TrimSpace(d)) {
		case "bf16":
		case "fp8", "fp8_e4m3", "e4m3":
			opts = append(opts, probe.WithFP8())
		default:
			return usageError{fmt.Errorf("--dtype %q: want bf16 or fp8", d)}
		}
	}
	var modelName string
	if f.modelConfig != "" {
		spec, err := modelspec.Read(f.modelConfig)
		if err != nil {
			return usageError{err}
		}
		modelName = modelNameOf(f.modelConfig, spec)
		opts = append(opts, probe.WithModelGEMMs(spec, modelName, f.modelBatches...))
	}
	if f.noNVML {
		opts = append(opts, probe.WithoutNVML())
	}
	p, err := probe.New(opts...)
	if err != nil {
		return usageError{err}
	}
	res, runErr := p.Run(ctx)
	bar.done()
	if len(res.Devices) == 0 {
		// Nothing was measured (no driver, no GPU, no cuBLAS): write no run.
		if errors.Is(runErr, cuda.ErrLibraryNotFound) {
			return fmt.Errorf("probe: %w", runErr)
		}
		return runErr
	}
	dir := f.out
	if dir == "" {
		dir = "headroom-probe-" + res.Started.UTC().Format("20060102-150405")
	}
	run, err := rundir.Create(dir, &rundir.Manifest{HeadroomVersion: buildinfo.Version(), StartTime: res.Started.UTC(), Host: hostInfo()})
	if err != nil {
		return errors.Join(runErr, err)
	}
	if err := res.WriteTo(run); err != nil {
		return errors.Join(runErr, err)
	}
	if f.modelConfig != "" {
		run.Manifest.Probe.ModelConfig = f.modelConfig
	}
	var stopped *rundir.Stopped
	if runErr != nil {
		reason := "error"
		if errors.Is(runErr, context.Canceled) {
			reason = "interrupted"
		}
		stopped = &rundir.Stopped{Reason: reason, Error: runErr.Error(), Phase: bar.where()}
	}
	if err := run.Finish(stopped); err != nil {
		return errors.Join(runErr, err)
	}
	printProbeSummary(stdout, res)
	fmt.Fprintf(stdout, "wrote %s\n", dir)
	if runErr != nil {
		return fmt.Errorf("%w (partial results in %s, marked incomplete)", runErr, dir)
	}
	return nil
}

// modelNameOf names a model for the probe's tables: its config's
// _name_or_path, else the config file's directory and model type.
func modelNameOf(path string, spec *modelspec.Spec) string {
	if b, err := os.ReadFile(path); err == nil {
		var c struct {
			NameOrPath string `json:"_name_or_path"`
		}
		if json.Unmarshal(b, &c) == nil && c.NameOrPath != "" {
			return c.NameOrPath
		}
	}
	name := filepath.Base(filepath.Dir(path))
	if name == "." || name == "/" {
		name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	if spec.ModelType != "" {
		name += " (" + spec.ModelType + ")"
	}
	return name
}

func hostInfo() rundir.Host {
	h := rundir.Host{OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU()}
	h.Hostname, _ = os.Hostname()
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h.Kernel = strings.TrimSpace(string(b))
	}
	return h
}

func printProbeSummary(w io.Writer, res *probe.Result) {
	for _, group := range [][]probe.DeviceResult{res.Devices, res.Concurrent} {
		for _, d := range group {
			g := d.GPU
			fmt.Fprintf(w, "\nGPU %d  %s  %.0f GB  %d SMs  (%s)\n", g.Ordinal, g.Name, float64(g.TotalMemoryBytes)/1e9, g.Multiprocessors, d.Mode)
			fmt.Fprintf(w, "  %6s %10s %10s %9s %10s %7s\n", "B", "intensity", "TFLOP/s", "ms/call", "spread", "calls")
			for _, p := range d.GEMM {
				if len(p.RepeatTimesMS) == 0 {
					continue
				}
				fmt.Fprintf(w, "  %6d %10.1f %10.1f %9.4f %9.1f%% %7d\n", p.Batch, p.Intensity, p.TFLOPS, p.TimeMS.Median, p.TimeMS.SpreadPct, p.CallsPerRepeat)
			}
			for _, p := range d.Bandwidth {
				fmt.Fprintf(w, "  %-12s %5d MiB %8.0f GB/s (spread %.1f%%)\n", p.Method, p.BufferBytes>>20, p.GBps, p.TimeMS.SpreadPct)
			}
			fmt.Fprintf(w, "  bandwidth        %.0f GB/s  (%s, %d MiB buffer, bytes read + written)\n", d.BandwidthGBps, d.BandwidthMethod, d.BandwidthBufferBytes>>20)
			fmt.Fprintf(w, "  read-only        %.0f GB/s\n", d.ReadBandwidthGBps)
			fmt.Fprintf(w, "  peak observed    %.1f TFLOP/s  (B=%d)\n", d.PeakTFLOPS, d.PeakBatch)
			fmt.Fprintf(w, "  empirical ridge  %.0f FLOP/byte\n", d.RidgeFLOPsPerByte)
			if d.PeakFP8TFLOPS > 0 {
				fmt.Fprintf(w, "  FP8 peak         %.1f TFLOP/s  (B=%d, E4M3 through cuBLASLt), ridge %.0f FLOP/byte, 90%% at batch %d\n",
					d.PeakFP8TFLOPS, d.PeakFP8Batch, d.RidgeFP8FLOPsPerByte, d.KneeFP8Batch)
			}
			if floors := deviceFloors(res, d); len(floors) > 0 {
				fmt.Fprintf(w, "  %s decode step, weight GEMMs only (attention not included):\n", res.Model)
				for _, fl := range floors {
					fmt.Fprintf(w, "    B=%-4d %-8s %8.3f ms  (%.2f GB of weights: %.0f GB/s)\n", fl.Batch, fl.DType, fl.GEMMSeconds*1e3, fl.WeightBytes/1e9, fl.WeightBytes/fl.GEMMSeconds/1e9)
				}
			}
			if d.KneeBatch > 0 {
				fmt.Fprintf(w, "  90%% of peak at   batch %d\n", d.KneeBatch)
			} else {
				fmt.Fprintf(w, "  90%% of peak at   not reached\n")
			}
		}
	}
	for _, warn := range res.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
}

// progressBar draws one line on stderr: a bar per GPU run and the point
// being measured, redrawn in place on a terminal and printed line by line
// otherwise (a log file gets one line per point).
type progressBar struct {
	w     io.Writer
	tty   bool
	mu    sync.Mutex
	last  string
	point probe.Progress // the point in progress
}

// where says which point was in progress, for the manifest of a probe that
// stopped: "probe GPU 0 solo: GEMM B=64 (point 9 of 23)".
func (b *progressBar) where() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.point
	if p.Steps == 0 {
		return "probe (before the first point)"
	}
	what := progressWhat(p)
	return fmt.Sprintf("probe GPU %d %s: %s (point %d of %d)", p.Ordinal, p.Mode, what, p.Step, p.Steps)
}

func newProgressBar(w io.Writer) *progressBar {
	b := &progressBar{w: w}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			b.tty = true
		}
	}
	return b
}

func progressLine(p probe.Progress) string {
	const width = 24
	filled := 0
	if p.Steps > 0 {
		filled = width * p.Step / p.Steps
	}
	what := progressWhat(p)
	return fmt.Sprintf("probe GPU %d %-10s [%s%s] %2d/%d %s", p.Ordinal, p.Mode, strings.Repeat("#", filled), strings.Repeat(".", width-filled), p.Step, p.Steps, what)
}

// deviceFloors is one device's measured decode-step floors (solo runs only).
func deviceFloors(res *probe.Result, d probe.DeviceResult) []rundir.StepFloor {
	if d.Mode != probe.ModeSolo {
		return nil
	}
	var out []rundir.StepFloor
	for _, f := range rundir.StepFloors(res.ModelGEMMRows()) {
		if f.Device == int32(d.GPU.Ordinal) {
			out = append(out, f)
		}
	}
	return out
}

// progressWhat names the point being measured.
func progressWhat(p probe.Progress) string {
	switch p.Phase {
	case "bandwidth":
		return fmt.Sprintf("bandwidth %s %d MiB", p.Method, p.BufferBytes>>20)
	case "gemm_fp8":
		return fmt.Sprintf("GEMM FP8 B=%d", p.Batch)
	case "model_gemm":
		return fmt.Sprintf("model %s %s B=%d", p.Op, p.DType, p.Batch)
	}
	return fmt.Sprintf("GEMM B=%d", p.Batch)
}

func (b *progressBar) update(p probe.Progress) {
	b.mu.Lock()
	defer b.mu.Unlock()
	line := progressLine(p)
	b.point = p
	if b.tty {
		fmt.Fprintf(b.w, "\r\033[K%s", line)
	} else {
		fmt.Fprintln(b.w, line)
	}
	b.last = line
}

func (b *progressBar) done() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tty && b.last != "" {
		fmt.Fprint(b.w, "\r\033[K")
	}
}
