package analyze

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/rundir"
)

// fakeSweep builds a run directory with rundir's writers. Everything in it
// is constructed by the test (request timings, metric values, telemetry,
// client samples) except the server log lines, which tests take from the
// real fixtures in testdata/serverlogs; their receive times in
// server_log_lines are constructed to place each line inside a level.
type fakeSweep struct {
	t        *testing.T
	manifest *rundir.Manifest
	levels   []rundir.LevelRow
	reqs     []rundir.RequestRow
	toks     []rundir.TokenRow
	metrics  []rundir.ServerMetricRow
	gpu      []rundir.GPUTelemetryRow
	client   []rundir.ClientSampleRow
	logLines []string
	logTimes []int64
	// serverCPU holds the server's thread samples (serverCPULevel).
	serverCPU []rundir.ServerCPURow
	// cpuEnergy holds RAPL readings (raplLevel).
	cpuEnergy []rundir.CPUEnergyRow
	next      int64 // start of the next level, Unix ns
	noTokens  bool
}

var fakeStart = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func newFakeSweep(t *testing.T) *fakeSweep {
	return &fakeSweep{
		t: t,
		manifest: &rundir.Manifest{
			Kinds: []string{rundir.KindSweep}, StartTime: fakeStart, Complete: true,
			GPUs:   []rundir.GPU{{Index: 0, Name: "NVIDIA H200", Driver: "580.159.04", CUDAVersion: "13.0", PowerLimitW: 700}},
			Engine: &rundir.Engine{Name: "vllm", Version: "0.13.0", Model: "meta-llama/Llama-3.1-8B-Instruct", Quantization: "none", DType: "bfloat16", MaxContextTokens: 4096, Flags: []string{"--max-model-len", "4096"}},
			Workload: &rundir.Workload{Endpoint: "completions", Prompt: rundir.Dist{Kind: "fixed", Mean: 512}, Output: rundir.Dist{Kind: "fixed", Mean: 16},
				Mode: "closed", FixedOutput: true},
		},
		next: fakeStart.UnixNano(),
	}
}

const fakeTokens = 16

// level adds a closed-loop level of concurrency c: each of c lanes sends
// one warm-up request and then perLane measured requests back to back.
// ttft gives each request's TTFT in seconds; every request streams
// fakeTokens one-token chunks tpotS apart.
func (f *fakeSweep) level(c, perLane int, ttft func(lane, j int) float64, tpotS float64) {
	idx := int32(len(f.levels))
	start := f.next
	warmEnd, end := int64(0), start
	seq := int64(0)
	for lane := range c {
		at := start
		for j := -1; j < perLane; j++ {
			tt := ttft(lane, max(j, 0))
			first := at + int64(tt*1e9)
			stop := first + int64(tpotS*1e9*(fakeTokens-1))
			id := "r" + itoa(int(idx)) + "-" + itoa(lane) + "-" + itoa(j+1)
			n := int64(fakeTokens)
			prompt := int64(512)
			ft := first
			f.reqs = append(f.reqs, rundir.RequestRow{
				RequestID: id, LevelIndex: idx, Concurrency: int64(c), Seq: seq, Warmup: j < 0, Endpoint: "completions",
				IntendedSendNS: at, SendNS: at, FirstTokenNS: &ft, EndNS: stop,
				PromptTokensTarget: 512, OutputTokensTarget: fakeTokens, ClientChunks: fakeTokens,
				ServerPromptTokens: &prompt, ServerCompletionTokens: &n, FinishReason: "length", Status: rundir.StatusOK, HTTPStatus: 200,
			})
			seq++
			if !f.noTokens {
				for k := range fakeTokens {
					f.toks = append(f.toks, rundir.TokenRow{RequestID: id, Index: int32(k), RecvNS: first + int64(float64(k)*tpotS*1e9), Tokens: 1, Bytes: 4})
				}
			}
			if j < 0 {
				warmEnd = max(warmEnd, stop)
			}
			end = max(end, stop)
			at = stop
		}
	}
	f.levels = append(f.levels, rundir.LevelRow{LevelIndex: idx, Concurrency: int64(c), StartNS: start, WarmupEndNS: warmEnd, EndNS: end,
		Requests: int64(c * perLane), Complete: true})
	f.next = end + int64(time.Second)
}

// at is a time inside level i at fraction frac of its measured window.
func (f *fakeSweep) at(i int, frac float64) int64 {
	l := f.levels[i]
	return l.WarmupEndNS + int64(frac*float64(l.EndNS-l.WarmupEndNS))
}

