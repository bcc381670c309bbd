package serverlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Real lines used to build wrapped variants.
const (
	realVLLMStats  = "INFO 10-28 11:16:34 metrics.py:349] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 7220.5 tokens/s, Running: 2 reqs, Swapped: 0 reqs, Pending: 98 reqs, GPU KV cache usage: 73.8%, CPU KV cache usage: 0.0%."
	realSGLangStat = "[2025-02-27 04:37:29 TP0] Decode batch. #running-req: 8, #token: 67724, token usage: 0.13, gen throughput (token/s): 183.54, #queue-req: 0"
)

var realVLLMStatsWant = Stats{Set: v0stats, GenerationTokensPerS: 7220.5, Running: 2, Waiting: 98, KVUsage: 0.738}

func scanString(t *testing.T, text string, opts Options) ([]Event, *Scanner) {
	t.Helper()
	s := NewScanner(strings.NewReader(text), opts)
	var evs []Event
	for s.Scan() {
		evs = append(evs, *s.Event())
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return evs, s
}

func TestWrappers(t *testing.T) {
	wrapTime := utc(2024, time.October, 28, 18, 16, 34, 123456789)
	dockerJSON, err := json.Marshal(map[string]string{"log": realVLLMStats + "\n", "stream": "stderr", "time": "2024-10-28T18:16:34.123456789Z"})
	if err != nil {
		t.Fatal(err)
	}
	// keys in another order go through encoding/json
	dockerReordered, _ := json.Marshal(struct {
		Stream string `json:"stream"`
		Time   string `json:"time"`
		Log    string `json:"log"`
	}{"stderr", "2024-10-28T18:16:34.123456789Z", realVLLMStats + "\n"})
	colored := strings.Replace(realVLLMStats, "INFO", "\x1b[32mINFO\x1b[0m", 1)
	coloredJSON, _ := json.Marshal(map[string]string{"log": colored, "stream": "stdout", "time": "2024-10-28T18:16:34.123456789Z"})
	tests := []struct {
		name string
		line string
		time time.Time
		q    TimeQuality
	}{
		{"plain", realVLLMStats, utc(2024, time.October, 28, 11, 16, 34, 0), TimeNoYear},
		{"docker json", string(dockerJSON), wrapTime, TimeComplete},
		{"docker json, other key order", string(dockerReordered), wrapTime, TimeComplete},
		{"docker json with colour codes", string(coloredJSON), wrapTime, TimeComplete},
		{"kubectl --timestamps", "2024-10-28T18:16:34.123456789Z " + realVLLMStats, wrapTime, TimeComplete},
		{"CRI log file", "2024-10-28T18:16:34.123456789Z stderr F " + realVLLMStats, wrapTime, TimeComplete},
		{"journald short-iso", "2024-10-28T18:16:34+0000 gpu01 vllm[4242]: " + realVLLMStats, utc(2024, time.October, 28, 18, 16, 34, 0), TimeComplete},
		{"journald short-iso-precise, offset", "2024-10-28T11:16:34.123456789-07:00 gpu01 vllm[4242]: " + realVLLMStats, wrapTime, TimeComplete},
		{"journald short (no year)", "Oct 28 18:16:34 gpu01 vllm[4242]: " + realVLLMStats, utc(2024, time.October, 28, 18, 16, 34, 0), TimeNoYear},
		{"journald short-precise", "Oct 28 18:16:34.123456 gpu01 vllm[4242]: " + realVLLMStats, utc(2024, time.October, 28, 18, 16, 34, 123456000), TimeNoYear},
		{"CI bracket", "[2024-10-28T18:16:34.123456789Z] " + realVLLMStats, wrapTime, TimeComplete},
		{"docker compose", "vllm-1  | " + realVLLMStats, utc(2024, time.October, 28, 11, 16, 34, 0), TimeNoYear},
		{"ANSI colours", colored, utc(2024, time.October, 28, 11, 16, 34, 0), TimeNoYear},
		{"kubectl over docker compose", "2024-10-28T18:16:34.123456789Z vllm-1  | " + realVLLMStats, wrapTime, TimeComplete},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs, s := scanString(t, tt.line+"\n", Options{Year: 2024})
			if len(evs) != 1 || s.Engine() != EngineVLLM {
				t.Fatalf("engine %q, events %+v", s.Engine(), evs)
			}
			if !reflect.DeepEqual(evs[0].Stats, realVLLMStatsWant) {
				t.Errorf("stats %+v", evs[0].Stats)
			}
			if !evs[0].Time.Equal(tt.time) || evs[0].TimeQuality != tt.q {
				t.Errorf("time %s (%s), want %s (%s)", evs[0].Time, evs[0].TimeQuality, tt.time, tt.q)
			}
			if evs[0].Raw != tt.line {
				t.Errorf("Raw %q, want the line as read", evs[0].Raw)
			}
			wrapped := int64(1)
			if tt.name == "plain" || tt.name == "ANSI colours" {
				wrapped = 0
			}
			if s.Counts().Wrapped != wrapped {
				t.Errorf("wrapped %d", s.Counts().Wrapped)
			}
		})
	}
}

