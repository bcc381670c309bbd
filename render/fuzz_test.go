package render

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/rundir"
)

// fuzzRows turns fuzz bytes into typed rows: each value is taken from the
// bytes, and floats are drawn from the values that broke reports (NaN,
// ±Inf, 1e308, negatives) as often as from ordinary ones.
type fuzzRows struct{ b []byte }

func (f *fuzzRows) u8() byte {
	if len(f.b) == 0 {
		return 0
	}
	c := f.b[0]
	f.b = f.b[1:]
	return c
}

func (f *fuzzRows) n(limit int) int { return int(f.u8()) % limit }

func (f *fuzzRows) float() float64 {
	switch c := f.u8(); c % 10 {
	case 0:
		return math.NaN()
	case 1:
		return math.Inf(1)
	case 2:
		return math.Inf(-1)
	case 3:
		return 0
	case 4:
		return -float64(c)
	case 5:
		return 1e308
	case 6:
		var raw [8]byte
		for i := range raw {
			raw[i] = f.u8()
		}
		return math.Float64frombits(binary.LittleEndian.Uint64(raw[:]))
	default:
		return float64(f.u8()) / 16
	}
}

// seconds is a duration in ns: mostly ordinary, sometimes out of range.
func (f *fuzzRows) seconds() int64 {
	s := f.float()
	if f.u8()%4 != 0 {
		s = math.Abs(s)
		if math.IsNaN(s) || s > 100 {
			s = 0.05
		}
	}
	return int64(s * 1e9) // an out-of-range float gives whatever Go gives: the import bug
}

var fuzzLoads = []int64{1, 2, 4, 8, 1000, 1001, 0, -1}

// run builds a sweep run (and sometimes a probe) in memory.
func (f *fuzzRows) runs() []*analyze.Run {
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	m := &rundir.Manifest{
		Kinds: []string{rundir.KindSweep}, StartTime: start, Complete: f.u8()%4 != 0,
		GPUs:   []rundir.GPU{{Index: 0, Name: "NVIDIA H200", PowerLimitW: 700}},
		Engine: &rundir.Engine{Name: "vllm", Version: "0.13.0", Model: "m", DType: "bfloat16", MaxContextTokens: 4096},
		Workload: &rundir.Workload{Endpoint: "completions", Prompt: rundir.Dist{Kind: "fixed", Mean: f.float()},
			Output: rundir.Dist{Kind: "fixed", Mean: 16}, Mode: "closed", FixedOutput: true},
	}
	run := &analyze.Run{Dir: "fuzz", Manifest: m}
	at := start.UnixNano()
	open := f.u8()%3 == 0
	if open {
		m.Workload.Mode = "open"
	}
	for li := range 1 + f.n(4) {
		c := fuzzLoads[f.n(len(fuzzLoads))]
		level := rundir.LevelRow{LevelIndex: int32(li), Concurrency: c, StartNS: at, Complete: f.u8()%5 != 0}
		if open {
			level.RateRPS = f.float()
		}
		if f.u8()%6 == 0 { // imported per-level statistics instead
			run.LevelStat = append(run.LevelStat, rundir.LevelStatsRow{Concurrency: c, RateRPS: level.RateRPS,
				RequestsOK: int64(f.n(300)), Errors: int64(f.n(3)), WindowS: f.float(), OutputTokPerS: f.float(), RequestsPerS: f.float(),
				TTFTP50S: f.float(), TTFTP99S: f.float(), TPOTP50S: f.float(), TPOTP99S: f.float(), ITLP99S: f.float(), E2EP50S: f.float()})
			continue
		}
		for k := range 1 + f.n(12) {
			id := string(rune('a'+li)) + string(rune('a'+k))
			send := at + f.seconds()
			first := send + f.seconds()
			end := first + f.seconds()
			tokens := int64(f.n(20))
			r := rundir.RequestRow{RequestID: id, LevelIndex: int32(li), Concurrency: c, Seq: int64(k), Warmup: k == 0,
				Endpoint: "completions", IntendedSendNS: send - f.seconds()/8, SendNS: send, EndNS: end,
				PromptTokensTarget: 512, OutputTokensTarget: 16, ClientChunks: tokens, Status: rundir.StatusOK, HTTPStatus: 200}
			if f.u8()%5 == 0 {
				r.Status, r.HTTPStatus = rundir.StatusHTTPError, 503
			}
			if f.u8()%7 != 0 {
				r.FirstTokenNS = &first
			}
			if f.u8()%2 == 0 {
				r.ServerCompletionTokens = &tokens
			}
			run.Requests = append(run.Requests, r)
			gap := f.seconds() / 16
			for t := range tokens {
				run.Tokens = append(run.Tokens, rundir.TokenRow{RequestID: id, Index: int32(t), RecvNS: first + t*gap, Tokens: 1, Bytes: 4})
			}
			if k == 0 {
				level.WarmupEndNS = end
			}
			level.EndNS = max(level.EndNS, end)
			level.Requests++
		}
		for range f.n(6) {
			ns := at + f.seconds()
			name := []string{"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:gpu_cache_usage_perc", "vllm:num_preemptions_total"}[f.n(4)]
			run.Metrics = append(run.Metrics, rundir.ServerMetricRow{TimeNS: ns, Name: name, Value: f.float()})
			run.GPU = append(run.GPU, rundir.GPUTelemetryRow{TimeNS: ns, SMClockMHz: f.float(), PowerW: f.float(), GPUUtilPct: f.float(), Processes: 1})
			run.Client = append(run.Client, rundir.ClientSampleRow{TimeNS: ns, CPUUserS: f.float(), CPUs: 2, OpenStreams: c, SendLagMaxS: f.float()})
		}
		run.Levels = append(run.Levels, level)
		at = level.EndNS + int64(time.Second)
	}
	runs := []*analyze.Run{run}
	if f.u8()%2 == 0 {
		pm := &rundir.Manifest{Kinds: []string{rundir.KindProbe}, StartTime: start, Complete: true, GPUs: m.GPUs}
		probe := &analyze.Run{Dir: "probe", Manifest: pm}
		for _, b := range []int64{1, 64, 1024} {
			probe.GEMM = append(probe.GEMM, rundir.ProbeGEMMRow{Mode: "solo", Batch: b, K: 8192, N: 8192, DType: "bf16",
				FLOP: 2 * float64(b) * 8192 * 8192, Bytes: 2 * float64(b*8192+8192*8192+b*8192), Intensity: f.float(),
				Repeats: 5, CallsPerRepeat: 10, TimeMedianS: f.float(), TimeMinS: f.float(), TimeMaxS: f.float(), FLOPPerS: f.float()})
		}
		probe.Bandwidth = append(probe.Bandwidth, rundir.ProbeBandwidthRow{Mode: "solo", Method: "copy_kernel", BufferBytes: 1 << 30,
			BytesPerCall: 2 << 30, Repeats: 5, CallsPerRepeat: 10, TimeMedianS: f.float(), BytesPerS: f.float()})
		runs = append(runs, probe)
	}
	return runs
}

