package compare

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/headroom-llm/headroom/rundir"
)

// field is one fact of a run's context, under a stable key such as
// "engine.version" or "engine.flag --max-model-len". The keys are what
// --group-by accepts and what the diff of manifests shows.
type field struct {
	key, value string
}

// contextFields flattens what a manifest says about the configuration
// into keyed values, in display order. Measurements (probe results, times)
// and bookkeeping (hashes, notes) are left out: they differ between any
// two runs and say nothing about why.
func contextFields(m *rundir.Manifest) []field {
	var fs []field
	add := func(k, v string) {
		if v != "" {
			fs = append(fs, field{k, v})
		}
	}
	num := func(v float64) string {
		if v == 0 {
			return ""
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	add("label", m.Label)
	tags := slices.Clone(m.Tags)
	slices.Sort(tags)
	add("tags", strings.Join(tags, ", "))
	add("kinds", strings.Join(m.Kinds, ", "))
	add("headroom_version", m.HeadroomVersion)
	if s := m.Source; s != nil {
		add("source.tool", s.Tool)
	}
	if len(m.GPUs) > 0 {
		add("gpu.count", strconv.Itoa(len(m.GPUs)))
		uniq := func(get func(rundir.GPU) string) string {
			var vals []string
			for _, g := range m.GPUs {
				if v := get(g); v != "" && !slices.Contains(vals, v) {
					vals = append(vals, v)
				}
			}
			return strings.Join(vals, ", ")
		}
		add("gpu.name", uniq(func(g rundir.GPU) string { return g.Name }))
		add("gpu.memory", uniq(func(g rundir.GPU) string {
			if g.MemoryBytes == 0 {
				return ""
			}
			return fmt.Sprintf("%.0f GiB", float64(g.MemoryBytes)/(1<<30))
		}))
		add("gpu.driver", uniq(func(g rundir.GPU) string { return g.Driver }))
		add("gpu.cuda_version", uniq(func(g rundir.GPU) string { return g.CUDAVersion }))
		add("gpu.compute_capability", uniq(func(g rundir.GPU) string { return g.ComputeCapability }))
		add("gpu.power_limit_w", uniq(func(g rundir.GPU) string { return num(g.PowerLimitW) }))
		add("gpu.sm_clock_max_mhz", uniq(func(g rundir.GPU) string { return num(float64(g.SMClockMaxMHz)) }))
		add("gpu.interconnect", m.Interconnect())
	}
	if m.HasKind(rundir.KindSweep) {
		// How the model is laid out over the box: what a tensor-parallel
		// server and a set of replicas differ in (compare --group-by layout).
		add("layout", layoutOf(m))
	}
	if e := m.Engine; e != nil {
		add("engine.name", e.Name)
		add("engine.version", e.Version)
		add("engine.model", e.Model)
		add("engine.quantization", e.Quantization)
		add("engine.dtype", e.DType)
		add("engine.max_context_tokens", num(float64(e.MaxContextTokens)))
		for _, f := range parseFlags(e.Flags) {
			add("engine.flag "+f.key, f.value)
		}
		for _, k := range slices.Sorted(maps.Keys(e.Config)) {
			add("engine.config."+k, e.Config[k])
		}
	}
	if w := m.Workload; w != nil {
		add("workload.endpoint", w.Endpoint)
		add("workload.prompt_tokens", w.Prompt.String())
		add("workload.output_tokens", w.Output.String())
		add("workload.shared_prefix_tokens", num(float64(w.SharedPrefixTokens)))
		add("workload.dataset", w.Dataset)
		add("workload.mode", w.Mode)
		if len(w.Levels) > 0 {
			add("workload.levels", intsString(w.Levels))
		}
		if len(w.RatesRPS) > 0 {
			var rs []string
			for _, r := range w.RatesRPS {
				rs = append(rs, num(r))
			}
			add("workload.rates_rps", strings.Join(rs, ","))
		}
		add("workload.requests_per_level", num(float64(w.RequestsPerLevel)))
		add("workload.duration_per_level_s", num(w.DurationPerLevelS))
		add("workload.warmup_requests_per_level", num(float64(w.WarmupPerLevel)))
		add("workload.temperature", strconv.FormatFloat(w.Temperature, 'g', -1, 64))
		add("workload.fixed_output", strconv.FormatBool(w.FixedOutput))
		add("workload.tokenizer", w.Tokenizer)
		add("workload.seed", strconv.FormatInt(w.Seed, 10))
		add("workload.balance", w.Balance)
	}
	if p := m.Probe; p != nil {
		add("probe.dtype", p.DType)
		add("probe.shape", fmt.Sprintf("(B,%d)@(%d,%d)", p.K, p.K, p.N))
		add("probe.bandwidth_method", p.BandwidthMethod)
	}
	h := m.Host
	add("host.hostname", h.Hostname)
	add("host.os", h.OS)
	add("host.arch", h.Arch)
	add("host.kernel", h.Kernel)
	add("host.cpu_model", h.CPUModel)
	add("host.cpus", num(float64(h.CPUs)))
	return fs
}

// layoutOf names how a sweep's model was served: "2 replicas" (a set of
// servers the load was spread over), else "one server" (tensor-parallel or
// not: the engine's flags say which).
func layoutOf(m *rundir.Manifest) string {
	if n := len(m.Replicas); n > 1 {
		return strconv.Itoa(n) + " replicas"
	}
	return "one server"
}

// parseFlags pairs server arguments into options and values:
// "--max-model-len 4096" and "--max-model-len=4096" both give
// --max-model-len = 4096, a bare "--enable-prefix-caching" gives "set", and
// arguments before the first option (the command, the model) are one
// "(positional)" entry.
func parseFlags(args []string) []field {
	var out []field
	var positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" || isNumber(a) {
			positional = append(positional, a)
			continue
		}
		if k, v, ok := strings.Cut(a, "="); ok {
			out = append(out, field{k, v})
			continue
		}
		if i+1 < len(args) && (!strings.HasPrefix(args[i+1], "-") || isNumber(args[i+1])) {
			out = append(out, field{a, args[i+1]})
			i++
			continue
		}
		out = append(out, field{a, "set"})
	}
	if len(positional) > 0 {
		out = append([]field{{"(positional)", strings.Join(positional, " ")}}, out...)
	}
	return out
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

func intsString(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// DiffRow is one context key whose value differs between the runs
// compared; Values holds one value per run ("" where a run has none).
type DiffRow struct {
	Key    string   `json:"key"`
	Values []string `json:"values"`
}

// diffManifests returns the keys whose values are not the same for every
// run (differs) and those that are (same, with the shared value), both in
// the order keys first appear.
func diffManifests(ms []*rundir.Manifest) (differs, same []DiffRow) {
	var order []string
	vals := map[string][]string{}
	for i, m := range ms {
		for _, f := range contextFields(m) {
			if _, ok := vals[f.key]; !ok {
				order = append(order, f.key)
				vals[f.key] = make([]string, len(ms))
			}
			vals[f.key][i] = f.value
		}
	}
	for _, k := range order {
		v := vals[k]
		row := DiffRow{Key: k, Values: v}
		if allEqual(v) {
			same = append(same, DiffRow{Key: k, Values: v[:1]})
		} else {
			differs = append(differs, row)
		}
	}
	return differs, same
}

func allEqual(v []string) bool {
	for _, s := range v[1:] {
		if s != v[0] {
			return false
		}
	}
	return true
}

// groupValue is a run's value of a --group-by key: "label" (the label, else
// the directory name), "dir", "tag:KEY" (the value of a KEY=VALUE tag, or
// "yes" for a bare KEY tag), any context key ("engine.version",
// "gpu.name", "engine.flag --enable-prefix-caching", ...), any manifest
// field by its JSON path ("engine.base_url", "gpus.0.uuid", see
// manifestValue), or a tag's key alone. A run without the key groups under
// "(none)".
func groupValue(key, dir string, m *rundir.Manifest) string {
	switch {
	case key == "" || key == "label":
		if m.Label != "" {
			return m.Label
		}
		return filepath.Base(dir)
	case key == "dir":
		return dir
	case strings.HasPrefix(key, "tag:"):
		if v, ok := tagValue(m, strings.TrimPrefix(key, "tag:")); ok {
			return v
		}
		return none
	}
	for _, f := range contextFields(m) {
		if f.key == key {
			return f.value
		}
	}
	if v, ok := manifestValue(m, key); ok && v != "" {
		return v
	}
	if v, ok := tagValue(m, key); ok {
		return v
	}
	return none
}

// hasGroupKey reports whether a run has a value for key as groupValue
// reads it (a context key, a manifest field or a tag key).
func hasGroupKey(key string, m *rundir.Manifest) bool {
	if strings.HasPrefix(key, "tag:") {
		_, ok := tagValue(m, strings.TrimPrefix(key, "tag:"))
		return ok
	}
	for _, f := range contextFields(m) {
		if f.key == key {
			return true
		}
	}
	if _, ok := manifestValue(m, key); ok {
		return true
	}
	_, ok := tagValue(m, key)
	return ok
}

const none = "(none)"

// GroupKeys lists the keys --group-by accepts for these runs, for help and
// error messages.
func GroupKeys(ms []*rundir.Manifest) []string {
	keys := []string{"label", "dir"}
	for _, m := range ms {
		for _, t := range m.Tags {
			k, _, _ := strings.Cut(t, "=")
			if k = "tag:" + k; !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
		for _, f := range contextFields(m) {
			if !slices.Contains(keys, f.key) {
				keys = append(keys, f.key)
			}
		}
	}
	return keys
}

// DiffManifests is the diff of the runs' context that `headroom compare`
// shows, for other reports: the keys whose values differ between the
// manifests (one value per manifest) and those they share.
func DiffManifests(ms []*rundir.Manifest) (differs, same []DiffRow) {
	return diffManifests(ms)
}
