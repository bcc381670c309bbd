package compare

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/rundir"
)

// The dataset `headroom index` writes: four tables of Parquet files, hive
// partitioned by the UTC day each run started (TABLE/day=YYYY-MM-DD/…), so
// DuckDB, Trino, Spark and Athena read it as it is. Every row carries its
// run's run_id; times are int64 Unix nanoseconds (_ns) and TIMESTAMP
// (_time, microseconds, UTC); no column is unsigned; tags are a
// MAP<STRING, STRING>. docs/compare.md documents the columns and gives the
// CREATE TABLE statements.
const (
	DatasetRuns         = "runs"
	DatasetLevels       = "levels"
	DatasetRequests     = "requests"
	DatasetLevelSummary = "level_summary"
)

// DatasetTables lists the dataset's tables.
var DatasetTables = []string{DatasetRuns, DatasetLevels, DatasetRequests, DatasetLevelSummary}

// DatasetRun is one run in the dataset's runs table.
type DatasetRun struct {
	RunID string `parquet:"run_id"`
	Path  string `parquet:"path"` // where the run was read from
	Label string `parquet:"label"`
	// Group is the run's group under --group-by in `compare --index`; ""
	// in the dataset, which is not grouped.
	Group      string            `parquet:"group"`
	Date       string            `parquet:"date"` // UTC day of the start, YYYY-MM-DD
	Tags       map[string]string `parquet:"tags"` // KEY=VALUE tags; a bare KEY maps to ""
	Kinds      string            `parquet:"kinds"`
	SourceTool string            `parquet:"source_tool"`
	Complete   bool              `parquet:"complete"`
	// LeftOut says why compare would list the run apart (a LeftOut*
	// code: it failed or measured nothing); NULL for a run with numbers.
	LeftOut *string `parquet:"left_out"`
	// StopReason and StopError are why the collector stopped early, as its
	// manifest says ("error", "connection refused"); NULL when it did not.
	StopReason      *string   `parquet:"stop_reason"`
	StopError       *string   `parquet:"stop_error"`
	HeadroomVersion string    `parquet:"headroom_version"`
	FormatVersion   int64     `parquet:"format_version"`
	StartNS         int64     `parquet:"start_ns"`
	StartTime       time.Time `parquet:"start_time"`
	EndNS           *int64    `parquet:"end_ns"`
	EndTime         time.Time `parquet:"end_time"`
	DurationS       *float64  `parquet:"duration_s"`
	Hostname        string    `parquet:"hostname"`
	GPUName         string    `parquet:"gpu_name"`
	GPUCount        int64     `parquet:"gpu_count"`
	Driver          string    `parquet:"driver"`
	EngineName      string    `parquet:"engine_name"`
	EngineVersion   string    `parquet:"engine_version"`
	Model           string    `parquet:"model"`
	Quantization    string    `parquet:"quantization"`
	DType           string    `parquet:"dtype"`
	BaseURL         string    `parquet:"base_url"`
	// The workload (manifest.workload).
	Endpoint           string    `parquet:"endpoint"`
	Mode               string    `parquet:"mode"`
	PromptDist         string    `parquet:"prompt_tokens_dist"`
	PromptMean         *float64  `parquet:"prompt_tokens_mean"`
	PromptStdDev       *float64  `parquet:"prompt_tokens_stddev"`
	PromptMin          *int64    `parquet:"prompt_tokens_min"`
	PromptMax          *int64    `parquet:"prompt_tokens_max"`
	OutputDist         string    `parquet:"output_tokens_dist"`
	OutputMean         *float64  `parquet:"output_tokens_mean"`
	OutputStdDev       *float64  `parquet:"output_tokens_stddev"`
	OutputMin          *int64    `parquet:"output_tokens_min"`
	OutputMax          *int64    `parquet:"output_tokens_max"`
	FixedOutput        bool      `parquet:"fixed_output"`
	SharedPrefixTokens int64     `parquet:"shared_prefix_tokens"`
	Dataset            string    `parquet:"dataset"`
	Seed               int64     `parquet:"seed"`
	Temperature        float64   `parquet:"temperature"`
	ConcurrencyLevels  []int64   `parquet:"concurrency_levels"`
	RatesRPS           []float64 `parquet:"rates_rps"`
	MaxConcurrency     int64     `parquet:"max_concurrency"`
	RequestsPerLevel   int64     `parquet:"requests_per_level"`
	DurationPerLevelS  float64   `parquet:"duration_per_level_s"`
	WarmupPerLevel     int64     `parquet:"warmup_requests_per_level"`
	// SLO is the SLO the index was built with (--slo), "" without one.
	SLO string `parquet:"slo"`
	// Headline numbers, as `headroom compare` shows them.
	Levels          int64    `parquet:"levels"`
	Requests        int64    `parquet:"requests"`
	Errors          int64    `parquet:"errors"`
	PeakOutputTokS  *float64 `parquet:"peak_output_tok_per_s"`
	PeakConcurrency *int64   `parquet:"peak_concurrency"`
	TPOTKneeConc    *int64   `parquet:"tpot_knee_concurrency"`
	PlateauConc     *int64   `parquet:"plateau_concurrency"`
	RecommendedConc *int64   `parquet:"recommended_concurrency"`
	Wall            *string  `parquet:"wall"`
	WallShort       *string  `parquet:"wall_short"`
	BaselineTPOTS   *float64 `parquet:"baseline_tpot_p50_s"`
	SLOOutputTokS   *float64 `parquet:"slo_output_tok_per_s"`
	USDPerMTok      *float64 `parquet:"usd_per_mtok_output"`
	ProbePeakFLOPS  *float64 `parquet:"probe_peak_flop_per_s"`
	ProbeBandwidth  *float64 `parquet:"probe_bandwidth_bytes_per_s"`
	ProbeRidge      *float64 `parquet:"probe_ridge_flop_per_byte"`
}