// Every real line reads without a syntax error, and the counts add up.
func TestFixturesHaveNoBadLines(t *testing.T) {
	for _, path := range fixtures(t) {
		name := filepath.Base(path)
		_, s := scanFile(t, name, Options{})
		c := s.Counts()
		if c.Bad != 0 {
			t.Errorf("%s: %d bad lines: %v", name, c.Bad, s.SyntaxErrors())
		}
		if c.Events+c.Ignored+c.Unknown+c.Bad+c.Duplicates+c.Rejoined != c.Lines {
			t.Errorf("%s: counts do not add up: %+v", name, c)
		}
		raw, _ := os.ReadFile(path)
		if want := int64(bytes.Count(raw, []byte("\n"))); c.Lines != want {
			t.Errorf("%s: %d lines read, file has %d", name, c.Lines, want)
		}
	}
}

func TestSyntaxErrors(t *testing.T) {
	text := realVLLMStats + "\n" +
		"INFO 10-28 11:16:39 metrics.py:349] Avg prompt throughput: fast tokens/s, Running: 2 reqs\n" +
		"WARNING 10-28 11:16:41 scheduler.py:1483] Sequence group 7 is preempted by PreemptionMode.TELEPORT mode\n" +
		"INFO 10-28 11:16:42 gpu_executor.py:117] Maximum concurrency for many tokens per request: 1.12x\n" +
		realVLLMStats + "\n"
	evs, s := scanString(t, text, Options{File: "server.log"})
	if len(evs) != 2 || evs[1].Line != 5 {
		t.Fatalf("the good lines around the bad ones should be read: %+v", evs)
	}
	checkCounts(t, s, Counts{Lines: 5, Events: 2, Bad: 3})
	errs := s.SyntaxErrors()
	if len(errs) != 3 || errs[0].Line != 2 || errs[0].Error() != `server.log:2: vLLM stats: Avg prompt throughput: expected a number, found "fast tokens/s"` {
		t.Errorf("syntax errors: %v", errs)
	}
	if errs[1].Line != 3 || !strings.Contains(errs[1].Msg, "unknown mode") || errs[2].Line != 4 {
		t.Errorf("syntax errors: %v", errs)
	}
	s = NewScanner(strings.NewReader(strings.Repeat("INFO 10-28 11:16:39 metrics.py:349] Avg prompt throughput: x\n", 10)), Options{MaxSyntaxErrors: 3})
	for s.Scan() {
	}
	if len(s.SyntaxErrors()) != 3 || s.Counts().Bad != 10 {
		t.Errorf("kept %d syntax errors, counted %d bad", len(s.SyntaxErrors()), s.Counts().Bad)
	}
}

type failingReader struct {
	r   io.Reader
	err error
}

func (f *failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if errors.Is(err, io.EOF) {
		return n, f.err
	}
	return n, err
}

func TestReadErrorStops(t *testing.T) {
	boom := errors.New("disk on fire")
	s := NewScanner(&failingReader{strings.NewReader(realVLLMStats + "\n" + realVLLMStats + "\n"), boom}, Options{File: "server.log"})
	n := 0
	for s.Scan() {
		n++
	}
	if n != 2 || !errors.Is(s.Err(), boom) || !strings.Contains(s.Err().Error(), "server.log") {
		t.Fatalf("events %d, err %v", n, s.Err())
	}
	if s.Scan() {
		t.Error("Scan after an error must return false")
	}
}

