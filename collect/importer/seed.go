package importer

// The seed scripts of the blog post: roofline_<GPU>.json (script 01) and
// serving_sweep.json (script 02).

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/headroom-llm/headroom/rundir"
)

// seedRoofline is roofline_<GPU>.json as written by the seed's script 01.
type seedRoofline struct {
	GPU          string   `json:"gpu"`
	DType        string   `json:"dtype"`
	BandwidthTBs *float64 `json:"bandwidth_tbs"`
	PeakTFLOPs   *float64 `json:"peak_tflops"`
	Ridge        *float64 `json:"ridge_flops_per_byte"`
	KneeBatch    *int     `json:"knee_batch"`
	Sweep        []struct {
		Batch     int64    `json:"batch"`
		Intensity float64  `json:"intensity"`
		TFLOPs    *float64 `json:"tflops"`
		LatencyMS *float64 `json:"latency_ms"`
	} `json:"sweep"`
}

// The seed's script 01 hard-codes these; its JSON does not record them.
const (
	seedK, seedN        = 8192, 8192
	seedElemBytes       = 2                 // bf16
	seedCopyBufferBytes = 512 * 1024 * 1024 // one 512 MiB buffer copied
	seedCopyCalls       = 20                // timed() default iters
	seedGEMMCalls       = 10                // iters=10 for the GEMM sweep
	seedIntensityRelTol = 1e-9
)

func importSeedRoofline(path string, data []byte, dir string, opts Options) (*rundir.Run, error) {
	var s seedRoofline
	if err := decodeStrict(data, &s); err != nil {
		return nil, err
	}
	switch {
	case s.GPU == "":
		return nil, errors.New(`missing "gpu"`)
	case s.BandwidthTBs == nil || *s.BandwidthTBs <= 0:
		return nil, errors.New(`missing or non-positive "bandwidth_tbs"`)
	case s.PeakTFLOPs == nil || *s.PeakTFLOPs <= 0:
		return nil, errors.New(`missing or non-positive "peak_tflops"`)
	case len(s.Sweep) == 0:
		return nil, errors.New(`"sweep" has no rows`)
	}
	rows := make([]rundir.ProbeGEMMRow, 0, len(s.Sweep))
	for i, r := range s.Sweep {
		if r.Batch <= 0 || r.TFLOPs == nil || r.LatencyMS == nil {
			return nil, fmt.Errorf("sweep[%d]: need batch > 0, tflops and latency_ms", i)
		}
		flop := 2 * float64(r.Batch) * seedK * seedN
		bytes := seedElemBytes * float64(seedK*seedN+r.Batch*seedK+r.Batch*seedN)
		// The file does not say which K and N it used: check the recorded
		// intensity against script 01's shapes rather than assume them.
		if math.Abs(flop/bytes-r.Intensity) > seedIntensityRelTol*r.Intensity {
			return nil, fmt.Errorf("sweep[%d]: intensity %.6g does not match (B,8192)@(8192,8192) at B=%d (%.6g); was the script changed?",
				i, r.Intensity, r.Batch, flop/bytes)
		}
		t := *r.LatencyMS / 1e3
		rows = append(rows, rundir.ProbeGEMMRow{
			Mode: "solo", Batch: r.Batch, K: seedK, N: seedN, DType: "bf16",
			FLOP: flop, Bytes: bytes, Intensity: r.Intensity,
			Repeats: 1, CallsPerRepeat: seedGEMMCalls,
			TimeMedianS: t, TimeMinS: t, TimeMaxS: t,
			FLOPPerS:  *r.TFLOPs * 1e12,
			MaxRelErr: -1,
		})
	}
	bw := *s.BandwidthTBs * 1e12
	bwRow := rundir.ProbeBandwidthRow{
		Mode:        "solo",
		Method:      "torch copy_ (seed script 01)",
		BufferBytes: seedCopyBufferBytes, BytesPerCall: 2 * seedCopyBufferBytes,
		Repeats: 1, CallsPerRepeat: seedCopyCalls,
		BytesPerS: bw,
	}
	bwRow.TimeMedianS = bwRow.BytesPerCall / bw
	bwRow.TimeMinS, bwRow.TimeMaxS = bwRow.TimeMedianS, bwRow.TimeMedianS

	peakBatch := 0
	for _, r := range rows {
		if r.FLOPPerS == *s.PeakTFLOPs*1e12 {
			peakBatch = int(r.Batch)
		}
	}
	probe := &rundir.Probe{ProbeRoofline: rundir.ProbeRoofline{
		DType: "bf16", K: seedK, N: seedN,
		PeakFLOPPerS: *s.PeakTFLOPs * 1e12, PeakBatch: peakBatch,
		BandwidthBytesPerS: bw, BandwidthMethod: bwRow.Method,
		RidgeFLOPPerByte: *s.PeakTFLOPs * 1e12 / bw,
	}}
	if s.KneeBatch != nil {
		probe.KneeBatch = *s.KneeBatch
	}
	m, err := newFileManifest([]fileRef{{path: path, data: data}}, opts, time.Time{}, rundir.KindProbe)
	if err != nil {
		return nil, err
	}
	m.GPUs = []rundir.GPU{{Index: 0, Name: s.GPU}}
	m.Probe = probe
	m.Source.Tool = "seed roofline probe (script 01, PyTorch)"
	m.Source.Lacks = []string{
		"driver and CUDA versions", "GPU clocks, power and throttling during the probe",
		"spread over repeats (one timing per shape)", "validation of the GEMM result",
	}
	if s.DType != "" && s.DType != "torch.bfloat16" {
		m.Warnings = append(m.Warnings, fmt.Sprintf("source dtype is %q, not torch.bfloat16", s.DType))
	}
	run, err := rundir.Create(dir, m)
	if err != nil {
		return nil, err
	}
	if err := rundir.WriteTable(dir, rundir.TableProbeGEMM, rows); err != nil {
		return nil, err
	}
	if err := rundir.WriteTable(dir, rundir.TableProbeBandwidth, []rundir.ProbeBandwidthRow{bwRow}); err != nil {
		return nil, err
	}
	return run, finishUndated(run)
}

