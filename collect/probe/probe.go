// Package probe measures a GPU's roofline the way the seed's script 01
// does, without Python: the memory bandwidth of a large device-to-device
// copy (bytes read plus written), the bf16 GEMM throughput of
// (B,K)@(K,N) = (B,8192)@(8192,8192) over a sweep of batch sizes B, and
// from them the peak, the ridge point (peak / bandwidth) and the knee (the
// smallest B reaching 90% of the peak).
//
// It drives the GPU through package cuda (libcuda and cuBLAS, loaded at
// run time) and reads clocks, power, temperature and throttle reasons
// through NVML while it runs. Every GEMM's output is checked against a CPU
// reference and every copy against a checksum; a wrong answer fails the probe.
package probe

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/headroom-llm/headroom/cuda"
	"github.com/headroom-llm/headroom/cuda/nvml"
)

// Prober runs the probe with fixed settings.
type Prober struct{ cfg config }

// New checks the options and returns a Prober.
func New(opts ...Option) (*Prober, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Prober{cfg: cfg}, nil
}

// Run probes the selected GPUs, each on its own and then, if there are
// several, all at once. It needs libcuda and cuBLAS: without them it
// returns a one-line *cuda.LibraryError. On cancellation or failure it
// returns what was measured so far, with Complete false, and the error.
func (p *Prober) Run(ctx context.Context) (*Result, error) {
	cfg := &p.cfg
	res := &Result{Started: cfg.now(), K: cfg.k, N: cfg.n, KneeFraction: cfg.kneeFraction, Model: cfg.modelName}
	if cfg.model != nil {
		res.ModelConfig = cfg.model.Source
	}
	defer func() { res.Finished = cfg.now() }()

	drv, err := cuda.OpenDriver(cfg.libs)
	if err != nil {
		return res, err
	}
	if res.CUDADriverVersion, err = drv.Version(); err != nil {
		return res, err
	}
	count, err := drv.DeviceCount()
	if err != nil {
		return res, err
	}
	if count == 0 {
		return res, errors.New("probe: the CUDA driver sees no GPU (check nvidia-smi and CUDA_VISIBLE_DEVICES)")
	}
	ordinals := cfg.devices
	if len(ordinals) == 0 {
		for i := 0; i < count; i++ {
			ordinals = append(ordinals, i)
		}
	}
	for _, o := range ordinals {
		if o >= count {
			return res, fmt.Errorf("probe: GPU %d does not exist: the CUDA driver sees %d GPU(s), 0 to %d", o, count, count-1)
		}
	}

	nvmlDevs := map[int]*nvml.Device{}
	if !cfg.noNVML {
		lib, err := nvml.Open(cfg.nvmlPath)
		if err != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("no GPU telemetry (clocks, power, throttling are not recorded): %v", err))
		} else {
			defer func() {
				if err := lib.Close(); err != nil {
					res.Warnings = append(res.Warnings, err.Error())
				}
			}()
			if v, err := lib.DriverVersion(); err == nil {
				res.DriverVersion = v
			}
			for _, o := range ordinals {
				info, err := drv.Device(o)
				if err != nil {
					return res, err
				}
				dev, err := lib.DeviceByPCIBusID(info.PCIBusID)
				if err != nil {
					res.Warnings = append(res.Warnings, fmt.Sprintf("GPU %d: no telemetry: %v", o, err))
					continue
				}
				nvmlDevs[o] = dev
			}
		}
	}

	in := makeInputs(cfg)
	newRun := func(o int, mode Mode) *deviceRun {
		return &deviceRun{cfg: cfg, drv: drv, in: in, ordinal: o, mode: mode, nvmlDev: nvmlDevs[o]}
	}
	collect := func(r *deviceRun) {
		if res.CUBLASVersion == "" {
			res.CUBLASVersion, res.CUBLASPath = r.blasV, r.blasP
		}
		if res.CUBLASLtVersion == "" {
			res.CUBLASLtVersion, res.CUBLASLtPath = r.ltV, r.ltP
		}
		res.Warnings = append(res.Warnings, r.warned...)
	}
	for _, o := range ordinals {
		r := newRun(o, ModeSolo)
		d, err := runOnOwnThread(ctx, r)
		res.Devices = append(res.Devices, d)
		collect(r)
		if err != nil {
			return res, err
		}
	}
	if len(ordinals) > 1 {
		runs := make([]*deviceRun, len(ordinals))
		results := make([]DeviceResult, len(ordinals))
		errs := make([]error, len(ordinals))
		var wg sync.WaitGroup
		for i, o := range ordinals {
			runs[i] = newRun(o, ModeConcurrent)
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i], errs[i] = runOnOwnThread(ctx, runs[i])
			}()
		}
		wg.Wait()
		res.Concurrent = results
		for _, r := range runs {
			collect(r)
		}
		if err := errors.Join(errs...); err != nil {
			return res, err
		}
	}
	res.Disagreements = findDisagreements(res.Devices, res.Concurrent, cfg.disagreeFraction)
	for _, d := range append(slices.Clone(res.Devices), res.Concurrent...) {
		if d.Throttled {
			res.Warnings = append(res.Warnings, fmt.Sprintf("GPU %d (%s) was throttled while probed (%v): its numbers are below what it can do", d.GPU.Ordinal, d.Mode, d.ThrottleReasons))
		}
		res.Warnings = append(res.Warnings, stateWarnings(d)...)
	}
	for _, d := range res.Disagreements {
		res.Warnings = append(res.Warnings, d.Message)
	}
	res.Complete = true
	return res, nil
}

