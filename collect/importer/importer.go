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
	KindSeedRoofline  Kind = "seed-roofline"    // roofline_<GPU>.json of the seed's script 01
	KindSeedSweep     Kind = "seed-sweep"       // serving_sweep.json of the seed's script 02
	KindVLLMBench     Kind = "vllm-bench-serve" // vllm bench serve --save-result (and --save-detailed)
	KindAIPerfRecords Kind = "aiperf-records"   // AIPerf profile_export.jsonl (one record per request)
	KindAIPerfSummary Kind = "aiperf-summary"   // AIPerf profile_export_aiperf.json (aggregates only)
	KindGenAIPerf     Kind = "genai-perf"       // GenAI-Perf / perf_analyzer profile_export.json
	KindGuideLLM      Kind = "guidellm"         // guidellm benchmarks.json
	kindUnknown       Kind = ""
)

// knownFormats is the list of formats named in "unknown format" errors.
const knownFormats = "the seed's roofline_<GPU>.json or serving_sweep.json, vllm bench serve --save-result JSON, " +
	"AIPerf profile_export.jsonl or profile_export_aiperf.json, GenAI-Perf profile_export.json, guidellm benchmarks.json"

// Detect guesses the format of a file from its content.
func Detect(data []byte) (Kind, error) {
	vals, err := jsonValues(data)
	if err != nil {
		return kindUnknown, fmt.Errorf("not JSON or JSON Lines: %w", err)
	}
	first := objectKeys(vals[0])
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
	case has(first, "input_config") && (has(first, "records") || has(first, "request_latency") || has(first, "request_throughput")):
		return KindAIPerfSummary, nil
	case has(first, "duration", "completed") && (has(first, "request_throughput") || has(first, "output_throughput")):
		return KindVLLMBench, nil
	}
	return kindUnknown, fmt.Errorf("unknown format: expected %s", knownFormats)
}

// fileRef is one input file.
type fileRef struct {
	path    string
	data    []byte
	modTime time.Time
}

func (f fileRef) sha256() string {
	sum := sha256.Sum256(f.data)
	return hex.EncodeToString(sum[:])
}

// resultFiles are the names looked for, in order, when a directory is given.
var resultFiles = []string{
	"profile_export.jsonl",       // AIPerf per-request records
	"profile_export.json",        // GenAI-Perf per-request export
	"benchmarks.json",            // guidellm
	"profile_export_aiperf.json", // AIPerf aggregates (only when no records)
}

// readInput reads a result file, or the result file inside an artifact
// directory (AIPerf, GenAI-Perf and guidellm write directories).
func readInput(path string) (fileRef, error) {
	st, err := os.Stat(path)
	if err != nil {
		return fileRef{}, err
	}
	if st.IsDir() {
		found := ""
		for _, name := range resultFiles {
			if fst, err := os.Stat(filepath.Join(path, name)); err == nil && fst.Mode().IsRegular() {
				found = filepath.Join(path, name)
				break
			}
		}
		if found == "" {
			return fileRef{}, fmt.Errorf("%s: a directory without a result file (looked for %s)", path, strings.Join(resultFiles, ", "))
		}
		path = found
		if st, err = os.Stat(path); err != nil {
			return fileRef{}, err
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fileRef{}, err
	}
	return fileRef{path: path, data: data, modTime: st.ModTime()}, nil
}

// Import converts the file (or artifact directory) at path into a new run
// directory at dir.
func Import(path, dir string, opts Options) (*rundir.Run, error) {
	return ImportFiles([]string{path}, dir, opts)
}

// ImportFiles converts one or more result files of the same tool into one
// run directory: each file (or each result inside a file) becomes a load
// level, so a sweep run one concurrency at a time imports as one sweep.
// The seed's files import one at a time.
func ImportFiles(paths []string, dir string, opts Options) (*rundir.Run, error) {
	if len(paths) == 0 {
		return nil, errors.New("no file to import")
	}
	var srcs []*sweepSource
	for _, p := range paths {
		f, err := readInput(p)
		if err != nil {
			return nil, err
		}
		kind, err := Detect(f.data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.path, err)
		}
		if kind == KindSeedRoofline || kind == KindSeedSweep {
			if len(paths) > 1 {
				return nil, fmt.Errorf("%s: the seed's files import one at a time", f.path)
			}
			var run *rundir.Run
			if kind == KindSeedRoofline {
				run, err = importSeedRoofline(f.path, f.data, dir, opts)
			} else {
				run, err = importSeedSweep(f.path, f.data, dir, opts)
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.path, err)
			}
			return run, nil
		}
		src, err := parseSweep(kind, f, opts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.path, err)
		}
		srcs = append(srcs, src...)
	}
	run, err := writeSweep(dir, srcs, opts)
	if err != nil {
		if len(paths) == 1 {
			return nil, fmt.Errorf("%s: %w", paths[0], err)
		}
		return nil, err
	}
	return run, nil
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