// seedSweep is serving_sweep.json as written by the seed's script 02.
type seedSweep struct {
	Config struct {
		BaseURL      string `json:"base_url"`
		Model        string `json:"model"`
		PromptTokens int    `json:"prompt_tokens"`
		OutputTokens int    `json:"output_tokens"`
		Rounds       int    `json:"rounds"`
		Levels       string `json:"levels"`
	} `json:"config"`
	Rows []struct {
		Concurrency    int64    `json:"concurrency"`
		ThroughputTokS *float64 `json:"throughput_tok_s"`
		TTFTP50MS      float64  `json:"ttft_p50_ms"`
		TTFTP99MS      float64  `json:"ttft_p99_ms"`
		TPOTP50MS      float64  `json:"tpot_p50_ms"`
		TPOTP99MS      float64  `json:"tpot_p99_ms"`
		E2EP50S        float64  `json:"e2e_p50_s"`
		Errors         int64    `json:"errors"`
		Completed      int64    `json:"completed"`
	} `json:"rows"`
}

// SeedPercentileMethod names how script 02 computes percentiles.
const SeedPercentileMethod = "nearest rank, sorted[min(floor(n*p/100), n-1)] (seed script 02)"

func importSeedSweep(path string, data []byte, dir string, opts Options) (*rundir.Run, error) {
	var s seedSweep
	if err := decodeStrict(data, &s); err != nil {
		return nil, err
	}
	if len(s.Rows) == 0 {
		return nil, errors.New(`"rows" is empty: the sweep recorded no successful level`)
	}
	rows := make([]rundir.LevelStatsRow, 0, len(s.Rows))
	var levels []int
	for i, r := range s.Rows {
		if r.Concurrency <= 0 || r.ThroughputTokS == nil {
			return nil, fmt.Errorf("rows[%d]: need concurrency > 0 and throughput_tok_s", i)
		}
		levels = append(levels, int(r.Concurrency))
		rows = append(rows, rundir.LevelStatsRow{
			Concurrency: r.Concurrency, RequestsOK: r.Completed, Errors: r.Errors,
			OutputTokPerS: *r.ThroughputTokS,
			TTFTP50S:      r.TTFTP50MS / 1e3, TTFTP99S: r.TTFTP99MS / 1e3,
			TPOTP50S: r.TPOTP50MS / 1e3, TPOTP99S: r.TPOTP99MS / 1e3,
			E2EP50S:          r.E2EP50S,
			PercentileMethod: SeedPercentileMethod,
		})
	}
	m, err := newFileManifest([]fileRef{{path: path, data: data}}, opts, time.Time{}, rundir.KindSweep)
	if err != nil {
		return nil, err
	}
	m.Engine = &rundir.Engine{Name: "unknown (OpenAI-compatible /v1/completions)", BaseURL: redactURL(s.Config.BaseURL), Model: s.Config.Model}
	m.Workload = &rundir.Workload{
		Endpoint: "completions", Mode: "closed", Levels: levels,
		Prompt:          rundir.Dist{Kind: "fixed", Mean: float64(s.Config.PromptTokens)},
		Output:          rundir.Dist{Kind: "fixed", Mean: float64(s.Config.OutputTokens)},
		FixedOutput:     true,
		FixedOutputNote: "min_tokens and ignore_eos were sent; the file does not say whether the server honoured them",
		Tokenizer:       "words (1.3 tokens per word assumed by script 02)",
	}
	if s.Config.Rounds > 0 {
		m.Notes = append(m.Notes, fmt.Sprintf("script 02 sent %d rounds of c requests per level, after a discarded warm-up of min(c, 4) requests with 16 output tokens", s.Config.Rounds))
	}
	m.Source.Tool = "seed serving sweep (script 02, Python aiohttp)"
	m.Source.Lacks = []string{
		"per-request and per-token times", "server log and /metrics", "engine version and flags",
		"GPU and driver", "server-side token counts", "p90 and other percentiles",
	}
	run, err := rundir.Create(dir, m)
	if err != nil {
		return nil, err
	}
	if err := rundir.WriteTable(dir, rundir.TableLevelStats, rows); err != nil {
		return nil, err
	}
	return run, finishUndated(run)
}

// finishUndated marks an import complete. The seed's files record no time,
// so the run's end stays unknown rather than the time of the import.
func finishUndated(run *rundir.Run) error {
	if err := run.Finish(nil); err != nil {
		return err
	}
	run.Manifest.EndTime = time.Time{}
	return run.SaveManifest()
}
