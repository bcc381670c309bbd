// Package importer turns results of other tools into run directories, so
// the analyzer can read old results next to headroom's own runs.
//
// Each format is detected from the content, never from the file name. Every
// import records in the manifest's source.lacks what the format does not
// carry, and in notes which times were reconstructed rather than measured,
// so the report can say how far each number can be trusted.
package importer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/headroom-llm/headroom/collect/server"
	"github.com/headroom-llm/headroom/internal/buildinfo"
	"github.com/headroom-llm/headroom/internal/uniq"
	"github.com/headroom-llm/headroom/rundir"
)

// Options are settings shared by every importer.
type Options struct {
	// Date is when the imported measurement was taken. Zero means the time
	// the file records, else the file's modification time (noted as a guess).
	Date  time.Time
	Label string
	// Tags are added to the run's tags ("key=value" by convention, so
	// `headroom compare --group-by tag:key` can group by them).
	Tags []string
}

// Kind names a format Import knows.
type Kind string

const (
	KindSeedRoofline     Kind = "seed-roofline"      // roofline_<GPU>.json of the seed's script 01
	KindSeedSweep        Kind = "seed-sweep"         // serving_sweep.json of the seed's script 02
	KindVLLMBench        Kind = "vllm-bench-serve"   // vllm bench serve --save-result (and --save-detailed), vllm bench sweep
	KindAIPerfRecords    Kind = "aiperf-records"     // AIPerf profile_export.jsonl (one record per request)
	KindAIPerfSummary    Kind = "aiperf-summary"     // AIPerf profile_export_aiperf.json or .csv (aggregates only)
	KindGenAIPerf        Kind = "genai-perf"         // GenAI-Perf / perf_analyzer profile_export.json
	KindGenAIPerfSummary Kind = "genai-perf-summary" // GenAI-Perf profile_export_genai_perf.json (aggregates only)
	KindGuideLLM         Kind = "guidellm"           // guidellm benchmarks.json or benchmarks.yaml
	kindUnknown          Kind = ""
)

// knownFormats is the list of formats named in "unknown format" errors.
const knownFormats = "the seed's roofline_<GPU>.json or serving_sweep.json, vllm bench serve --save-result JSON (or vllm bench sweep's run=N.json, summary.json, summary.csv), " +
	"AIPerf profile_export.jsonl, profile_export_aiperf.json or .csv, GenAI-Perf profile_export.json or profile_export_genai_perf.json, guidellm benchmarks.json or .yaml"

// Detect guesses the format of a file from its content.
func Detect(data []byte) (Kind, error) {
	f := fileRef{data: data}
	if err := f.decode(); err != nil {
		return kindUnknown, err
	}
	return f.detect()
}

// vllmMarkers are keys only vllm bench serve results have; a file with one
// of them is read as one, so a partial result is refused with the field it
// lacks rather than as an unknown format.
var vllmMarkers = []string{"median_ttft_ms", "mean_ttft_ms", "p99_ttft_ms", "median_tpot_ms", "total_token_throughput", "max_concurrent_requests", "burstiness"}

func (f *fileRef) detect() (Kind, error) {
	first := objectKeys(f.values[0])
	if first == nil {
		return kindUnknown, fmt.Errorf("unknown format: the file does not start with a JSON object; expected %s", knownFormats)
	}
	switch {
	case has(first, "peak_tflops", "sweep"):
		return KindSeedRoofline, nil
	case has(first, "rows", "config"):
		return KindSeedSweep, nil
	case has(first, "metadata", "metrics"):
		return KindAIPerfRecords, nil
	case has(first, "experiments"):
		return KindGenAIPerf, nil
	case has(first, "benchmarks"):
		return KindGuideLLM, nil
	case has(first, "input_config") && isGenAIPerfConfig(first["input_config"]):
		return KindGenAIPerfSummary, nil
	case has(first, "input_config") && (has(first, "records") || has(first, "request_latency") || has(first, "request_throughput")):
		return KindAIPerfSummary, nil
	case f.syntax == "csv" && has(first, "records"):
		return KindAIPerfSummary, nil
	case has(first, "duration", "completed") && (has(first, "request_throughput") || has(first, "output_throughput")):
		return KindVLLMBench, nil
	}
	for _, k := range vllmMarkers {
		if has(first, k) {
			return KindVLLMBench, nil
		}
	}
	if has(first, "time_to_first_token") || has(first, "request_latency") {
		// GenAI-Perf's or AIPerf's statistics without the input_config
		// that says which tool and which load.
		return kindUnknown, errors.New(`statistics without "input_config": the load level is unknown (import the tool's per-request export, profile_export.json or profile_export.jsonl, instead)`)
	}
	return kindUnknown, fmt.Errorf("unknown format: expected %s", knownFormats)
}