// DatasetLevel is one load level of a run (the run's levels table).
type DatasetLevel struct {
	RunID       string    `parquet:"run_id"`
	LevelIndex  int32     `parquet:"level_index"`
	Concurrency int64     `parquet:"concurrency"`
	RateRPS     float64   `parquet:"rate_rps"`
	StartNS     int64     `parquet:"start_ns"`
	StartTime   time.Time `parquet:"start_time"`
	WarmupEndNS int64     `parquet:"warmup_end_ns"`
	EndNS       int64     `parquet:"end_ns"`
	EndTime     time.Time `parquet:"end_time"`
	Requests    int64     `parquet:"requests"`
	Errors      int64     `parquet:"errors"`
	Complete    bool      `parquet:"complete"`
}

// DatasetRequest is one request (the run's requests table, with TTFT and
// E2E worked out). request_id is unique across runs: a format-1 run's
// "level-seq" ids get its run_id in front.
type DatasetRequest struct {
	RunID                  string    `parquet:"run_id"`
	RequestID              string    `parquet:"request_id"`
	LevelIndex             int32     `parquet:"level_index"`
	Concurrency            int64     `parquet:"concurrency"`
	Seq                    int64     `parquet:"seq"`
	Warmup                 bool      `parquet:"warmup"`
	Endpoint               string    `parquet:"endpoint"`
	IntendedSendNS         int64     `parquet:"intended_send_ns"`
	SendNS                 int64     `parquet:"send_ns"`
	SendTime               time.Time `parquet:"send_time"`
	FirstTokenNS           *int64    `parquet:"first_token_ns"`
	EndNS                  int64     `parquet:"end_ns"`
	TTFTS                  *float64  `parquet:"ttft_s"` // first_token_ns − send_ns
	E2ES                   float64   `parquet:"e2e_s"`  // end_ns − send_ns
	PromptTokensTarget     int64     `parquet:"prompt_tokens_target"`
	OutputTokensTarget     int64     `parquet:"output_tokens_target"`
	ClientChunks           int64     `parquet:"client_chunks"`
	ServerPromptTokens     *int64    `parquet:"server_prompt_tokens"`
	ServerCompletionTokens *int64    `parquet:"server_completion_tokens"`
	FinishReason           string    `parquet:"finish_reason"`
	Status                 string    `parquet:"status"`
	HTTPStatus             int32     `parquet:"http_status"`
	Error                  string    `parquet:"error"`
}