func (f *fakeSweep) log(ns int64, line string) {
	f.logLines = append(f.logLines, line)
	f.logTimes = append(f.logTimes, ns)
}

func (f *fakeSweep) metric(ns int64, name, labels string, v float64) {
	f.metrics = append(f.metrics, rundir.ServerMetricRow{TimeNS: ns, Name: name, Labels: labels, Value: v})
}

// gpuLevel records telemetry samples across level i's window.
func (f *fakeSweep) gpuLevel(i int, utilPct, powerW float64) {
	for k := range 5 {
		f.gpu = append(f.gpu, rundir.GPUTelemetryRow{TimeNS: f.at(i, float64(k)/4), Device: 0, GPUUtilPct: utilPct, PowerW: powerW, SMClockMHz: 1980, TemperatureC: 60, Processes: 1})
	}
}

// gpuEveryLevel records the same telemetry in every level.
func (f *fakeSweep) gpuEveryLevel(utilPct, powerW float64) {
	for i := range f.levels {
		f.gpuLevel(i, utilPct, powerW)
	}
}

// raplLevel records a RAPL package counter across level i's window at a
// steady draw of watts.
func (f *fakeSweep) raplLevel(i int, watts float64) {
	l := f.levels[i]
	for k := range 5 {
		ns := f.at(i, float64(k)/4)
		uj := int64(watts * float64(ns-l.WarmupEndNS) / 1e3)
		f.cpuEnergy = append(f.cpuEnergy, rundir.CPUEnergyRow{TimeNS: ns, Zone: "intel-rapl:0", Name: "package-0", EnergyUJ: 1e9 + uj, MaxEnergyRangeUJ: 262143328850})
	}
}

// clientLevel records client samples across level i's window at the given
// CPU busy fraction of 2 cores.
func (f *fakeSweep) clientLevel(i int, busy float64) {
	l := f.levels[i]
	cpu := 0.0
	if n := len(f.client); n > 0 {
		cpu = f.client[n-1].CPUUserS
	}
	prev := l.WarmupEndNS
	for k := range 5 {
		ns := f.at(i, float64(k)/4)
		cpu += busy * 2 * float64(ns-prev) / 1e9
		prev = ns
		f.client = append(f.client, rundir.ClientSampleRow{TimeNS: ns, CPUUserS: cpu, CPUs: 2, OpenStreams: l.Concurrency})
	}
}

// clientEveryLevel records client samples at the same busy fraction in
// every level.
func (f *fakeSweep) clientEveryLevel(busy float64) {
	for i := range f.levels {
		f.clientLevel(i, busy)
	}
}

// write writes the run and loads it back.
func (f *fakeSweep) write() *Run {
	t := f.t
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	r, err := rundir.Create(dir, f.manifest)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(rundir.WriteTable(dir, rundir.TableLevels, f.levels))
	must(rundir.WriteTable(dir, rundir.TableRequests, f.reqs))
	writeIfAny(t, dir, rundir.TableTokens, f.toks)
	writeIfAny(t, dir, rundir.TableServerMetrics, f.metrics)
	writeIfAny(t, dir, rundir.TableGPUTelemetry, f.gpu)
	writeIfAny(t, dir, rundir.TableClientSamples, f.client)
	writeIfAny(t, dir, rundir.TableServerCPU, f.serverCPU)
	writeIfAny(t, dir, rundir.TableCPUEnergy, f.cpuEnergy)
	if len(f.logLines) > 0 {
		must(os.WriteFile(filepath.Join(dir, rundir.ServerLogFile), []byte(strings.Join(f.logLines, "\n")+"\n"), 0o644))
		var rows []rundir.ServerLogLineRow
		for i, ns := range f.logTimes {
			rows = append(rows, rundir.ServerLogLineRow{Line: int64(i + 1), RecvNS: ns})
		}
		must(rundir.WriteTable(dir, rundir.TableServerLogLines, rows))
	}
	must(r.Finish(nil))
	run, err := Load(dir)
	must(err)
	return run
}

// writeIfAny writes a table the run may lack, as a sweep does: none when
// there are no rows.
func writeIfAny[T any](t *testing.T, dir, table string, rows []T) {
	t.Helper()
	if len(rows) == 0 {
		return
	}
	if err := rundir.WriteTable(dir, table, rows); err != nil {
		t.Fatal(err)
	}
}

