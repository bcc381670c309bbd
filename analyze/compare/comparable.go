package compare

import (
	"bytes"
	"encoding/json"
	"fmt"
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
	// Why says what is missing, and why the collector stopped when it did.
	Why string `json:"why"`
	// Run is the run's summary, for the index (runs.parquet); it is not
	// part of comparison.json, where Why says it all.
	Run Run `json:"-"`
}

// unusable says why a summarised run has nothing to compare ("" when it
// has): a sweep without a single successful measured request, or a run
// holding neither sweep levels nor a probe.
func unusable(s Run, m *rundir.Manifest) string {
	var why string
	switch sw := s.Sweep; {
	case sw == nil && s.Roofline == nil && m.HasKind(rundir.KindSweep):
		why = "no request was measured (no sweep level was written)"
	case sw == nil && s.Roofline == nil:
		why = "it holds no sweep level and no probe"
	case sw == nil:
		return ""
	case sw.Requests == 0:
		why = "no request was measured"
	case sw.Requests <= sw.Errors:
		why = fmt.Sprintf("every one of its %d measured requests failed", sw.Requests)
	default:
		return ""
	}
	if st := m.Stopped; st != nil {
		why += "; the collector stopped (" + st.Reason
		if st.Error != "" {
			why += ": " + st.Error
		}
		why += ")"
	} else if !m.Complete {
		why += "; the collector did not finish (killed?)"
	}
	return why
}

// comparability checks the keys of MustMatch over the sweeps of two
// groups. It returns the keys that differ, each with the distinct values
// found, and the sentence saying so ("" when the groups are comparable).
func comparability(c *Comparison, ctx []map[string]string, a, b []int, allowed []string) ([]DiffRow, string) {
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
	if len(rows) == 0 {
		return nil, ""
	}
	parts := make([]string, len(rows))
	for i, r := range rows {
		parts[i] = fmt.Sprintf("%s differs (%s)", r.Key, strings.Join(r.Values, " against "))
	}
	return rows, "not comparable: " + strings.Join(parts, "; ")
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

// leftOutList names the left-out runs and why, for an error.
func leftOutList(l []LeftOut) string {
	parts := make([]string, len(l))
	for i, r := range l {
		parts[i] = r.Dir + ": " + r.Why
	}
	return strings.Join(parts, "; ")
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