// isGenAIPerfConfig tells GenAI-Perf's input_config (flat: subcommand,
// service_kind, endpoint_type; nested: perf_analyzer, endpoint.service_kind)
// from AIPerf's (loadgen, endpoint.model_names).
func isGenAIPerfConfig(raw json.RawMessage) bool {
	ic := objectKeys(raw)
	if ic == nil || has(ic, "loadgen") {
		return false
	}
	if has(ic, "subcommand") || has(ic, "service_kind") || has(ic, "perf_analyzer") {
		return true
	}
	ep := objectKeys(ic["endpoint"])
	return ep != nil && has(ep, "service_kind")
}

func (f fileRef) sha256() string {
	sum := sha256.Sum256(f.data)
	return hex.EncodeToString(sum[:])
}

// Import converts the file (or artifact directory) at path into a new run
// directory at dir.
func Import(path, dir string, opts Options) (*rundir.Run, error) {
	return ImportFiles([]string{path}, dir, opts)
}

// ImportFiles converts one or more result files of the same tool into one
// run directory: each file (or each result inside a file) becomes a load
// level, so a sweep run one concurrency at a time imports as one sweep.
// Files that hold several run groups (ImportAll) are refused, naming what
// differs.
func ImportFiles(paths []string, dir string, opts Options) (*rundir.Run, error) {
	groups, err := prepare(paths, opts)
	if err != nil {
		return nil, err
	}
	if len(groups) > 1 {
		var names []string
		for _, g := range groups {
			names = append(names, g.name)
		}
		return nil, fmt.Errorf("the files hold %d runs (%s): import them with `headroom import`, which writes one run directory each", len(groups), strings.Join(names, "; "))
	}
	return groups[0].write(dir, opts, paths)
}

// ImportAll converts result files into one run directory per run group:
// the files' results are grouped by what their tool records about the
// configuration (model, endpoint, server and benchmark settings, metadata,
// closed or open loop), and results repeated at the same load become
// separate runs. One group is written at dir; several are written at
// dir/<what sets the group apart>, in order.
func ImportAll(paths []string, dir string, opts Options) ([]*rundir.Run, error) {
	groups, err := prepare(paths, opts)
	if err != nil {
		return nil, err
	}
	if len(groups) == 1 {
		run, err := groups[0].write(dir, opts, paths)
		if err != nil {
			return nil, err
		}
		return []*rundir.Run{run}, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var runs []*rundir.Run
	for _, g := range groups {
		run, err := g.write(filepath.Join(dir, g.name), opts, paths)
		if err != nil {
			return runs, err
		}
		runs = append(runs, run)
	}
	return runs, nil
}

// prepared is one run to write: a seed file, or a group of sweep sources.
type prepared struct {
	name string
	seed *fileRef
	kind Kind
	srcs []*sweepSource
}

func (p prepared) write(dir string, opts Options, paths []string) (*rundir.Run, error) {
	if p.seed != nil {
		var run *rundir.Run
		var err error
		if p.kind == KindSeedRoofline {
			run, err = importSeedRoofline(p.seed.path, p.seed.data, dir, opts)
		} else {
			run, err = importSeedSweep(p.seed.path, p.seed.data, dir, opts)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.seed.path, err)
		}
		return run, nil
	}
	run, err := writeSweep(dir, p.srcs, opts)
	if err != nil {
		if len(paths) == 1 {
			return nil, fmt.Errorf("%s: %w", paths[0], err)
		}
		return nil, err
	}
	return run, nil
}

// prepare reads and parses every input and groups the results into runs.
func prepare(paths []string, opts Options) ([]prepared, error) {
	if len(paths) == 0 {
		return nil, errors.New("no file to import")
	}
	var srcs []*sweepSource
	for _, p := range paths {
		files, err := readInputs(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			kind, err := f.detect()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.path, err)
			}
			if kind == KindSeedRoofline || kind == KindSeedSweep {
				if len(paths) > 1 || len(files) > 1 {
					return nil, fmt.Errorf("%s: the seed's files import one at a time", f.path)
				}
				return []prepared{{seed: &f, kind: kind}}, nil
			}
			src, err := parseSweep(kind, f, opts)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.path, err)
			}
			srcs = append(srcs, src...)
		}
	}
	for _, s := range srcs[1:] {
		if s.kind != srcs[0].kind {
			return nil, fmt.Errorf("%s is %s but %s is %s: import files of one tool into one run", s.file, s.kind, srcs[0].file, srcs[0].kind)
		}
	}
	return groupSources(srcs), nil
}