// fixtureLines reads a real log fixture.
func fixtureLines(t *testing.T, name string) []string {
	t.Helper()
	fh, err := os.Open(filepath.Join("..", "testdata", "serverlogs", name))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var lines []string
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

func itoa(i int) string { return strconv.Itoa(i) }

func constTTFT(s float64) func(int, int) float64 { return func(int, int) float64 { return s } }

func testSettings() Settings {
	s := Default()
	s.Now = fakeStart
	s.BootstrapResamples = 200
	return s
}

func analyzeOne(t *testing.T, run *Run, set Settings) *SweepAnalysis {
	t.Helper()
	rep, err := Analyze([]*Run{run}, set)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Runs[0].Sweep == nil {
		t.Fatal("no sweep analysis")
	}
	return rep.Runs[0].Sweep
}

// readConfig reads one of testdata/modelconfigs.
func readConfig(t *testing.T, name string) *ModelSpec {
	t.Helper()
	m, err := ReadModelConfig(filepath.Join("..", "testdata", "modelconfigs", name))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// serverCPULevel records the server's threads across level i's window:
// its work spread evenly over `threads` busy threads wanting demand cores
// in all, and an idle main thread.
func (f *fakeSweep) serverCPULevel(i int, demand float64, threads int) {
	l := f.levels[i]
	run := map[int32]float64{}
	for _, r := range f.serverCPU {
		run[r.TID] = max(run[r.TID], r.RunS+r.WaitS)
	}
	prev := l.WarmupEndNS
	for k := range 5 {
		ns := f.at(i, float64(k)/4)
		for t := range threads {
			tid := int32(11 + t)
			run[tid] += demand / float64(threads) * float64(ns-prev) / 1e9
			f.serverCPU = append(f.serverCPU, rundir.ServerCPURow{TimeNS: ns, PID: 10, TID: tid, Thread: "decode",
				CPUUserS: run[tid] * 0.8, RunS: run[tid] * 0.8, WaitS: run[tid] * 0.2, HostCPUs: 2})
		}
		prev = ns
		f.serverCPU = append(f.serverCPU, rundir.ServerCPURow{TimeNS: ns, PID: 10, TID: 10, Thread: "node", RunS: 0.01 * float64(k), HostCPUs: 2})
	}
}

// openLevel adds an open-loop level: n measured requests (and one warm-up)
// arriving every 1/rate s on schedule, served by slots client slots, each
// request taking ttftS to its first token and then fakeTokens tokens tpotS
// apart. Past slots/(service time) requests per second they wait for a
// free slot, as headroom's open loop does.
func (f *fakeSweep) openLevel(rate float64, n, slots int, ttftS, tpotS float64) {
	idx := int32(len(f.levels))
	start := f.next
	free := make([]int64, slots)
	for k := range free {
		free[k] = start
	}
	warmEnd, end := int64(0), start
	for j := -1; j < n; j++ {
		intended := start + int64(float64(j+1)/rate*1e9)
		k := 0
		for s := range free {
			if free[s] < free[k] {
				k = s
			}
		}
		send := max(intended, free[k])
		first := send + int64(ttftS*1e9)
		stop := first + int64(tpotS*1e9*(fakeTokens-1))
		free[k] = stop
		nTok, prompt := int64(fakeTokens), int64(512)
		ft := first
		f.reqs = append(f.reqs, rundir.RequestRow{
			RequestID: "o" + itoa(int(idx)) + "-" + itoa(j+1), LevelIndex: idx, Concurrency: int64(slots), Seq: int64(j + 1), Warmup: j < 0, Endpoint: "completions",
			IntendedSendNS: intended, SendNS: send, FirstTokenNS: &ft, EndNS: stop,
			PromptTokensTarget: 512, OutputTokensTarget: fakeTokens, ClientChunks: fakeTokens,
			ServerPromptTokens: &prompt, ServerCompletionTokens: &nTok, FinishReason: "length", Status: rundir.StatusOK, HTTPStatus: 200,
		})
		if j < 0 {
			warmEnd = intended + int64(1e9/rate)
		}
		end = max(end, stop)
	}
	f.levels = append(f.levels, rundir.LevelRow{LevelIndex: idx, Concurrency: int64(slots), RateRPS: rate, StartNS: start, WarmupEndNS: warmEnd, EndNS: end,
		Requests: int64(n), Complete: true})
	f.next = end + int64(time.Second)
}