// runOnOwnThread runs r on a new goroutine, which its CUDA context locks to
// an OS thread, and waits for it.
func runOnOwnThread(ctx context.Context, r *deviceRun) (DeviceResult, error) {
	var d DeviceResult
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		d, err = r.run(ctx)
	}()
	<-done
	return d, err
}

// findDisagreements applies the seed's hygiene rule: identical GPUs whose
// peak or bandwidth differ by more than frac have a power or thermal
// problem. Each GPU is compared with the median of the other GPUs of the
// same name in the same mode, and in the concurrent run also with its own
// solo run (sharing power or cooling shows there).
func findDisagreements(solo, concurrent []DeviceResult, frac float64) []Disagreement {
	var out []Disagreement
	metrics := []struct {
		name string
		get  func(DeviceResult) float64
	}{
		{"peak_tflops", func(d DeviceResult) float64 { return d.PeakTFLOPS }},
		{"bandwidth_gbps", func(d DeviceResult) float64 { return d.BandwidthGBps }},
	}
	flag := func(d DeviceResult, metric string, value, baseline float64, against string) {
		if baseline <= 0 || value <= 0 {
			return
		}
		diff := (value - baseline) / baseline
		if diff > frac || diff < -frac {
			out = append(out, Disagreement{
				Ordinal: d.GPU.Ordinal, Mode: d.Mode, Metric: metric, Value: value, Baseline: baseline,
				Against: against, DiffPct: diff * 100,
				Message: fmt.Sprintf("GPU %d (%s, %s): %s %.4g differs by %+.1f%% from the %s (%.4g), more than %.0f%%: look for a power limit or a thermal problem (nvidia-smi -q -d POWER,TEMPERATURE)",
					d.GPU.Ordinal, d.GPU.Name, d.Mode, metric, value, diff*100, against, baseline, frac*100),
			})
		}
	}
	for _, group := range [][]DeviceResult{solo, concurrent} {
		for i, d := range group {
			for _, m := range metrics {
				var others []float64
				for j, e := range group {
					if j != i && e.GPU.Name == d.GPU.Name {
						others = append(others, m.get(e))
					}
				}
				if len(others) == 0 {
					continue
				}
				against := fmt.Sprintf("median of the other %d %s", len(others), d.GPU.Name)
				if len(others) == 1 {
					against = "other " + d.GPU.Name
				}
				flag(d, m.name, m.get(d), Summarize(others).Median, against)
			}
		}
	}
	for _, c := range concurrent {
		for _, s := range solo {
			if s.GPU.Ordinal == c.GPU.Ordinal {
				for _, m := range metrics {
					flag(c, m.name, m.get(c), m.get(s), "same GPU's solo run")
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Ordinal < out[j].Ordinal })
	return out
}
