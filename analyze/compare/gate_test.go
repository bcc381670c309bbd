package compare

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/analyze"
)

func TestParseRules(t *testing.T) {
	rules, err := ParseRules("throughput<-5%, ttft_p99>+10%,tpot_p50>=2ms, cost>0.5usd, goodput<-100tok/s")
	if err != nil {
		t.Fatal(err)
	}
	want := []Rule{
		{"throughput<-5%", "throughput", "<", -0.05, true},
		{"ttft_p99>+10%", "ttft_p99", ">", 0.10, true},
		{"tpot_p50>=2ms", "tpot_p50", ">=", 0.002, false},
		{"cost>0.5usd", "cost", ">", 0.5, false},
		{"goodput<-100tok/s", "goodput", "<", -100, false},
	}
	for i, w := range want {
		if rules[i] != w {
			t.Errorf("rule %d: %+v, want %+v", i, rules[i], w)
		}
	}
	for _, bad := range []string{"throughput", "speed<-5%", "ttft_p99>10tok/s", "throughput<-5ms", "throughput<<5%", ","} {
		if _, err := ParseRules(bad); err == nil {
			t.Errorf("ParseRules(%q) accepted", bad)
		}
	}
}

// The gate fails with one line per violated rule, naming the worst level,
// and passes rules that hold; a rule with nothing to check fails closed.
func TestGate(t *testing.T) {
	base := sweep{dir: "a", label: "base", levels: []int{1, 8}, n: 200, tokens: 17,
		ttft: spread(100*time.Millisecond, 200), tpot: constant(10 * time.Millisecond)}
	cand := base
	cand.dir, cand.label = "b", "cand"
	// TTFT up 20 % at c=8 only; decode 1 ms slower everywhere.
	cand.ttft = func(c, i int) time.Duration {
		d := spread(100*time.Millisecond, 200)(c, i)
		if c == 8 {
			return d * 12 / 10
		}
		return d
	}
	cand.tpot = constant(11 * time.Millisecond)
	o := opts()
	var err error
	o.Rules, err = ParseRules("ttft_p99>+10%,tpot_p50>+2ms,throughput<-20%,goodput<-5%")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compare(context.Background(), []*analyze.Run{base.run(), cand.run()}, o)
	if err != nil {
		t.Fatal(err)
	}
	g := c.Gate
	if g == nil || !g.Failed || len(g.Results) != 4 {
		t.Fatalf("gate %+v", g)
	}
	status := map[string]string{}
	for _, r := range g.Results {
		status[r.Rule] = r.Status
	}
	if status["ttft_p99>+10%"] != "fail" || status["tpot_p50>+2ms"] != "pass" || status["throughput<-20%"] != "pass" || status["goodput<-5%"] != "unchecked" {
		t.Fatalf("statuses %v", status)
	}
	r := g.Results[0]
	if r.Delta.Load != conc(8) || r.Candidate != "cand" || r.Baseline != "base" || math.Abs(r.Delta.Change-0.2) > 0.01 {
		t.Errorf("fail: %+v (delta %+v)", r, r.Delta)
	}
	if r := g.Results[3]; r.Unchecked != UncheckedNoSLO || r.Metric != "goodput" {
		t.Errorf("unchecked: %+v", r)
	}
	// With significance required the TTFT rise still fails: it is real.
	o.GateNeedsSignificance = true
	o.Rules, _ = ParseRules("ttft_p99>+10%")
	c, _ = Compare(context.Background(), []*analyze.Run{base.run(), cand.run()}, o)
	if !c.Gate.Failed {
		t.Errorf("significant rise passed: %+v", c.Gate.Results)
	}
	// The same run against itself passes every rule.
	o.GateNeedsSignificance = false
	o.Rules, _ = ParseRules("ttft_p99>+10%,tpot_p50>+2ms,throughput<-20%")
	same := base
	same.dir, same.label = "c", "same"
	c, _ = Compare(context.Background(), []*analyze.Run{base.run(), same.run()}, o)
	if c.Gate.Failed {
		t.Errorf("identical runs failed the gate: %+v", c.Gate.Results)
	}
}

func FuzzParseRules(f *testing.F) {
	for _, s := range []string{"throughput<-5%", "ttft_p99>+10%,tpot_p50>=2ms", "cost>0.5usd", "goodput<-100tok/s", "e2e_p99 > 1.5s", ",,", "x<1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rules, err := ParseRules(s)
		if err != nil {
			return
		}
		for _, r := range rules {
			if r.Metric == "" || r.Op == "" || r.Text == "" {
				t.Fatalf("%q: incomplete rule %+v", s, r)
			}
			// Every accepted rule parses again from its own text.
			again, err := ParseRules(r.Text)
			if err != nil || len(again) != 1 || again[0] != r {
				t.Fatalf("%q: rule %+v does not round-trip: %+v, %v", s, r, again, err)
			}
		}
	})
}
