package render

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/headroom-llm/headroom/analyze"
)

// Page one's answer on runs whose wall is known by construction (the
// labelled scenario matrix, testdata/verdicts) and on the demo, read as a
// new user reads it: it must not contradict itself, every load it names
// carries its unit, and a fix it names is one the server has not already
// got.
func TestAnswerReadsRightOnTheMatrix(t *testing.T) {
	root := filepath.Join("..", "testdata", "verdicts")
	reports := map[string]*analyze.Report{}
	for _, scen := range []string{"kv", "slotcap", "openloop", "ample", "cpu", "client"} {
		reports[scen] = analyzeDirs(t, []string{filepath.Join(root, scen, "1")}, analyze.Default())
	}
	reports["demo"] = defaultDemoReport(t)
	// A load without its unit: "about 4 (", "about 4;" or "about 8 to".
	bareLoad := regexp.MustCompile(`about [0-9][0-9.,]*(?: \(|[;,)]| to |$)`)
	orMore := regexp.MustCompile(`(c=\d+|req/s) or more`)
	// A load said twice in a row: "4.00 req/s (4.00 req/s)".
	twice := regexp.MustCompile(`(\d[\d.,]* req/s) \((\d[\d.,]* req/s)\)`)
	for name, rep := range reports {
		r := &rep.Runs[headlineRun(rep)]
		sw := r.Sweep
		answer := strings.Join(answerSentences(rep, r), " ")
		d, op, k := sw.Diagnosis, sw.Operating, sw.Knees
		peak := pointName(analyze.LoadPoint{LevelIndex: k.PeakLevel, Axis: k.Axis, Concurrency: k.PeakConcurrency, RateRPS: k.PeakRateRPS})
		// "sustains at most X at c=4" and "it stops at c=2" read as two
		// answers to one question.
		if at := pointName(d.Primary.At); d.Primary.At.Valid() && d.Primary.At.Value() < peakValue(k) && strings.Contains(answer, "stops at "+at) {
			t.Errorf("%s: the answer says the box stops at %s, below its peak at %s: %q", name, at, peak, answer)
		}
		// "or more" promises headroom past the last level; after a wall
		// was hit there is none to promise.
		hit := d.Primary.Kind != analyze.WallNone && d.Primary.Kind != analyze.WallInconclusive
		if hit && op.Capped && orMore.MatchString(answer) {
			t.Errorf("%s: %s was hit, yet the answer says %q", name, d.Primary.Kind, answer)
		}
		if m := bareLoad.FindString(answer); m != "" {
			t.Errorf("%s: a load without its unit (%q) in %q", name, m, answer)
		}
		if m := twice.FindStringSubmatch(answer); m != nil && m[1] == m[2] {
			t.Errorf("%s: %q said twice in %q", name, m[1], answer)
		}
		if strings.Contains(answer, "operating point below") {
			t.Errorf("%s: page one points below for the operating point it states: %q", name, answer)
		}
		// A flag the server already ran with is named with its value, so
		// the reader is not told to set what is set.
		for _, f := range d.Primary.Fixes[:1] {
			if f.Flag == "" || !strings.Contains(answer, "("+f.Flag+")") {
				continue
			}
			for _, it := range r.Context {
				if it.Key == analyze.CtxServerFlags && slices.Contains(it.Values, f.Flag) {
					t.Errorf("%s: the answer asks for %s, which the server already ran with: %q", name, f.Flag, answer)
				}
			}
		}
	}
	// A client-bound run measured the load generator: it names no load to
	// run the server at.
	if a := strings.Join(answerSentences(reports["client"], &reports["client"].Runs[0]), " "); strings.Contains(a, "Run it at") {
		t.Errorf("client: %q", a)
	}
	// Open loop: admission control holds the operating point; it does not
	// take the box further.
	if a := strings.Join(answerSentences(reports["openloop"], &reports["openloop"].Runs[0]), " "); strings.Contains(a, "to go further, put admission control") {
		t.Errorf("openloop: %q", a)
	}
}

func peakValue(k analyze.Knees) float64 {
	if k.Axis == analyze.AxisRate {
		return k.PeakRateRPS
	}
	return float64(k.PeakConcurrency)
}

// Counts in evidence agree with their nouns.
func TestEvidenceCountsAgree(t *testing.T) {
	for _, e := range []analyze.Evidence{
		{Kind: analyze.EvWaiting, Value: 1},
		{Kind: analyze.EvPreemptions, Value: 1},
		{Kind: analyze.EvClientCPU, Value: 1, Count: 1},
	} {
		if s := evidenceText(e); strings.Contains(s, " 1 requests") || strings.Contains(s, "1 preemptions") || strings.Contains(s, " 1 cores") {
			t.Errorf("%q", s)
		}
	}
}

// Page one's wall section says its one piece of evidence once: the lead
// sentence states it, so no bullet repeats it (a quoted log line stays).
func TestFrontWallSaysEvidenceOnce(t *testing.T) {
	reports := map[string]*analyze.Report{
		"kv":   analyzeDirs(t, []string{filepath.Join("..", "testdata", "verdicts", "kv", "1")}, analyze.Default()),
		"demo": defaultDemoReport(t),
	}
	for name, rep := range reports {
		i := headlineRun(rep)
		s := frontWall(&rep.Runs[i], i)
		w := rep.Runs[i].Sweep.Diagnosis.Primary
		if s == nil || len(s.Verdicts) != 1 || len(w.Evidence) == 0 {
			t.Fatalf("%s: wall section %+v", name, s)
		}
		v := s.Verdicts[0]
		text := evidenceText(w.Evidence[0])
		n := strings.Count(v.Summary, text)
		for _, e := range v.Evidence {
			n += strings.Count(e.What, text)
		}
		if n != 1 {
			t.Errorf("%s: %q said %d times in %+v", name, text, n, v)
		}
	}
}

// A log line as the strongest evidence keeps its quote on page one, once.
func TestFrontWallQuotesItsLogLine(t *testing.T) {
	ev := analyze.Evidence{Kind: analyze.EvPreemptLog, Concurrency: 8, Line: 41, Text: "WARNING scheduler.py:1057 Sequence group 3 is preempted by PreemptionMode.RECOMPUTE mode"}
	at := analyze.LoadPoint{LevelIndex: 2, Axis: analyze.AxisConcurrency, Concurrency: 8}
	r := &analyze.RunAnalysis{Sweep: &analyze.SweepAnalysis{Diagnosis: analyze.Diagnosis{
		Wall: analyze.WallKVCache, Primary: analyze.Wall{Kind: analyze.WallKVCache, At: at, Evidence: []analyze.Evidence{ev}},
		Confidence: analyze.Confidence{Level: analyze.ConfidenceHigh},
	}}}
	v := frontWall(r, 0).Verdicts[0]
	if len(v.Evidence) != 1 || len(v.Evidence[0].Log) != 1 || v.Evidence[0].Log[0].N != 41 || strings.Contains(v.Evidence[0].What, evidenceText(ev)) {
		t.Errorf("%+v", v)
	}
}
