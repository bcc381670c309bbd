package compare

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/headroom-llm/headroom/rundir"
)

// MustMatch are the context keys (see contextFields) whose values the runs
// of two groups must share before the comparison claims a difference
// between the groups: the same requests (endpoint, loop, prompt and output
// lengths, shared prefix, dataset, fixed output lengths) sent to the same
// model at the same quantization, served by the same engine on the same
// GPUs. The key runs are grouped by may differ (that is the comparison),
// and so may keys named in Options.AllowDiffer. A value a run does not
// record ("") is not taken as a difference.
var MustMatch = []string{
	"workload.endpoint", "workload.mode", "workload.prompt_tokens", "workload.output_tokens",
	"workload.shared_prefix_tokens", "workload.dataset", "workload.fixed_output",
	"engine.model", "engine.quantization", "engine.name", "gpu.name", "gpu.count",
}

// LeftOut is a run the comparison lists apart: it failed or measured
// nothing, so it has no numbers to compare and forms no group.
type LeftOut struct {
	Dir      string   `json:"dir"`
	Label    string   `json:"label"`
	Kinds    []string `json:"kinds"`
	Complete bool     `json:"complete"`
	// Why says what is missing (a LeftOut* value); Requests counts the
	// measured requests of a run whose every request failed.
	Why      string `json:"why"`
	Requests int    `json:"requests,omitempty"`
	// Stopped is why the collector stopped, when it said (an incomplete
	// run without it did not finish: killed?).
	Stopped *rundir.Stopped `json:"stopped,omitempty"`
	// Run is the run's summary, for the index (runs.parquet); it is not
	// part of comparison.json.
	Run Run `json:"-"`
}

// Why a run is left out (LeftOut.Why, and runs.parquet's left_out).
const (
	LeftOutNoLevels   = "no_levels"   // a sweep that wrote no level: no request was measured
	LeftOutNoData     = "no_data"     // neither sweep levels nor a probe
	LeftOutNoRequests = "no_requests" // sweep levels without a measured request
	LeftOutAllFailed  = "all_failed"  // every measured request failed
)

// NothingToCompareError is Compare's error when every run is left out.
type NothingToCompareError struct {
	LeftOut []LeftOut
}

func (e *NothingToCompareError) Error() string {
	dirs := make([]string, len(e.LeftOut))
	for i, l := range e.LeftOut {
		dirs[i] = l.Dir
	}
	return "no run has numbers to compare (" + strings.Join(dirs, ", ") + ")"
}

// unusable says why a summarised run has nothing to compare (a LeftOut*
// value, "" when it has): a sweep without a single successful measured
// request, or a run holding neither sweep levels nor a probe.
func unusable(s Run, m *rundir.Manifest) string {
	switch sw := s.Sweep; {
	case sw == nil && s.Roofline == nil && m.HasKind(rundir.KindSweep):
		return LeftOutNoLevels
	case sw == nil && s.Roofline == nil:
		return LeftOutNoData
	case sw == nil:
		return ""
	case sw.Requests == 0:
		return LeftOutNoRequests
	case sw.Requests <= sw.Errors:
		return LeftOutAllFailed
	}
	return ""
}

// comparability checks the keys of MustMatch over the sweeps of two
// groups. It returns the keys that differ, each with the distinct values
// found (none when the groups are comparable).
func comparability(c *Comparison, ctx []map[string]string, a, b []int, allowed []string) []DiffRow {
	var rows []DiffRow
	for _, key := range MustMatch {
		if slices.Contains(allowed, key) {
			continue
		}
		var vals []string
		for _, i := range slices.Concat(a, b) {
			if c.Runs[i].Sweep == nil {
				continue
			}
			if v := ctx[i][key]; v != "" && !slices.Contains(vals, v) {
				vals = append(vals, v)
			}
		}
		if len(vals) > 1 {
			rows = append(rows, DiffRow{Key: key, Values: vals})
		}
	}
	return rows
}

// allowedToDiffer are the keys that may differ between groups: the
// grouping key and the user's.
func allowedToDiffer(opts Options) []string {
	return append([]string{opts.GroupBy}, opts.AllowDiffer...)
}

func contextMaps(runs []Run, ms []*rundir.Manifest) []map[string]string {
	out := make([]map[string]string, len(runs))
	for i, m := range ms {
		fs := contextFields(m)
		mp := make(map[string]string, len(fs))
		for _, f := range fs {
			mp[f.key] = f.value
		}
		out[i] = mp
	}
	return out
}

// manifestValue is the value of a manifest field named by its JSON path,
// dots between the names ("engine.base_url", "workload.max_concurrency",
// "gpus.0.uuid", "host.memory_bytes"), fields unknown to this version
// included; a list of plain values reads as their comma-separated join.
// ok is false when the manifest has no such field.
func manifestValue(m *rundir.Manifest, path string) (string, bool) {
	data, err := rundir.EncodeManifest(m)
	if err != nil {
		return "", false
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return "", false
	}
	for _, name := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			next, ok := x[name]
			if !ok {
				return "", false
			}
			v = next
		case []any:
			i, err := strconv.Atoi(name)
			if err != nil || i < 0 || i >= len(x) {
				return "", false
			}
			v = x[i]
		default:
			return "", false
		}
	}
	return plainValue(v)
}

func plainValue(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", true
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case bool:
		return strconv.FormatBool(x), true
	case []any:
		parts := make([]string, 0, len(x))
		for _, e := range x {
			s, ok := plainValue(e)
			if !ok {
				return "", false
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, ","), true
	}
	return "", false // an object: name one of its fields
}

// tagValue is the value of the run's KEY=VALUE tag, "yes" for a bare KEY
// tag; ok is false when the run has no such tag.
func tagValue(m *rundir.Manifest, key string) (string, bool) {
	for _, t := range m.Tags {
		k, v, hasValue := strings.Cut(t, "=")
		if k == key {
			if !hasValue {
				return "yes", true
			}
			return v, true
		}
	}
	return "", false
}