func TestLongLines(t *testing.T) {
	long := realVLLMStats + strings.Repeat(" padding", 20000)
	text := long + "\n" + realSGLangStat + "\n" + long // last line without a newline
	evs, s := scanString(t, text, Options{Engine: EngineVLLM, MaxLineBytes: 4096})
	c := s.Counts()
	if c.Lines != 3 || c.Long != 2 || len(evs) != 2 {
		t.Fatalf("counts %+v, events %d", c, len(evs))
	}
	if !reflect.DeepEqual(evs[0].Stats, realVLLMStatsWant) || len(evs[0].Raw) != 4096 || evs[1].Line != 3 {
		t.Errorf("long line event: line %d raw %d bytes, stats %+v", evs[0].Line, len(evs[0].Raw), evs[0].Stats)
	}
}

func TestYearInference(t *testing.T) {
	// synthetic: one real vLLM line with its stamp moved across new year
	dec := strings.Replace(realVLLMStats, "10-28 11:16:34", "12-31 23:59:58", 1)
	jan := strings.Replace(realVLLMStats, "10-28 11:16:34", "01-01 00:00:08", 1)
	evs, _ := scanString(t, dec+"\n"+jan+"\n", Options{Reference: utc(2024, time.December, 31, 23, 0, 0, 0)})
	checkTime(t, evs[0], utc(2024, time.December, 31, 23, 59, 58, 0), TimeNoYear)
	checkTime(t, evs[1], utc(2025, time.January, 1, 0, 0, 8, 0), TimeNoYear)
	// a run that started on 31 December but whose log starts in January
	evs, _ = scanString(t, jan+"\n", Options{Reference: utc(2024, time.December, 31, 23, 0, 0, 0)})
	checkTime(t, evs[0], utc(2025, time.January, 1, 0, 0, 8, 0), TimeNoYear)
	// a backward jump that is not a new year (concatenated logs) keeps the year
	oct := realVLLMStats
	mar := strings.Replace(realVLLMStats, "10-28 11:16:34", "03-02 08:00:00", 1)
	evs, _ = scanString(t, oct+"\n"+mar+"\n"+oct+"\n", Options{Reference: utc(2024, time.October, 28, 11, 0, 0, 0)})
	checkTime(t, evs[1], utc(2024, time.March, 2, 8, 0, 0, 0), TimeNoYear)
	checkTime(t, evs[2], utc(2024, time.October, 28, 11, 16, 34, 0), TimeNoYear)
	// Year beats Reference; a zone is applied
	loc := time.FixedZone("PDT", -7*3600)
	evs, _ = scanString(t, realVLLMStats+"\n", Options{Year: 2023, Reference: utc(2024, 1, 1, 0, 0, 0, 0), Location: loc})
	checkTime(t, evs[0], time.Date(2023, time.October, 28, 11, 16, 34, 0, loc), TimeNoYear)
	// nothing known: year 0, still marked as inferred
	evs, _ = scanString(t, realVLLMStats+"\n", Options{})
	if evs[0].Time.Year() != 0 || evs[0].TimeQuality != TimeNoYear {
		t.Errorf("time %s %s", evs[0].Time, evs[0].TimeQuality)
	}
}

func TestAlignAndClockOffset(t *testing.T) {
	f, err := os.ReadFile(filepath.Join(fixtureDir, "vllm-0.11.x-v1-kubectl-timestamps.log"))
	if err != nil {
		t.Fatal(err)
	}
	// the client received each line 250 ms after the kubelet stamped it
	var recv RecvTimes
	for _, line := range strings.Split(strings.TrimSuffix(string(f), "\n"), "\n") {
		if tm, _, ok := isoTime([]byte(line)); ok {
			recv = append(recv, tm.Add(250*time.Millisecond).UnixNano())
		} else {
			recv = append(recv, 0) // unknown
		}
	}
	evs, _ := scanString(t, string(f), Options{Clock: recv})
	if len(evs) != 7 {
		t.Fatalf("%d events", len(evs))
	}
	for _, ev := range evs {
		if ev.RecvTime.Sub(ev.Time) != 250*time.Millisecond {
			t.Errorf("line %d: recv %s time %s", ev.Line, ev.RecvTime, ev.Time)
		}
	}
	if off, n := ClockOffset(evs); off != 250*time.Millisecond || n != 7 {
		t.Errorf("offset %s from %d", off, n)
	}
	// Align after the fact does the same; line 2 is unknown to the clock
	for i := range evs {
		evs[i].RecvTime = time.Time{}
	}
	if n := Align(evs, recv); n != 7 {
		t.Errorf("aligned %d", n)
	}
	if _, ok := recv.RecvTimeNS(2); ok {
		t.Error("a zero receive time means unknown")
	}
	if _, ok := recv.RecvTimeNS(11); ok {
		t.Error("past the end")
	}
	if off, n := ClockOffset(nil); off != 0 || n != 0 {
		t.Error("no events, no estimate")
	}
}

