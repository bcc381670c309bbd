package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/headroom-llm/headroom/collect/probe"
	"github.com/headroom-llm/headroom/cuda"
	"github.com/headroom-llm/headroom/internal/termsafe"
	"github.com/headroom-llm/headroom/modelspec"
)

// probeFlags are the command line of `headroom probe`.
type probeFlags struct {
	out       string
	devices   []int // nil: all
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
		Long: `probe measures what the silicon can do, without Python: the bandwidth of a large device-to-device copy (bytes read plus
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
	f.devices = []int{0}
	parsedVar(fl, &f.devices, "devices", "gpus", "0", `GPUs to probe: CUDA ordinals like "0,1", or "all" (each alone, then all at once); default 0`, parseDevices)
	intsVar(fl, &f.batches, "batches", 1, "1,16,256", probe.DefaultBatches, "batch sizes B of the (B,K)@(K,N) GEMM sweep")
	fl.IntVar(&f.k, "k", probe.DefaultK, "inner dimension K of the GEMM")
	fl.IntVar(&f.n, "n", probe.DefaultN, "output dimension N of the GEMM")
	fl.IntVar(&f.repeats, "repeats", probe.DefaultRepeats, "timed windows per point; the median is reported")
	fl.DurationVar(&f.window, "window", probe.DefaultWindow, "device time per timed window of back-to-back calls")
	defaultMi := make([]int, len(probe.DefaultBufferSizes))
	for i, s := range probe.DefaultBufferSizes {
		defaultMi[i] = int(s >> 20)
	}
	intsVar(fl, &f.buffersMi, "buffers", 1, "256,1024", defaultMi, "bandwidth buffer sizes in MiB")
	fl.BoolVar(&f.noNVML, "no-nvml", false, "do not sample clocks, power and throttling through NVML")
	fl.StringSliceVar(&f.dtypes, "dtype", []string{"bf16"}, "GEMM dtypes: bf16, and fp8 (E4M3 through cuBLASLt, the ceiling of FP8-served models) on GPUs that have it")
	fl.StringVar(&f.modelConfig, "model-config", "", "Hugging Face config.json of the served model: also time its own decode GEMMs (QKV, O, gate/up, down, LM head; MoE experts) at --model-batches, the measured step floor")
	intsVar(fl, &f.modelBatches, "model-batches", 1, "1,8,64", probe.DefaultModelBatches, "decode batches at which --model-config's GEMMs are timed")
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
	return splitList(s, `"all" or CUDA ordinals like 0,1`, func(p string) (int, error) {
		d, err := strconv.Atoi(p)
		if err != nil || d < 0 {
			return 0, errors.New("not an ordinal")
		}
		return d, nil
	})
}

func runProbe(ctx context.Context, stdout, stderr io.Writer, f probeFlags) error {
	sizes := make([]uint64, len(f.buffersMi))
	for i, mi := range f.buffersMi {
		sizes[i] = uint64(mi) << 20
	}
	bar := newProgressBar(stderr)
	opts := []probe.Option{
		probe.WithBatches(f.batches...), probe.WithShape(f.k, f.n), probe.WithRepeats(f.repeats),
		probe.WithWindow(f.window), probe.WithBufferSizes(sizes...), probe.WithProgress(bar.update),
		probe.WithCopyLaunch(f.copyThreads, f.copyBlocksPerSM),
	}
	if f.devices != nil {
		opts = append(opts, probe.WithDevices(f.devices...))
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
	if f.modelConfig != "" {
		spec, err := modelspec.Read(f.modelConfig)
		if err != nil {
			return usageError{err}
		}
		opts = append(opts, probe.WithModelGEMMs(spec, modelNameOf(f.modelConfig, spec), f.modelBatches...))
	}
	if f.noNVML {
		opts = append(opts, probe.WithoutNVML())
	}
	p, err := probe.New(opts...)
	if err != nil {
		return usageError{err}
	}
	dir := f.out
	if dir == "" {
		dir = "headroom-probe-" + time.Now().UTC().Format("20060102-150405")
	}
	// An s3:// run is written here and mirrored as it is written.
	o, err := newRunOutput(ctx, dir)
	if err != nil {
		return err
	}
	dir = o.name()
	run, res, err := p.Record(ctx, o.dir)
	bar.done()
	if run != nil {
		writeSummary(stderr, run)
	}
	uerr := o.finish()
	if run == nil {
		// Nothing was measured (no driver, no GPU, no cuBLAS): no run was written.
		if errors.Is(err, cuda.ErrLibraryNotFound) {
			return fmt.Errorf("probe: %w", err)
		}
		return err
	}
	if uerr != nil {
		return errors.Join(err, uerr)
	}
	if perr := res.WriteSummary(stdout); perr != nil {
		return errors.Join(err, perr)
	}
	fmt.Fprintf(stdout, "wrote %s\n", dir)
	if err != nil {
		return fmt.Errorf("%w (partial results in %s, marked incomplete)", err, dir)
	}
	return nil
}

// progressBar draws one line on stderr: a bar per GPU run and the point
// being measured, redrawn in place on a terminal and printed line by line
// otherwise (a log file gets one line per point).
type progressBar struct {
	w    io.Writer
	tty  bool
	mu   sync.Mutex
	last string
}

func newProgressBar(w io.Writer) *progressBar {
	b := &progressBar{w: termsafe.Raw(w)} // its own control sequences, and the terminal test
	if f, ok := b.w.(*os.File); ok {
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
	return fmt.Sprintf("probe GPU %d %-10s [%s%s] %2d/%d %s", p.Ordinal, p.Mode, strings.Repeat("#", filled), strings.Repeat(".", width-filled), p.Step, p.Steps, p.Point())
}

func (b *progressBar) update(p probe.Progress) {
	b.mu.Lock()
	defer b.mu.Unlock()
	line := progressLine(p)
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