func parseSweep(kind Kind, f fileRef, opts Options) ([]*sweepSource, error) {
	switch kind {
	case KindVLLMBench:
		return parseVLLM(f, opts)
	case KindAIPerfRecords:
		return parseAIPerfRecords(f)
	case KindAIPerfSummary:
		return parseAIPerfSummary(f)
	case KindGenAIPerf:
		return parseGenAIPerf(f, opts)
	case KindGenAIPerfSummary:
		return parseGenAIPerfSummary(f)
	case KindGuideLLM:
		return parseGuideLLM(f)
	}
	return nil, fmt.Errorf("format %s cannot be imported", kind)
}

// newFileManifest starts the manifest of an import. Its start time is
// opts.Date, else recorded (the time the file says the measurement began),
// else the first file's modification time, noted as a guess.
func newFileManifest(files []fileRef, opts Options, recorded time.Time, kind string) (*rundir.Manifest, error) {
	var names, sums []string
	for _, f := range files {
		names = append(names, f.path)
		sums = append(sums, f.sha256())
	}
	m := &rundir.Manifest{
		HeadroomVersion: buildinfo.Version(),
		Kinds:           []string{kind, rundir.KindImport},
		Label:           opts.Label,
		Tags:            slices.Clone(opts.Tags),
		StartTime:       opts.Date.UTC(),
		// Several files are listed in order, separated by "; ", with their
		// hashes in the same order.
		Source: &rundir.Source{File: strings.Join(names, "; "), SHA256: strings.Join(sums, "; ")},
	}
	switch {
	case !opts.Date.IsZero():
	case !recorded.IsZero():
		m.StartTime = recorded.UTC()
	default:
		if files[0].modTime.IsZero() {
			st, err := os.Stat(files[0].path)
			if err != nil {
				return nil, err
			}
			files[0].modTime = st.ModTime()
		}
		m.StartTime = files[0].modTime.UTC()
		m.Notes = append(m.Notes, "start_time is the source file's modification time: the file records no date")
	}
	return m, nil
}

// newImportManifest builds the manifest of a sweep import from its sources.
func newImportManifest(srcs []*sweepSource, opts Options, kind string) (*rundir.Manifest, error) {
	files := make([]fileRef, len(srcs))
	var recorded time.Time
	for i, s := range srcs {
		files[i] = fileRef{path: s.file}
		if !s.start.IsZero() && (recorded.IsZero() || s.start.Before(recorded)) {
			recorded = s.start
		}
	}
	m, err := newFileManifest(files, opts, recorded, kind)
	if err != nil {
		return nil, err
	}
	var sums []string
	seenFile := map[string]bool{}
	var names []string
	for _, s := range srcs {
		if seenFile[s.file] {
			continue
		}
		seenFile[s.file] = true
		names = append(names, s.file)
		sums = append(sums, s.sha256)
	}
	m.Source.File, m.Source.SHA256 = strings.Join(names, "; "), strings.Join(sums, "; ")
	m.Source.Tool = srcs[0].tool
	if m.Label == "" {
		m.Label = srcs[0].label
	}
	for _, s := range srcs {
		m.Tags = uniq.AppendNonZero(m.Tags, s.tags...)
		m.Source.Lacks = uniq.AppendNonZero(m.Source.Lacks, s.lacks...)
		m.Notes = uniq.AppendNonZero(m.Notes, s.notes...)
		m.Warnings = uniq.AppendNonZero(m.Warnings, s.warnings...)
	}
	return m, nil
}

// httpStatusFromReason maps an HTTP reason phrase ("Bad Request") to its
// status code; 0 when it is not one. aiohttp-based tools record only the
// phrase of a failed response.
func httpStatusFromReason(reason string) int {
	if reason == "" {
		return 0
	}
	for code := 400; code < 600; code++ {
		if t := http.StatusText(code); t != "" && strings.EqualFold(t, reason) {
			return code
		}
	}
	return 0
}

// rawString decodes a JSON string value; "" for anything else.
func rawString(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) != nil {
		return ""
	}
	return s
}

// redactURL hides a URL's credentials (server.RedactURL), as the sweep
// does with its own base URL: a run's manifest is meant to be shared.
func redactURL(s string) string { return server.RedactURL(s) }

// redactCommand hides the secrets of a recorded command line (an API key
// flag, a token-like value), as the sweep does with --server-cmd.
func redactCommand(cmd string) string {
	words := server.SplitCommand(cmd)
	red := server.RedactFlags(words)
	if slices.Equal(words, red) {
		return cmd // nothing to hide: keep it exactly as recorded
	}
	return strings.Join(red, " ")
}
