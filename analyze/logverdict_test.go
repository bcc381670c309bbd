package analyze

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/analyze/serverlog"
	"github.com/headroom-llm/headroom/internal/labels"
)

// logVerdictMismatches are the corpus files whose log-only verdict differs
// from their label, each with why (docs/serverlogs.md lists them too).
var logVerdictMismatches = map[string]string{
	"llamacpp-2024-01-gen-a-startup.log": "labelled unknown (a start-up excerpt); the verdict reads its one task " +
		"(`slot 0 is processing [task id: 0]`, then its timings) as one request running: none",
	"llamacpp-ollama-2024-06-json-startup.log": "labelled unknown (a start-up excerpt); the verdict reads the slot census " +
		"after start-up (`\"n_processing_slots\":0`) as an idle engine: none",
	"vllm-0.10.0-v1-loggers118-glued.log": "labelled kv_cache (the cache 91-92% full with 8 running, as the thread describes); " +
		"the rules call a cache full from 95%, or from 80% with requests waiting, and none waited: a batch of 8 running, compute (unconfirmed)",
	"vllm-0.10.1.1-v1-a100-7b-c50-kv96.log": "labelled kv_cache (96% full); under the rules a full cache with nothing waiting " +
		"and nothing preempted is tight, not yet a wall: a batch of 49 running, compute (unconfirmed)",
	"vllm-0.2.x-llm_engine-stats.log": "labelled kv_cache (97.3% full); the same rule: tight, and one request running: none",
	"llamacpp-b1-80fb11a-h100-kvunified-idle-purge.log": "labelled none (c=4 of a sweep whose TPOT is still flat there); " +
		"the rule reads four slots running with nothing waiting and no cache pressure as a batch: compute (unconfirmed)",
	"llamacpp-talkie-metal-kvunified-idle-purge.log": "labelled none (an idle slot's prompt dropped for room); " +
		"the three lines show no request, so the verdict has no load to judge: unknown",
}

// wallLabels reads the wall= label of every file of a labels.tsv.
func wallLabels(t *testing.T, path string) map[string]string {
	t.Helper()
	ls, err := labels.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range ls {
		if w, ok := l.Want["wall"]; ok {
			out[l.File] = w
		}
	}
	return out
}

// The log-only verdict of every real log excerpt and /metrics dump against
// its hand label: at least 95% agree, and every disagreement is listed in
// logVerdictMismatches with its reason. The confusion table is printed.
func TestLogVerdictCorpus(t *testing.T) {
	type item struct{ dir, file, label string }
	var items []item
	for _, dir := range []string{"../testdata/serverlogs", "../testdata/metrics"} {
		for f, w := range wallLabels(t, filepath.Join(dir, "labels.tsv")) {
			items = append(items, item{dir, f, w})
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].file < items[j].file })
	walls := []string{LogWallKVCache, LogWallQueueing, LogWallCompute, LogWallEngineOverhead, LogWallNone, LogWallEngineError, LogWallUnknown}
	confusion := map[[2]string]int{}
	bases := map[string]int{}
	agree := 0
	var mismatches []string
	for _, it := range items {
		opts := serverlog.Options{Location: time.UTC, Year: 2025}
		li, err := Inspect(filepath.Join(it.dir, it.file), nil, opts)
		got := LogWallUnknown
		if err == nil {
			got = li.Verdict.Wall
			bases[li.Verdict.Basis]++
		} else if !strings.Contains(err.Error(), ErrNoLogEvents.Error()) {
			t.Errorf("%s: %v", it.file, err)
		}
		confusion[[2]string{it.label, got}]++
		if got == it.label {
			agree++
			if _, listed := logVerdictMismatches[it.file]; listed {
				t.Errorf("%s: listed as a mismatch but now agrees (%s)", it.file, got)
			}
			continue
		}
		mismatches = append(mismatches, fmt.Sprintf("%s: labelled %s, verdict %s (%s)", it.file, it.label, got, li.basis()))
		if _, listed := logVerdictMismatches[it.file]; !listed {
			t.Errorf("%s: labelled %s, the verdict says %s (basis %s): not in logVerdictMismatches", it.file, it.label, got, li.basis())
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "log-only verdict against the labels: %d of %d agree (%.1f%%)\n", agree, len(items), 100*float64(agree)/float64(len(items)))
	fmt.Fprintf(&b, "%-14s", "label \\ verdict")
	for _, w := range walls {
		fmt.Fprintf(&b, " %12s", w)
	}
	b.WriteString("\n")
	for _, l := range walls {
		fmt.Fprintf(&b, "%-15s", l)
		for _, w := range walls {
			fmt.Fprintf(&b, " %12d", confusion[[2]string{l, w}])
		}
		b.WriteString("\n")
	}
	b.WriteString("verdicts by basis:")
	for _, k := range slices.Sorted(maps.Keys(bases)) {
		fmt.Fprintf(&b, " %s %d,", k, bases[k])
	}
	b.WriteString("\n")
	for _, m := range mismatches {
		b.WriteString("  " + m + "\n")
	}
	t.Log("\n" + b.String())
	if float64(agree) < 0.95*float64(len(items)) {
		t.Errorf("%d of %d agree: below 95%%", agree, len(items))
	}
	for f := range logVerdictMismatches {
		if !slices.ContainsFunc(items, func(it item) bool { return it.file == f }) {
			t.Errorf("logVerdictMismatches names %s, which has no label", f)
		}
	}
}

