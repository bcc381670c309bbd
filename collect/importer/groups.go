package importer

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// A run group is the results that belong in one run directory: the same
// configuration as the tool records it (sweepSource.config, plus the
// engine's model and the endpoint), the same kind of load (closed loop or
// open loop), and at most one result per load level. Results repeated at
// the same level (vllm bench sweep's run=0, run=1, ..., or the same
// --max-concurrency twice in an --append-result file) become separate runs,
// so `headroom compare` can set the repeats side by side.

// configItem is one setting that sets a run group apart.
type configItem struct{ key, value string }

// groupItem is one level of one source.
type groupItem struct {
	src   *sweepSource
	level sourceLevel
}

type runGroup struct {
	config []configItem // the source's settings, then "load"
	repeat int          // 1, 2, ...: which repeat of its levels
	many   bool         // the configuration has more than one repeat
	items  []groupItem
}

// groupConfig is what identifies a source's configuration.
func groupConfig(s *sweepSource) []configItem {
	out := []configItem{{"model", s.engine.Model}, {"endpoint", s.workload.Endpoint}}
	return append(out, s.config...)
}

func loadMode(l sourceLevel) string {
	if l.rateRPS > 0 {
		return "open-loop"
	}
	return "closed-loop"
}

// groupSources splits the parsed sources into run groups, in the order of
// their first result.
func groupSources(srcs []*sweepSource) []prepared {
	type keyed struct {
		key    string
		config []configItem
		items  []groupItem
	}
	var byConfig []*keyed
	for _, s := range srcs {
		for _, l := range s.levels {
			cfg := append(groupConfig(s), configItem{"load", loadMode(l)})
			key := fmt.Sprint(cfg)
			i := slices.IndexFunc(byConfig, func(k *keyed) bool { return k.key == key })
			if i < 0 {
				byConfig = append(byConfig, &keyed{key: key, config: cfg})
				i = len(byConfig) - 1
			}
			byConfig[i].items = append(byConfig[i].items, groupItem{s, l})
		}
	}
	var groups []*runGroup
	for _, k := range byConfig {
		// The repeat of each item: the tool's run number when it records
		// one, else the how-manieth time its load comes up.
		seen := map[string]int{}
		var reps []*runGroup
		for _, it := range k.items {
			rep := it.level.repeat
			if rep <= 0 {
				load := describeLoad(it.level)
				seen[load]++
				rep = seen[load]
			}
			i := slices.IndexFunc(reps, func(g *runGroup) bool { return g.repeat == rep })
			if i < 0 {
				reps = append(reps, &runGroup{config: k.config, repeat: rep})
				i = len(reps) - 1
			}
			reps[i].items = append(reps[i].items, it)
		}
		slices.SortStableFunc(reps, func(a, b *runGroup) int { return a.repeat - b.repeat })
		for _, g := range reps {
			g.many = len(reps) > 1
		}
		groups = append(groups, reps...)
	}
	names := groupNames(groups)
	out := make([]prepared, len(groups))
	for i, g := range groups {
		out[i] = prepared{name: names[i], kind: srcs[0].kind, srcs: g.sources()}
	}
	return out
}

// sources rebuilds the group's sources, each holding only its levels in
// the group, in the order they came.
func (g *runGroup) sources() []*sweepSource {
	var out []*sweepSource
	copies := map[*sweepSource]*sweepSource{}
	for _, it := range g.items {
		c := copies[it.src]
		if c == nil {
			cp := *it.src
			cp.levels = nil
			c = &cp
			copies[it.src] = c
			out = append(out, c)
		}
		c.levels = append(c.levels, it.level)
	}
	return out
}

// groupNames names each group by the settings whose values differ between
// groups (and its repeat), as a directory name: "max_num_seqs=64",
// "open-loop", "repeat-2".
func groupNames(groups []*runGroup) []string {
	var keys []string
	for _, g := range groups {
		for _, c := range g.config {
			if !slices.Contains(keys, c.key) {
				keys = append(keys, c.key)
			}
		}
	}
	value := func(g *runGroup, key string) string {
		for _, c := range g.config {
			if c.key == key {
				return c.value
			}
		}
		return ""
	}
	var differ []string
	for _, k := range keys {
		for _, g := range groups[1:] {
			if value(g, k) != value(groups[0], k) {
				differ = append(differ, k)
				break
			}
		}
	}
	names := make([]string, len(groups))
	used := map[string]int{}
	for i, g := range groups {
		var parts []string
		for _, k := range differ {
			v := value(g, k)
			switch {
			case k == "load":
				parts = append(parts, v)
			case v == "":
				parts = append(parts, "no-"+k)
			default:
				if strings.ContainsRune(v, '/') {
					v = filepath.Base(strings.TrimRight(v, "/"))
				}
				parts = append(parts, k+"="+v)
			}
		}
		if g.many {
			parts = append(parts, fmt.Sprintf("repeat-%d", g.repeat))
		}
		name := sanitizeName(strings.Join(parts, ","))
		if name == "" {
			name = fmt.Sprintf("run-%d", i+1)
		}
		used[name]++
		if used[name] > 1 {
			name = fmt.Sprintf("%s-%d", name, used[name])
		}
		names[i] = name
	}
	return names
}

// sanitizeName keeps a directory name to letters, digits and ".,=_+-",
// at most 100 bytes.
func sanitizeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(".,=_+-", c) >= 0
		if !ok {
			b[i] = '_'
		}
	}
	if len(b) > 100 {
		b = b[:100]
	}
	return strings.Trim(string(b), "._-")
}
