package servermetrics

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/internal/labels"
)

// readDumpLabels reads testdata/metrics/labels.tsv: file → key → value.
func readDumpLabels(t *testing.T) map[string]map[string]string {
	t.Helper()
	out, err := labels.ByFile("../../testdata/metrics/labels.tsv")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Every dump's engine, generation, scrapes and readings, as labelled.
func TestReadDumpLabelledDumps(t *testing.T) {
	labels := readDumpLabels(t)
	entries, err := os.ReadDir("../../testdata/metrics")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".txt") {
			continue
		}
		n++
		want, ok := labels[e.Name()]
		if !ok {
			t.Errorf("%s: no line in labels.tsv", e.Name())
			continue
		}
		f, err := os.Open("../../testdata/metrics/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		d, err := ReadDump(f)
		f.Close()
		if err != nil {
			t.Errorf("%s: %v", e.Name(), err)
			continue
		}
		got := map[string]string{"engine": d.Engine, "snapshots": fmt.Sprint(len(d.Snapshots))}
		if got["engine"] == "" {
			got["engine"] = "unknown"
		}
		if d.Generation != "" {
			got["gen"] = d.Generation
		}
		if res, err := Extract(d.Samples(), Options{Engine: d.Engine}); err == nil {
			for _, q := range []struct {
				key string
				q   Quantity
			}{{"running", Running}, {"waiting", Waiting}, {"kv", KVUsage}} {
				mx, seen := math.Inf(-1), false
				for _, g := range res.Gauges {
					if g.Quantity != q.q {
						continue
					}
					for _, p := range g.Points {
						mx, seen = math.Max(mx, p.Value), true
					}
				}
				if seen {
					got[q.key] = fmt.Sprint(math.Round(mx*1000) / 1000)
				}
			}
			for _, c := range res.Counters {
				if c.Quantity == Preemptions && len(c.Points) > 0 {
					got["preempt"] = fmt.Sprint(c.Points[len(c.Points)-1].Value)
				}
			}
		}
		for _, k := range []string{"engine", "gen", "snapshots", "running", "waiting", "kv", "preempt"} {
			if got[k] != want[k] {
				t.Errorf("%s: %s = %q, labelled %q", e.Name(), k, got[k], want[k])
			}
		}
	}
	if n != len(labels) {
		t.Errorf("%d dumps, %d labels", n, len(labels))
	}
}

// Several scrapes in one file: told apart by `date` lines, by a family's
// HELP seen again, or by a sample seen again; timed by the separator
// lines, else by the samples' own timestamps.
func TestReadDumpSeveralScrapes(t *testing.T) {
	one := func(running, waiting int) string {
		return fmt.Sprintf("# HELP vllm:num_requests_running Number of requests in model execution batches.\n"+
			"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} %d\n"+
			"# HELP vllm:num_requests_waiting Number of requests waiting to be processed.\n"+
			"# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=\"m\"} %d\n", running, waiting)
	}
	bare := func(running int, stamp string) string {
		return fmt.Sprintf("vllm:num_requests_running{model_name=\"m\"} %d%s\nvllm:kv_cache_usage_perc{model_name=\"m\"} 0.5%s\n", running, stamp, stamp)
	}
	cases := []struct {
		name, text string
		times      []int64
		running    []float64
	}{
		{"date lines", "Tue Jan  7 10:00:00 UTC 2025\n" + one(4, 0) + "Tue Jan  7 10:00:05 UTC 2025\n" + one(8, 3),
			[]int64{time.Date(2025, 1, 7, 10, 0, 0, 0, time.UTC).UnixNano(), time.Date(2025, 1, 7, 10, 0, 5, 0, time.UTC).UnixNano()}, []float64{4, 8}},
		{"rfc 3339 comments", "# 2025-01-07T10:00:00Z\n" + one(1, 0) + "# 2025-01-07T10:00:10Z\n" + one(2, 0) + "# 2025-01-07T10:00:20Z\n" + one(3, 1),
			[]int64{1736244000e9, 1736244010e9, 1736244020e9}, []float64{1, 2, 3}},
		{"help seen again", one(5, 0) + one(6, 0), nil, []float64{5, 6}},
		{"unix seconds", "=== 1736244000 ===\n" + bare(2, "") + "=== 1736244005.5 ===\n" + bare(7, ""), []int64{1736244000e9, 1736244005500000000}, []float64{2, 7}},
		{"sample timestamps", bare(2, " 1736244000000") + bare(3, " 1736244001000"), []int64{1736244000e9, 1736244001e9}, []float64{2, 3}},
		{"prompt lines", "$ curl -s localhost:8000/metrics\n" + bare(1, "") + "$ curl -s localhost:8000/metrics\n" + bare(9, ""), nil, []float64{1, 9}},
	}
	for _, c := range cases {
		d, err := ReadDump(strings.NewReader(c.text))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if len(d.Snapshots) != len(c.running) {
			t.Errorf("%s: %d scrapes, want %d", c.name, len(d.Snapshots), len(c.running))
			continue
		}
		if d.Timed != (c.times != nil) {
			t.Errorf("%s: timed %v", c.name, d.Timed)
		}
		for i, s := range d.Snapshots {
			if c.times != nil && s.TimeNS != c.times[i] {
				t.Errorf("%s: scrape %d at %d, want %d", c.name, i, s.TimeNS, c.times[i])
			}
			var run float64 = -1
			for _, x := range s.Samples {
				if x.Name == "vllm:num_requests_running" {
					run = x.Value
				}
			}
			if run != c.running[i] {
				t.Errorf("%s: scrape %d running %g, want %g", c.name, i, run, c.running[i])
			}
		}
		if d.Engine != "vllm" {
			t.Errorf("%s: engine %q", c.name, d.Engine)
		}
	}
}

func TestLooksLikeDump(t *testing.T) {
	for text, want := range map[string]bool{
		"# HELP vllm:x y\n":                            true,
		"vllm:num_requests_running 3\n":                true,
		"Tue Jan  7 10:00:00 UTC 2025\nfoo 1\nbar 2\n": true,
		"listening port=8000\n":                        false,
		"INFO 01-02 10:00:00 engine.py:1] Avg prompt throughput: 0.0 tokens/s\n": false,
		"{\"log\":\"x\"}\n": false,
	} {
		if got := LooksLikeDump([]byte(text)); got != want {
			t.Errorf("LooksLikeDump(%q) = %v", text, got)
		}
	}
}

func TestTimeLine(t *testing.T) {
	for line, want := range map[string]int64{
		"2025-01-07 10:00:00":              1736244000e9,
		"2025-01-07T10:00:00+01:00":        1736240400e9,
		"Tue Jan  7 10:00:00 UTC 2025":     1736244000e9,
		"scraped at 1736244000":            1736244000e9,
		"no time here":                     0,
		"--- 2025-01-07T10:00:00.250Z ---": 1736244000250000000,
	} {
		if got := timeLine(line); got != want {
			t.Errorf("timeLine(%q) = %d, want %d", line, got, want)
		}
	}
}
