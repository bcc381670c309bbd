package importer

// Reading the input: a file, or a tool's output directory, decoded into
// JSON values whatever the file's syntax (JSON, JSON Lines, concatenated
// JSON objects, a JSON array of results, YAML, CSV), so every format's
// parser reads JSON.

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// fileRef is one input file.
type fileRef struct {
	path    string
	data    []byte
	modTime time.Time
	// syntax is how the file is written: "json" (also JSON Lines and
	// concatenated values), "yaml" or "csv".
	syntax string
	// values are the file's top-level values as JSON; a JSON array of
	// objects counts as its elements (vllm bench sweep's summary.json).
	values []json.RawMessage
}

// resultFiles are the names looked for, in order, when a directory is given.
var resultFiles = []string{
	"profile_export.jsonl",           // AIPerf per-request records
	"profile_export.json",            // GenAI-Perf per-request export
	"benchmarks.json",                // guidellm
	"benchmarks.yaml",                // guidellm
	"profile_export_aiperf.json",     // AIPerf aggregates (only when no records)
	"profile_export_genai_perf.json", // GenAI-Perf aggregates (only when no per-request export)
	"profile_export_aiperf.csv",      // AIPerf aggregates as CSV
}

// readInputs reads a result file, or the result files of an output
// directory: the first of resultFiles found (AIPerf, GenAI-Perf and
// guidellm write directories), else the run=N.json files of a
// `vllm bench sweep serve` experiment (in the directory or its
// combination directories), else its summary.json.
func readInputs(path string) ([]fileRef, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	paths := []string{path}
	if st.IsDir() {
		paths = nil
		for _, name := range resultFiles {
			if fst, err := os.Stat(filepath.Join(path, name)); err == nil && fst.Mode().IsRegular() {
				paths = []string{filepath.Join(path, name)}
				break
			}
		}
		if paths == nil {
			paths = vllmSweepFiles(path)
		}
		if paths == nil {
			return nil, fmt.Errorf("%s: a directory without a result file (looked for %s, and for the run=N.json or summary.json files of vllm bench sweep)", path, strings.Join(resultFiles, ", "))
		}
	}
	var out []fileRef
	for _, p := range paths {
		f, err := readFile(p)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// vllmSweepFiles lists the measured runs of a vllm bench sweep serve
// experiment directory (or of one combination directory): run=N.json,
// never warmup.json or a failure file. Without any, the summary.json files.
func vllmSweepFiles(dir string) []string {
	var runs, sums []string
	for _, pat := range []string{"run=*.json", "*/run=*.json"} {
		m, _ := filepath.Glob(filepath.Join(dir, pat))
		for _, p := range m {
			if !strings.HasSuffix(p, ".failure.json") {
				runs = append(runs, p)
			}
		}
	}
	for _, pat := range []string{"summary.json", "*/summary.json"} {
		m, _ := filepath.Glob(filepath.Join(dir, pat))
		sums = append(sums, m...)
	}
	slices.Sort(runs)
	slices.Sort(sums)
	if len(runs) > 0 {
		return runs
	}
	return sums
}

func readFile(path string) (fileRef, error) {
	st, err := os.Stat(path)
	if err != nil {
		return fileRef{}, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fileRef{}, err
	}
	f := fileRef{path: path, data: data, modTime: st.ModTime()}
	if err := f.decode(); err != nil {
		return fileRef{}, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// decode fills f.values and f.syntax from f.data.
func (f *fileRef) decode() error {
	trimmed := bytes.TrimSpace(bytes.TrimPrefix(f.data, []byte("\xef\xbb\xbf")))
	if len(trimmed) == 0 {
		return errors.New("the file is empty")
	}
	switch trimmed[0] {
	case '{', '[':
		vals, err := jsonValues(f.data)
		if err != nil {
			return err
		}
		f.syntax, f.values = "json", flattenArray(vals)
		return nil
	}
	if looksCSV(trimmed) {
		vals, err := csvValues(trimmed)
		if err != nil {
			return err
		}
		f.syntax, f.values = "csv", vals
		return nil
	}
	var doc any
	if err := yaml.Unmarshal(f.data, &doc); err != nil {
		return fmt.Errorf("not JSON, JSON Lines, YAML or CSV (%s)", firstLine(err.Error()))
	}
	if _, ok := doc.(map[string]any); !ok {
		return errors.New("not JSON, JSON Lines, YAML or CSV: the file holds no object")
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("YAML that has no JSON form: %s", firstLine(err.Error()))
	}
	f.syntax, f.values = "yaml", []json.RawMessage{raw}
	return nil
}

// flattenArray turns a file that is one JSON array of objects into those
// objects; anything else is kept as it is.
func flattenArray(vals []json.RawMessage) []json.RawMessage {
	if len(vals) != 1 || len(bytes.TrimSpace(vals[0])) == 0 || bytes.TrimSpace(vals[0])[0] != '[' {
		return vals
	}
	var elems []json.RawMessage
	if json.Unmarshal(vals[0], &elems) != nil || len(elems) == 0 {
		return vals
	}
	for _, e := range elems {
		if objectKeys(e) == nil {
			return vals
		}
	}
	return elems
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// looksCSV reports whether the first line is a CSV header of a format
// read here: AIPerf's "Metric,avg,..." or pandas' header of
// vllm bench sweep's summary.csv.
func looksCSV(data []byte) bool {
	line, _, _ := bytes.Cut(data, []byte("\n"))
	line = bytes.TrimSpace(line)
	return bytes.HasPrefix(line, []byte("Metric,")) ||
		(bytes.Count(line, []byte(",")) >= 3 && bytes.Contains(line, []byte("output_throughput")))
}

// csvValues reads a CSV file into JSON values: AIPerf's export (tables of
// statistics separated by a blank line) becomes one object shaped like
// profile_export_aiperf.json's records; any other CSV becomes one object
// per row, keyed by the header (numbers as numbers, empty cells left out,
// cells holding a Python list left out).
func csvValues(data []byte) ([]json.RawMessage, error) {
	if bytes.HasPrefix(data, []byte("Metric,")) {
		return aiperfCSVValues(data)
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("CSV: %w", err)
	}
	var out []json.RawMessage
	for line := 2; ; line++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("CSV: %w", err)
		}
		row := map[string]any{}
		for i, cell := range rec {
			if i >= len(header) || header[i] == "" || cell == "" || strings.HasPrefix(cell, "[") || strings.HasPrefix(cell, "{") {
				continue
			}
			if v, err := strconv.ParseFloat(cell, 64); err == nil && !strings.EqualFold(cell, "nan") {
				row[header[i]] = v
			} else if strings.EqualFold(cell, "inf") || strings.EqualFold(cell, "nan") {
				row[header[i]] = strings.ToLower(cell)
			} else {
				row[header[i]] = cell
			}
		}
		raw, err := json.Marshal(row)
		if err != nil {
			return nil, fmt.Errorf("CSV line %d: %w", line, err)
		}
		out = append(out, raw)
	}
	if len(out) == 0 {
		return nil, errors.New("CSV with a header and no rows")
	}
	return out, nil
}

// aiperfCSVValues reads AIPerf's profile_export_aiperf.csv. Each table
// starts with a header ("Metric,avg,min,max,p1,...,std" or
// "Metric,Value"); rows name a metric in display form with its unit,
// "Time to First Token (ms)", which becomes the JSON export's tag
// (time_to_first_token) and unit. A "Value" becomes avg, as the JSON
// export holds single values.
func aiperfCSVValues(data []byte) ([]json.RawMessage, error) {
	records := map[string]map[string]any{}
	var header []string
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" {
			header = nil
			continue
		}
		cells, err := csv.NewReader(strings.NewReader(line)).Read()
		if err != nil {
			return nil, fmt.Errorf("CSV line %d: %w", i+1, err)
		}
		if header == nil || cells[0] == "Metric" {
			header = cells
			continue
		}
		tag, unit := aiperfTag(cells[0])
		rec := map[string]any{"unit": unit}
		for j := 1; j < len(cells) && j < len(header); j++ {
			v, err := strconv.ParseFloat(strings.TrimSpace(cells[j]), 64)
			if err != nil {
				continue
			}
			key := strings.ToLower(header[j])
			if key == "value" {
				key = "avg"
			}
			rec[key] = v
		}
		records[tag] = rec
	}
	if len(records) == 0 {
		return nil, errors.New("AIPerf CSV without metric rows")
	}
	raw, err := json.Marshal(map[string]any{"records": records})
	if err != nil {
		return nil, err
	}
	return []json.RawMessage{raw}, nil
}

// aiperfTag turns AIPerf's display name of a metric, "Time to First Token
// (ms)", into its tag and unit: time_to_first_token, ms. AIPerf's
// "Benchmark Duration (sec)" is its benchmark_duration in seconds.
func aiperfTag(display string) (tag, unit string) {
	name := strings.TrimSpace(display)
	if i := strings.LastIndexByte(name, '('); i > 0 && strings.HasSuffix(name, ")") {
		unit = strings.TrimSpace(name[i+1 : len(name)-1])
		name = strings.TrimSpace(name[:i])
	}
	tag = strings.ToLower(strings.Join(strings.Fields(name), "_"))
	return tag, unit
}