// Random typed rows through the analysis and both renderers (issue 21
// item 3): whatever the rows hold, there is no panic, and a report the
// analysis accepts is written whole, analysis.json included.
func FuzzAnalyzeRender(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 0, 2, 4, 4, 0, 1, 9, 9, 9, 9, 9, 9, 9, 9, 9, 0, 0, 0, 0})
	f.Add(bytes.Repeat([]byte{7, 3, 8, 9, 0, 1, 2, 5}, 40))
	f.Add(bytes.Repeat([]byte{4, 5, 6, 9, 11, 17}, 60))
	f.Fuzz(func(t *testing.T, data []byte) {
		rows := &fuzzRows{b: data}
		set := analyze.Default()
		set.Now = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
		set.BootstrapResamples = 20
		rep, err := analyze.Analyze(rows.runs(), set)
		if err != nil {
			return // refused with an error: allowed; a panic is not
		}
		if _, err := json.Marshal(rep); err != nil {
			t.Fatalf("analysis.json: %v", err)
		}
		if err := Markdown(io.Discard, rep); err != nil {
			t.Fatalf("Markdown: %v", err)
		}
		if err := HTML(io.Discard, rep); err != nil {
			t.Fatalf("HTML: %v", err)
		}
	})
}

// What the analysis left out of a run's rows, or cleared from its own
// results, is said on the page, once, in words.
func TestInputNotesSaid(t *testing.T) {
	rep := exampleReport(t, "h200-probe", "sweep-testengine")
	if rep.Runs[0].Roofline == nil || rep.Runs[1].Sweep == nil {
		t.Fatal("want a probe run, then a sweep run")
	}
	rep.Runs[0].Notes = append(rep.Runs[0].Notes, analyze.Note{Kind: analyze.NoteNonFinite, Table: rundir.TableProbeGEMM, Count: 2, Of: 1500})
	rep.Runs[1].Notes = append(rep.Runs[1].Notes, analyze.Note{Kind: analyze.NoteBufferedStream, Table: rundir.TableTokens, Count: 40, Of: 40})
	rep.Notes = append(rep.Notes, analyze.Note{Kind: analyze.NoteNonFiniteResult, Count: 1})
	md, page := renderBoth(t, rep)
	for _, want := range []string{
		"2 of 1,500 rows of probe_gemm held a value that is not a number (NaN or infinite)",
		"The stream was buffered: in 40 of 40 successful requests every text chunk arrived in one read",
		"1 values the analysis computed were not finite numbers",
	} {
		inMD := []byte(strings.ReplaceAll(want, "_", `\_`)) // Markdown escapes the underscore
		if n := bytes.Count(md, inMD); n != 1 {
			t.Errorf("the Markdown says %q %d times, want once", want, n)
		}
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("the HTML does not say %q", want)
		}
	}
}