// DatasetSummary is one level's numbers as the run's report gives them
// (nearest-rank percentiles over the measured, successful requests).
type DatasetSummary struct {
	RunID         string   `parquet:"run_id"`
	Load          string   `parquet:"load"` // "c=8" or "4 req/s"
	Concurrency   int64    `parquet:"concurrency"`
	RateRPS       float64  `parquet:"rate_rps"`
	Requests      int64    `parquet:"requests"`
	Errors        int64    `parquet:"errors"`
	OutputTokPerS float64  `parquet:"output_tok_per_s"`
	TTFTP50S      *float64 `parquet:"ttft_p50_s"`
	TTFTP99S      *float64 `parquet:"ttft_p99_s"`
	TPOTP50S      *float64 `parquet:"tpot_p50_s"`
	TPOTP99S      *float64 `parquet:"tpot_p99_s"`
	E2EP50S       *float64 `parquet:"e2e_p50_s"`
	E2EP99S       *float64 `parquet:"e2e_p99_s"`
}

// DatasetStore is where a dataset is kept: a local directory or an
// object-store prefix. Names are slash-separated, relative to the dataset.
type DatasetStore interface {
	// List names every file under dir.
	List(dir string) ([]string, error)
	Read(name string) ([]byte, error)
	// Write stores a whole file; a reader sees it whole or not at all.
	Write(name string, data []byte) error
}

// LocalDataset is a dataset in a local directory; Write writes beside the
// target and renames it into place.
type LocalDataset string

func (d LocalDataset) List(dir string) ([]string, error) {
	var names []string
	root := string(d)
	err := filepath.WalkDir(filepath.Join(root, dir), func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return filepath.SkipAll
			}
			return err
		}
		if !e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			rel, _ := filepath.Rel(root, p)
			names = append(names, filepath.ToSlash(rel))
		}
		return nil
	})
	return names, err
}

func (d LocalDataset) Read(name string) ([]byte, error) {
	return os.ReadFile(filepath.Join(string(d), filepath.FromSlash(name)))
}

func (d LocalDataset) Write(name string, data []byte) error {
	p := filepath.Join(string(d), filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, p)
}

// IndexStats says what an index run did.
type IndexStats struct {
	Runs, Skipped, Requests int
	Files                   []string
}