func (li *LogInspection) basis() string {
	if li == nil {
		return "no engine lines"
	}
	return li.Verdict.Basis
}

// A window keeps an even sample of its TPOT values, at most
// maxWindowTPOTs, however long the log.
func TestBandTPOTSample(t *testing.T) {
	a := &bandAcc{tpotStride: 1}
	for i := 0; i < 3*maxWindowTPOTs+5; i++ {
		a.addTPOT(float64(i))
	}
	if n := len(a.tpots); n > maxWindowTPOTs || n < maxWindowTPOTs/2 {
		t.Fatalf("%d values kept", n)
	}
	for i := 1; i < len(a.tpots); i++ {
		if d := a.tpots[i] - a.tpots[i-1]; d != float64(a.tpotStride) {
			t.Fatalf("values %g and %g are %g apart, stride %d", a.tpots[i-1], a.tpots[i], d, a.tpotStride)
		}
	}
}

// llama-server's prompt cache: an eviction for every request started under
// load is engine overhead; fewer (a cache that turns over now and then)
// leaves the batch's verdict.
func TestLogVerdictPromptCacheThrash(t *testing.T) {
	verdict := func(evictPerLaunch int) LogVerdict {
		var b strings.Builder
		for i := 0; i < 8; i++ {
			fmt.Fprintf(&b, "0.01.%03d.000 I slot launch_slot_: id %2d | task %d | processing task, is_child = 0\n", 100+i, i, i)
			if i >= 1 && (evictPerLaunch > 0 || i%4 == 0) {
				for j := 0; j < max(evictPerLaunch, 1); j++ {
					b.WriteString("0.01.200.000 W srv         alloc:  - making room for prompt cache entry, removing oldest entry (size = 136.014 MiB)\n")
				}
			}
		}
		p := filepath.Join(t.TempDir(), "server.log")
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		li, err := Inspect(p, nil, serverlog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return li.Verdict
	}
	if v := verdict(1); v.Wall != LogWallEngineOverhead || v.Basis != LogBasisPromptCache || !v.Unconfirmed ||
		len(v.Evidence) == 0 || v.Evidence[0].Value != 7 || v.Evidence[0].Ref != 7 {
		t.Errorf("one eviction per start: %+v", v)
	}
	if v := verdict(0); v.Wall != LogWallCompute {
		t.Errorf("2 evictions for 7 starts: %s (%s)", v.Wall, v.Basis)
	}
}

// The log-only verdict on the labelled scenario matrix (testdata/verdicts:
// walls known by construction; each recording's server.log read alone,
// as inspect-log RUN reads it). The sweep's walls map to the log's: the
// engine cap and the front queue to queueing; the starved client has no
// server log. The agreement is printed and pinned with every known
// disagreement, so a change in either direction shows.
func TestLogVerdictScenarioMatrix(t *testing.T) {
	logWall := map[string]string{WallNone: LogWallNone, WallKVCache: LogWallKVCache, WallCompute: LogWallCompute,
		WallEngineCap: LogWallQueueing, WallFrontQueue: LogWallQueueing, WallEngineOverhead: LogWallEngineOverhead}
	// What the log shows instead, and why (docs/serverlogs.md).
	known := map[string]string{
		"ample": "queueing: the test engine's step records show a request waiting for the next step in two records " +
			"(an arrival between steps), which the log-only queueing completion counts as a queue",
		"cpu": "queueing: each closed-loop level starts with its requests waiting for admission (up to 15), " +
			"and the log has no TPOT per request nor the engine's CPU to show the decode saturating",
	}
	walls := []string{LogWallKVCache, LogWallQueueing, LogWallCompute, LogWallNone}
	confusion := map[[2]string]int{}
	agree, n := 0, 0
	for _, r := range readMatrix(t) {
		want, ok := logWall[r.want]
		if !ok {
			continue // client_bound: no server log
		}
		li, err := Inspect(r.dir, nil, serverlog.Options{})
		if err != nil {
			t.Fatalf("%s: %v", r.dir, err)
		}
		got := li.Verdict.Wall
		n++
		confusion[[2]string{want, got}]++
		_, isKnown := known[r.scenario]
		switch {
		case got == want && isKnown:
			t.Errorf("%s: now agrees (%s): drop it from the known disagreements", r.dir, got)
		case got == want:
			agree++
		case !isKnown:
			t.Errorf("%s: expected %s, the log alone says %s (%s)", r.dir, want, got, li.Verdict.Basis)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "log-only verdict on the scenario matrix: %d of %d agree\n%-16s", agree, n, "expected \\ log")
	for _, w := range walls {
		fmt.Fprintf(&b, " %9s", w)
	}
	for _, e := range walls {
		fmt.Fprintf(&b, "\n%-16s", e)
		for _, w := range walls {
			fmt.Fprintf(&b, " %9d", confusion[[2]string{e, w}])
		}
	}
	t.Log("\n" + b.String())
	if n != 15 {
		t.Errorf("%d recordings with a server log, want 15", n)
	}
}