func TestParseEngine(t *testing.T) {
	for in, want := range map[string]Engine{"": EngineUnknown, "auto": EngineUnknown, "vLLM": EngineVLLM, "sglang": EngineSGLang, "llama.cpp": EngineLlamaCpp, "llamacpp": EngineLlamaCpp, "node-llama-cpp": EngineNodeLlamaCpp} {
		if got, err := ParseEngine(in); err != nil || got != want {
			t.Errorf("ParseEngine(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseEngine("tgi"); err == nil || !strings.Contains(err.Error(), "vllm, sglang") {
		t.Errorf("unknown engine error should list the choices: %v", err)
	}
}

func TestScanSummaryMatchesSummarize(t *testing.T) {
	for _, name := range []string{"vllm-0.6.4.post1-serve-enginedead.log", "sglang-0.5.18-startup-retract.log", "llamacpp-b7xxx-print-timing-block.log"} {
		f, err := os.Open(filepath.Join(fixtureDir, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := ScanSummary(f, Options{Year: 2024})
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		want := summarizeFile(t, name, Options{Year: 2024})
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n ScanSummary %+v\n Summarize   %+v", name, got, want)
		}
	}
	sum := summarizeFile(t, "vllm-0.6.4.post1-serve-enginedead.log", Options{Year: 2024})
	if sum.Engine != EngineVLLM || sum.Version != "0.6.4.post1" || sum.Generation != "V0" || sum.Model != "meta-llama/Llama-3.2-1B" ||
		sum.Errors[ProblemEngineDead] != 2 || sum.Errors[ProblemOther] != 2 || sum.FirstError.Line != 58 ||
		!sum.First.Equal(utc(2024, time.December, 6, 14, 7, 37, 0)) || !sum.Last.Equal(utc(2024, time.December, 6, 14, 9, 39, 0)) ||
		sum.KVUsageMax != 0 || sum.StatsLines != 5 || sum.Counts.Unknown != 4 || len(sum.NonDefaultArgs) != 4 {
		t.Errorf("summary %+v", sum)
	}
	if sum.Config[0].Key != FactVersion {
		t.Errorf("config order: %v", sum.Config)
	}
}

// genReader produces size bytes of real log lines, repeated, without
// holding them in memory.
type genReader struct {
	lines [][]byte
	i     int
	left  int64
	cur   []byte
}

func (g *genReader) Read(p []byte) (int, error) {
	if g.left <= 0 {
		return 0, io.EOF
	}
	n := 0
	for n < len(p) && g.left > 0 {
		if len(g.cur) == 0 {
			g.cur = g.lines[g.i%len(g.lines)]
			g.i++
		}
		k := copy(p[n:], g.cur)
		if int64(k) > g.left {
			k = int(g.left)
		}
		g.cur = g.cur[k:]
		n += k
		g.left -= int64(k)
	}
	return n, nil
}

func TestBoundedMemory(t *testing.T) {
	var lines [][]byte
	for _, path := range fixtures(t) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range bytes.SplitAfter(b, []byte("\n")) {
			if len(l) > 0 && l[len(l)-1] == '\n' {
				lines = append(lines, l)
			}
		}
	}
	size := int64(256 << 20)
	if testing.Short() || raceEnabled {
		size = 32 << 20
	}
	s := NewScanner(&genReader{lines: lines, left: size}, Options{Engine: EngineVLLM})
	z := NewSummarizer()
	var ms runtime.MemStats
	var peak uint64
	n := 0
	for s.Scan() {
		z.Add(s.Event())
		if n++; n%50000 == 0 {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak {
				peak = ms.HeapInuse
			}
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if peak > 64<<20 {
		t.Errorf("heap in use reached %d MiB while streaming %d MiB", peak>>20, size>>20)
	}
	if c := s.Counts(); c.Lines < 1000 || c.Events == 0 {
		t.Errorf("counts %+v", c)
	}
}

func seedFixtures(f *testing.F) {
	for _, path := range fixtures(f) {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
		for _, l := range strings.Split(string(b), "\n") {
			if len(l) < 4096 {
				f.Add(l + "\n")
			}
		}
	}
}

func fuzzScanner(f *testing.F, engine Engine) {
	seedFixtures(f)
	f.Fuzz(func(t *testing.T, text string) {
		s := NewScanner(strings.NewReader(text), Options{Engine: engine, MaxLineBytes: 1 << 16, Reference: utc(2025, 1, 1, 0, 0, 0, 0)})
		z := NewSummarizer()
		for s.Scan() {
			ev := s.Event()
			if ev.Kind == KindUnknown {
				t.Fatalf("event without a kind: %+v", ev)
			}
			if ev.Line < 1 || ev.Line > s.Counts().Lines {
				t.Fatalf("line number %d out of range", ev.Line)
			}
			z.Add(ev)
		}
		if s.Err() != nil {
			t.Fatal(s.Err())
		}
		c := s.Counts()
		if c.Events+c.Ignored+c.Unknown+c.Bad+c.Duplicates+c.Rejoined != c.Lines {
			t.Fatalf("counts do not add up: %+v", c)
		}
		_ = z.Summary()
	})
}

func FuzzScannerAuto(f *testing.F)     { fuzzScanner(f, EngineUnknown) }
func FuzzScannerVLLM(f *testing.F)     { fuzzScanner(f, EngineVLLM) }
func FuzzScannerSGLang(f *testing.F)   { fuzzScanner(f, EngineSGLang) }
func FuzzScannerLlamaCpp(f *testing.F) { fuzzScanner(f, EngineLlamaCpp) }
func FuzzScannerNodeLlama(f *testing.F) {
	fuzzScanner(f, EngineNodeLlamaCpp)
}

func FuzzScannerTransformersCB(f *testing.F) {
	fuzzScanner(f, EngineTransformersCB)
}

func FuzzUnwrap(f *testing.F) {
	f.Add(`{"log":"INFO 10-28 11:16:34 x.py:1] hi\n","stream":"stderr","time":"2024-10-28T18:16:34.123Z"}`)
	f.Add("2024-10-28T18:16:34.123456789Z stderr F hello")
	f.Add("Oct 28 18:16:34 host unit[12]: \x1b[32mhi\x1b[0m\rbar")
	f.Add("[2025-12-13T19:54:35Z] x")
	f.Add("svc  | [12] 0.01.002.003 I srv x")
	f.Fuzz(func(t *testing.T, line string) {
		var u unwrapper
		msg, st, _ := u.unwrap([]byte(line))
		if len(msg) > len(line)*2+16 {
			t.Fatalf("unwrapped message grew: %d > %d", len(msg), len(line))
		}
		if st.q == TimeComplete && st.t.IsZero() {
			t.Fatal("complete stamp without a time")
		}
	})
}

func FuzzParseFloat(f *testing.F) {
	for _, s := range []string{"0.0", "84.9", "1,823,372", "7.557572e+06", "-3.5", "0.007507552643049313", "1e400", "inf"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, rest, ok := parseFloatPrefix([]byte(s))
		if !ok {
			return
		}
		used := strings.TrimLeft(s[:len(s)-len(rest)], " ")
		if used == "" {
			t.Fatalf("%q: ok without consuming anything", s)
		}
		if strings.ContainsAny(used, ",") || strings.HasSuffix(strings.ToLower(used), "inf") || strings.HasSuffix(strings.ToLower(used), "nan") {
			return
		}
		want, err := strconv.ParseFloat(used, 64)
		if err != nil {
			var ne *strconv.NumError
			if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
				return
			}
			t.Fatalf("%q: parsed %v but strconv says %v", used, v, err)
		}
		if v != want {
			t.Fatalf("%q: %v, strconv %v", used, v, want)
		}
	})
}

// TestFindMarkerMatchesContains checks the fast marker search against
// strings.Contains over every line of every fixture (the real lines behind
// each marker are in testdata/serverlogs, see TestProblemExcerpts) plus the
// edge cases of the search itself: a marker's prefix, empty and short input.
func TestFindMarkerMatchesContains(t *testing.T) {
	lines := []string{"nothing here) die", "", "x"}
	for _, name := range fixtures(t) {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.Split(string(b), "\n")...)
	}
	found := map[int]bool{}
	for _, l := range lines {
		want := -1
		for i, m := range problemMarkers {
			if strings.Contains(l, m.marker) {
				found[i] = true
				if want < 0 {
					want = i
				}
			}
		}
		if got := findMarker([]byte(l)); got != want {
			t.Errorf("%q: findMarker %d, want %d", l, got, want)
		}
	}
	for i, m := range problemMarkers {
		if !found[i] {
			t.Logf("marker %q: no fixture line holds it", m.marker)
		}
	}
}

// TestNoAllocPerQuietLine checks the hot-path promise of docs/performance.md:
// lines that produce no event (ignored and unknown lines, wrapped or not)
// allocate nothing, so the cost of scanning them does not grow the heap.
func TestNoAllocPerQuietLine(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	quiet := []string{
		"INFO 10-28 11:16:34 launcher.py:27] Route: /v1/chat/completions, Methods: POST",                // ignored vLLM line
		"  File \"/usr/local/lib/python3.12/dist-packages/vllm/engine/llm_engine.py\", line 1, in step", // traceback frame
		"Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.31s/it]",          // progress bar
		`{"log":"INFO 10-28 11:16:34 launcher.py:27] Route: /v1/models, Methods: GET\n","stream":"stderr","time":"2024-10-28T18:16:34.123Z"}`,
		"2024-10-28T18:16:34.123456789Z INFO 10-28 11:16:34 launcher.py:27] Route: /v1/models, Methods: GET",
		"\x1b[32mINFO\x1b[0m 10-28 11:16:34 launcher.py:27] Route: /v1/models, Methods: GET",
	}
	scan := func(n int) func() {
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteString(quiet[i%len(quiet)])
			b.WriteByte('\n')
		}
		text := b.String()
		return func() {
			s := NewScanner(strings.NewReader(text), Options{Engine: EngineVLLM, Year: 2024})
			for s.Scan() {
			}
		}
	}
	few := testing.AllocsPerRun(5, scan(len(quiet)))
	many := testing.AllocsPerRun(5, scan(100*len(quiet)))
	if many > few {
		t.Errorf("%v allocations for %d quiet lines, %v for %d: lines without events allocate", many, 100*len(quiet), few, len(quiet))
	}
}