// IndexedRunIDs reads the run ids already in the dataset's runs table.
func IndexedRunIDs(st DatasetStore) (map[string]bool, error) {
	names, err := st.List(DatasetRuns)
	if err != nil {
		return nil, err
	}
	ids := map[string]bool{}
	for _, n := range names {
		if !strings.HasSuffix(n, ".parquet") {
			continue
		}
		data, err := st.Read(n)
		if err != nil {
			return nil, err
		}
		rows, err := rundir.DecodeParquet[struct {
			RunID string `parquet:"run_id"`
		}](data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		for _, r := range rows {
			ids[r.RunID] = true
		}
	}
	return ids, nil
}

// flushRows is how many rows the index buffers, over all days, before it
// writes them as part files, bounding memory on large archives.
const flushRows = 256 << 10

// Index adds the runs in dirs that the dataset does not hold yet: runs
// already indexed (by run_id) are skipped, and the new ones go into new
// part files (part-<batch>-<n>.parquet, batch a fresh UUID), so files
// already there are never rewritten. Runs load and are summarised on every
// CPU with the analysis of `headroom report` (set), one at a time each, so
// memory stays bounded by the buffers, not by the archive.
func Index(ctx context.Context, dirs []rundir.Dir, st DatasetStore, set analyze.Settings) (IndexStats, error) {
	return IndexWith(ctx, dirs, st, set, "")
}

// IndexWith is Index with a summary cache (see SummaryCache): a run whose
// own summary holds (runsummary.go) or that the cache holds is loaded for
// its rows (levels and requests only) but not analysed again, and a run it
// does not hold is added to it, so that a compare of the same runs with
// the same settings after an index reads only the cache.
func IndexWith(ctx context.Context, dirs []rundir.Dir, st DatasetStore, set analyze.Settings, cache SummaryCache) (IndexStats, error) {
	var stats IndexStats
	have, err := IndexedRunIDs(st)
	if err != nil {
		return stats, err
	}
	w := &datasetWriter{st: st, batch: rundir.NewRunID(), parts: map[string]*partition{}}
	set.BootstrapResamples = 0
	slo := ""
	if set.SLO != nil {
		slo = set.SLO.Spec
	}
	setJSON, err := settingsJSON(set)
	if err != nil {
		return stats, err
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	err = parallelOn(ctx, workersFor(dirs), len(dirs), func(i int) error {
		// The manifest is read once: for the run_id, the summary's key and
		// the rows.
		raw, m, ownSum, err := readRun(dirs[i], true, setJSON, false)
		if err != nil {
			if _, merr := dirs[i].Manifest(); merr != nil {
				return merr // in the words of every other command
			}
			return err
		}
		mu.Lock()
		skip := have[m.RunID] || seen[m.RunID]
		seen[m.RunID] = true
		if skip {
			stats.Skipped++
		}
		mu.Unlock()
		if skip {
			return nil
		}
		var s Run
		var key string
		var hit bool
		if m.Complete {
			s, key, hit = summaryOf(dirs[i], raw, m, ownSum, "", setJSON, cache, false)
		}
		opts := loadOptions
		// With the summary known, the rows need only the levels and
		// requests tables; when the run's own summary keeps the levels
		// rows, only the requests table.
		opts.RowsOnly, opts.Manifest = hit, m
		if ownSum != nil && ownSum.LevelsKept {
			opts.Levels = &ownSum.Levels
		}
		run, err := analyze.LoadFrom(dirs[i], opts)
		if err != nil {
			return err
		}
		if !hit {
			if s, err = summarize(run, set); err != nil {
				return fmt.Errorf("%s: %w", run.Dir, err)
			}
			if key != "" {
				if err := cache.put(key, s); err != nil {
					return err
				}
			}
		}
		s.Label = cmp.Or(m.Label, path.Base(strings.TrimRight(run.Dir, "/")))
		rows := datasetRows(run, s, slo)
		mu.Lock()
		stats.Runs++
		stats.Requests += len(rows.requests)
		mu.Unlock()
		return w.add(rows)
	})
	if err != nil {
		return stats, err
	}
	if err := w.flushAll(ctx); err != nil {
		return stats, err
	}
	stats.Files = w.files
	slices.Sort(stats.Files)
	return stats, nil
}

type runRows struct {
	day      string
	run      DatasetRun
	levels   []DatasetLevel
	requests []DatasetRequest
	summary  []DatasetSummary
}

// partition buffers one day's rows of every table, the levels, requests
// and summary rows as each run's slices (encoded in turn, never copied into
// one).
type partition struct {
	runs     []DatasetRun
	levels   [][]DatasetLevel
	requests [][]DatasetRequest
	summary  [][]DatasetSummary
	rows     [3]int // levels, requests and summary rows buffered
	n        int    // part files written
}

type datasetWriter struct {
	st    DatasetStore
	batch string
	mu    sync.Mutex
	parts map[string]*partition
	files []string
	// buffered counts the rows held in parts (requests and runs), which
	// flushRows bounds.
	buffered int
}

func (w *datasetWriter) add(r runRows) error {
	w.mu.Lock()
	p := w.parts[r.day]
	if p == nil {
		p = &partition{}
		w.parts[r.day] = p
	}
	p.runs = append(p.runs, r.run)
	p.levels = append(p.levels, r.levels)
	p.requests = append(p.requests, r.requests)
	p.summary = append(p.summary, r.summary)
	p.rows[0] += len(r.levels)
	p.rows[1] += len(r.requests)
	p.rows[2] += len(r.summary)
	w.buffered += len(r.requests) + 1
	if w.buffered < flushRows {
		w.mu.Unlock()
		return nil
	}
	// Past the bound, every day's buffer goes out as a part of its own.
	out := map[string]partition{}
	for day, p := range w.parts {
		if len(p.runs) > 0 {
			out[day] = *p
			*p = partition{n: p.n + 1}
		}
	}
	w.buffered = 0
	w.mu.Unlock()
	for day, p := range out {
		if err := w.write(day, &p); err != nil {
			return err
		}
	}
	return nil
}

// flushAll writes what every day holds, the days on every CPU: it is the
// end of the index, when the runs' workers are done.
func (w *datasetWriter) flushAll(ctx context.Context) error {
	var days []string
	for day, p := range w.parts {
		if len(p.runs) > 0 {
			days = append(days, day)
		}
	}
	return parallel(ctx, len(days), func(i int) error {
		return w.write(days[i], w.parts[days[i]])
	})
}

// write stores one part of each table for the day. The runs part goes
// last: a run is in the dataset (and skipped by the next index) only once
// its levels, requests and summary are.
func (w *datasetWriter) write(day string, p *partition) error {
	name := func(table string) string {
		return fmt.Sprintf("%s/day=%s/part-%s-%05d.parquet", table, day, w.batch, p.n)
	}
	put := func(table string, data []byte, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %w", name(table), err)
		}
		if err := w.st.Write(name(table), data); err != nil {
			return err
		}
		w.mu.Lock()
		w.files = append(w.files, name(table))
		w.mu.Unlock()
		return nil
	}
	if p.rows[0] > 0 {
		data, err := rundir.EncodeParquetParts(p.levels)
		if err := put(DatasetLevels, data, err); err != nil {
			return err
		}
	}
	if p.rows[1] > 0 {
		data, err := rundir.EncodeParquetParts(p.requests)
		if err := put(DatasetRequests, data, err); err != nil {
			return err
		}
	}
	if p.rows[2] > 0 {
		data, err := rundir.EncodeParquetParts(p.summary)
		if err := put(DatasetLevelSummary, data, err); err != nil {
			return err
		}
	}
	data, err := rundir.EncodeParquet(p.runs)
	return put(DatasetRuns, data, err)
}

func datasetRows(run *analyze.Run, s Run, slo string) runRows {
	m := run.Manifest
	r := runRow(s, m, unusable(s, m))
	r.SLO = slo
	out := runRows{day: r.Date, run: r}
	out.levels, out.requests, out.summary = datasetDetail(run, s)
	return out
}

// runRow is a run's row of the runs table (and of runs.parquet).
func runRow(s Run, m *rundir.Manifest, leftOut string) DatasetRun {
	r := DatasetRun{
		RunID: m.RunID, Path: s.Dir, Label: s.Label, Group: s.Group, Date: m.StartTime.UTC().Format("2006-01-02"),
		Tags: tagMap(m.Tags), Kinds: strings.Join(m.Kinds, ","),
		SourceTool: s.SourceTool, Complete: m.Complete, HeadroomVersion: m.HeadroomVersion, FormatVersion: int64(m.FormatVersion),
		StartNS: m.StartTime.UnixNano(), StartTime: m.StartTime.UTC(), Hostname: m.Host.Hostname,
		GPUName: s.GPUName, GPUCount: int64(s.GPUCount), Driver: s.Driver,
		EngineName: s.EngineName, EngineVersion: s.EngineVer, Model: s.Model, Quantization: s.Quantization,
	}
	if leftOut != "" {
		r.LeftOut = &leftOut
	}
	if st := m.Stopped; st != nil {
		r.StopReason, r.StopError = nonEmpty(st.Reason), nonEmpty(st.Error)
	}
	if !m.EndTime.IsZero() {
		r.EndNS, r.EndTime = ptr(m.EndTime.UnixNano()), m.EndTime.UTC()
	}
	if s.DurationS > 0 {
		r.DurationS = ptr(s.DurationS)
	}
	if e := m.Engine; e != nil {
		r.DType, r.BaseURL = e.DType, e.BaseURL
	}
	if w := m.Workload; w != nil {
		r.Endpoint, r.Mode, r.FixedOutput = w.Endpoint, w.Mode, w.FixedOutput
		r.PromptDist, r.PromptMean, r.PromptStdDev, r.PromptMin, r.PromptMax = distColumns(w.Prompt)
		r.OutputDist, r.OutputMean, r.OutputStdDev, r.OutputMin, r.OutputMax = distColumns(w.Output)
		r.SharedPrefixTokens, r.Dataset, r.Seed, r.Temperature = int64(w.SharedPrefixTokens), w.Dataset, w.Seed, w.Temperature
		for _, l := range w.Levels {
			r.ConcurrencyLevels = append(r.ConcurrencyLevels, int64(l))
		}
		r.RatesRPS = w.RatesRPS
		r.MaxConcurrency, r.RequestsPerLevel = int64(w.MaxConcurrency), int64(w.RequestsPerLevel)
		r.DurationPerLevelS, r.WarmupPerLevel = w.DurationPerLevelS, int64(w.WarmupPerLevel)
	}
	if sw := s.Sweep; sw != nil {
		r.Levels, r.Requests, r.Errors = int64(len(sw.Levels)), int64(sw.Requests), int64(sw.Errors)
		r.PeakOutputTokS, r.PeakConcurrency = positive(sw.PeakOutputTokPerS), positiveInt(sw.PeakConcurrency)
		r.TPOTKneeConc, r.PlateauConc, r.RecommendedConc = positiveInt(sw.TPOTKneeConcurrency), positiveInt(sw.PlateauConcurrency), positiveInt(sw.RecommendedConc)
		r.Wall, r.WallShort = nonEmpty(sw.Wall), nonEmpty(wallShort(sw))
		r.BaselineTPOTS, r.SLOOutputTokS, r.USDPerMTok = positive(sw.BaselineTPOTP50S), positive(sw.SLOOutputTokPerS), positive(sw.USDPerMTokOutput)
	}
	if rl := s.Roofline; rl != nil {
		r.ProbePeakFLOPS, r.ProbeBandwidth, r.ProbeRidge = positive(rl.PeakFLOPPerS), positive(rl.BandwidthBytesPerS), positive(rl.RidgeFLOPPerByte)
	}
	return r
}

// wallShort is the wall_short column: the walls in a line with their loads,
// "kv_cache at c=8; then compute at c=32", codes and load identifiers for a
// query to group by (the reports say the walls in words).
func wallShort(sw *SweepSummary) string {
	if sw.Wall == "" {
		return ""
	}
	s := sw.Wall
	if sw.WallAt != (analyze.LoadKey{}) {
		s += " at " + sw.WallAt.ID()
	}
	for _, w := range sw.Then {
		s += "; then " + w.Wall + " at " + w.At.ID()
	}
	return s
}

// datasetDetail is a run's rows of the levels, requests and level_summary
// tables.
func datasetDetail(run *analyze.Run, s Run) (levels []DatasetLevel, requests []DatasetRequest, summary []DatasetSummary) {
	id := run.Manifest.RunID
	levels, requests = make([]DatasetLevel, 0, len(run.Levels)), make([]DatasetRequest, 0, len(run.Requests))
	for _, l := range run.Levels {
		levels = append(levels, DatasetLevel{RunID: id, LevelIndex: l.LevelIndex, Concurrency: l.Concurrency, RateRPS: l.RateRPS,
			StartNS: l.StartNS, StartTime: time.Unix(0, l.StartNS).UTC(), WarmupEndNS: l.WarmupEndNS, EndNS: l.EndNS,
			EndTime: time.Unix(0, l.EndNS).UTC(), Requests: l.Requests, Errors: l.Errors, Complete: l.Complete})
	}
	oldIDs := !strings.HasPrefix(firstID(run.Requests), id)
	for _, q := range run.Requests {
		rid := q.RequestID
		if oldIDs {
			rid = id + "-" + rid // a format-1 run: ids unique within it only
		}
		dq := DatasetRequest{RunID: id, RequestID: rid, LevelIndex: q.LevelIndex, Concurrency: q.Concurrency, Seq: q.Seq,
			Warmup: q.Warmup, Endpoint: q.Endpoint, IntendedSendNS: q.IntendedSendNS, SendNS: q.SendNS,
			SendTime: time.Unix(0, q.SendNS).UTC(), FirstTokenNS: q.FirstTokenNS, EndNS: q.EndNS, E2ES: float64(q.EndNS-q.SendNS) / 1e9,
			PromptTokensTarget: q.PromptTokensTarget, OutputTokensTarget: q.OutputTokensTarget, ClientChunks: q.ClientChunks,
			ServerPromptTokens: q.ServerPromptTokens, ServerCompletionTokens: q.ServerCompletionTokens,
			FinishReason: q.FinishReason, Status: q.Status, HTTPStatus: q.HTTPStatus, Error: q.Error}
		if q.FirstTokenNS != nil {
			dq.TTFTS = ptr(float64(*q.FirstTokenNS-q.SendNS) / 1e9)
		}
		requests = append(requests, dq)
	}
	if sw := s.Sweep; sw != nil {
		for _, l := range sw.Levels {
			summary = append(summary, DatasetSummary{RunID: id, Load: l.Load.ID(), Concurrency: int64(l.Concurrency), RateRPS: l.RateRPS,
				Requests: int64(l.Requests), Errors: int64(l.Errors), OutputTokPerS: l.OutputTokPerS,
				TTFTP50S: positive(l.TTFTP50S), TTFTP99S: positive(l.TTFTP99S), TPOTP50S: positive(l.TPOTP50S),
				TPOTP99S: positive(l.TPOTP99S), E2EP50S: positive(l.E2EP50S), E2EP99S: positive(l.E2EP99S)})
		}
	}
	return levels, requests, summary
}

func firstID(reqs []rundir.RequestRow) string {
	if len(reqs) == 0 {
		return ""
	}
	return reqs[0].RequestID
}

func tagMap(tags []string) map[string]string {
	if len(tags) == 0 {
		return nil
	}
	out := make(map[string]string, len(tags))
	for _, t := range tags {
		k, v, _ := strings.Cut(t, "=")
		out[k] = v
	}
	return out
}

func distColumns(d rundir.Dist) (kind string, mean, sd *float64, lo, hi *int64) {
	if d.Kind == "" && d.Mean == 0 {
		return "", nil, nil, nil, nil
	}
	kind, mean = d.Kind, ptr(d.Mean)
	if d.StdDev > 0 {
		sd = ptr(d.StdDev)
	}
	if d.Max > 0 && d.Max >= d.Min {
		lo, hi = ptr(int64(d.Min)), ptr(int64(d.Max))
	}
	return kind, mean, sd, lo, hi
}
