package compare

import (
	"slices"
	"strings"

	"github.com/headroom-llm/headroom/rundir"
)

// IndexRow is one run in runs.parquet, the index `headroom compare --index`
// writes so that DuckDB (or pandas, Polars) can query every run of an
// archive at once. Nullable columns (pointers) are NULL when the run does
// not have the number. docs/compare.md documents the columns.
type IndexRow struct {
	Path            string   `parquet:"path"`
	Label           string   `parquet:"label"`
	Tags            string   `parquet:"tags"` // sorted, comma-separated KEY=VALUE
	Group           string   `parquet:"group"`
	Kinds           string   `parquet:"kinds"`
	SourceTool      string   `parquet:"source_tool"` // imports: the tool; "" for headroom's own runs
	Complete        bool     `parquet:"complete"`
	Date            string   `parquet:"date"` // UTC day of the start, YYYY-MM-DD
	StartNS         int64    `parquet:"start_ns"`
	EndNS           *int64   `parquet:"end_ns"`
	DurationS       *float64 `parquet:"duration_s"`
	GPUName         string   `parquet:"gpu_name"`
	GPUCount        int64    `parquet:"gpu_count"`
	Driver          string   `parquet:"driver"`
	EngineName      string   `parquet:"engine_name"`
	EngineVersion   string   `parquet:"engine_version"`
	Model           string   `parquet:"model"`
	Quantization    string   `parquet:"quantization"`
	Mode            string   `parquet:"mode"`   // closed or open loop
	Levels          int64    `parquet:"levels"` // load levels measured
	Requests        int64    `parquet:"requests"`
	Errors          int64    `parquet:"errors"`
	PeakOutputTokS  *float64 `parquet:"peak_output_tok_per_s"`
	PeakConcurrency *int64   `parquet:"peak_concurrency"`
	TPOTKneeConc    *int64   `parquet:"tpot_knee_concurrency"`
	PlateauConc     *int64   `parquet:"plateau_concurrency"`
	RecommendedConc *int64   `parquet:"recommended_concurrency"`
	// Wall is the diagnosis' verdict (kv_cache, compute, queueing,
	// client_bound, none, inconclusive), WallShort its line with the
	// level; NULL for a probe-only run.
	Wall           *string  `parquet:"wall"`
	WallShort      *string  `parquet:"wall_short"`
	BaselineTPOTS  *float64 `parquet:"baseline_tpot_p50_s"`
	SLOOutputTokS  *float64 `parquet:"slo_output_tok_per_s"`
	USDPerMTok     *float64 `parquet:"usd_per_mtok_output"`
	ProbePeakFLOPS *float64 `parquet:"probe_peak_flop_per_s"`
	ProbeBandwidth *float64 `parquet:"probe_bandwidth_bytes_per_s"`
	ProbeRidge     *float64 `parquet:"probe_ridge_flop_per_byte"`
}

// Index returns one index row per run, in the comparison's order.
func (c *Comparison) Index() []IndexRow {
	rows := make([]IndexRow, len(c.Runs))
	for i, r := range c.Runs {
		tags := append([]string(nil), r.Tags...)
		slices.Sort(tags)
		row := IndexRow{
			Path: r.Dir, Label: r.Label, Tags: strings.Join(tags, ","), Group: r.Group,
			Kinds: strings.Join(r.Kinds, ","), SourceTool: r.SourceTool, Complete: r.Complete,
			Date: r.Start.UTC().Format("2006-01-02"), StartNS: r.Start.UnixNano(),
			GPUName: r.GPUName, GPUCount: int64(r.GPUCount), Driver: r.Driver,
			EngineName: r.EngineName, EngineVersion: r.EngineVer, Model: r.Model, Quantization: r.Quantization, Mode: r.Mode,
		}
		if !r.End.IsZero() {
			row.EndNS = ptr(r.End.UnixNano())
		}
		if r.DurationS > 0 {
			row.DurationS = ptr(r.DurationS)
		}
		if s := r.Sweep; s != nil {
			row.Levels, row.Requests, row.Errors = int64(len(s.Levels)), int64(s.Requests), int64(s.Errors)
			row.PeakOutputTokS = positive(s.PeakOutputTokPerS)
			row.PeakConcurrency = positiveInt(s.PeakConcurrency)
			row.TPOTKneeConc = positiveInt(s.TPOTKneeConcurrency)
			row.PlateauConc = positiveInt(s.PlateauConcurrency)
			row.RecommendedConc = positiveInt(s.RecommendedConc)
			row.Wall, row.WallShort = nonEmpty(s.Wall), nonEmpty(s.WallShort)
			row.BaselineTPOTS = positive(s.BaselineTPOTP50S)
			row.SLOOutputTokS = positive(s.SLOOutputTokPerS)
			row.USDPerMTok = positive(s.USDPerMTokOutput)
		}
		if rl := r.Roofline; rl != nil {
			row.ProbePeakFLOPS = positive(rl.PeakFLOPPerS)
			row.ProbeBandwidth = positive(rl.BandwidthBytesPerS)
			row.ProbeRidge = positive(rl.RidgeFLOPPerByte)
		}
		rows[i] = row
	}
	return rows
}

// WriteIndex writes the comparison's index as one Parquet file.
func (c *Comparison) WriteIndex(path string) error {
	return rundir.WriteParquetFile(path, c.Index())
}

func ptr[T any](v T) *T { return &v }

func positive(v float64) *float64 {
	if v > 0 {
		return &v
	}
	return nil
}

func positiveInt(v int) *int64 {
	if v > 0 {
		x := int64(v)
		return &x
	}
	return nil
}

func nonEmpty(s string) *string {
	if s != "" {
		return &s
	}
	return nil
}