func TestPreemptionLogging(t *testing.T) {
	for _, tt := range []struct {
		file string
		want PreemptionLogging
	}{
		{"vllm-0.5.0-offline-swap-preemption.log", PreemptionsSampled},  // V0 preemption lines
		{"vllm-0.8.3-v0-ray-prefixcache.log", PreemptionsSampled},       // "Initializing a V0 LLM engine"
		{"vllm-0.10.2-v1-startup-nondefault.log", PreemptionsNotLogged}, // V1
		{"vllm-0.13.x-v1-loggers248-stats.log", PreemptionsNotLogged},   // generation unknown, no preemption line
		{"sglang-0.5.18-startup-retract.log", PreemptionsAll},           // retractions
		{"llamacpp-b9265-new-slots.log", PreemptionsNotLogged},          // llama.cpp never preempts
		{"node-llama-cpp-3.21.1-preemptions.log", PreemptionsAll},       // test engine
		{"transformers-cb-0.1.0-fakeengine.log", PreemptionsAll},        // GPU engine
	} {
		f, err := os.Open(filepath.Join(fixtureDir, tt.file))
		if err != nil {
			t.Fatal(err)
		}
		sum, err := ScanSummary(f, Options{})
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got := sum.PreemptionLogging(); got != tt.want {
			t.Errorf("%s (engine %s %s): %s, want %s", tt.file, sum.Engine, sum.Generation, got, tt.want)
		}
	}
}
