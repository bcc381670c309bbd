package analyze

// The verdict a server log, or saved /metrics dumps, supports alone
// (`headroom inspect-log`, and `headroom report` given a bare log or dump):
// the log's own time series are cut into windows by load, and the sweep's
// verdict rules (DiagnoseWindows) are applied to them. What those rules
// need and a log cannot give (client latencies, GPU telemetry) is named;
// where the rules leave a verdict open for want of it, the log-only
// completions below say what the lines alone support, marked as such.

import (
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/headroom-llm/headroom/analyze/serverlog"
	"github.com/headroom-llm/headroom/analyze/servermetrics"
)

// Log-only walls, the values of `headroom inspect-log --json`'s "wall".
const (
	LogWallKVCache  = "kv_cache"
	LogWallQueueing = "queueing"
	LogWallCompute  = "compute"
	// LogWallEngineOverhead: the engine's host side set the pace (the
	// sweep's engine-overhead wall, or llama-server's prompt cache turning
	// over under load).
	LogWallEngineOverhead = "engine_overhead"
	LogWallNone           = "none"
	LogWallEngineError    = "engine_error"
	LogWallUnknown        = "unknown"
)

// EvRunningMax is evidence of the most requests a log or dump showed
// running at once (Value), for the log-only verdicts.
const EvRunningMax = "running_max"

// EvPromptCacheEvictions is evidence of llama-server's host-RAM prompt
// cache evicting entries while a batch ran: Value evictions, Ref the
// requests started meanwhile, Line and Text the first eviction.
const EvPromptCacheEvictions = "prompt_cache_evictions"

// What a log-only verdict rests on (LogVerdict.Basis).
const (
	// LogBasisFatal: the engine died, failed to start or hung (the log's
	// first fatal error); it decides before any wall.
	LogBasisFatal = "fatal_error"
	// LogBasisRules: the sweep's rules found the wall in the windows.
	LogBasisRules = "rules"
	// LogBasisEngineQueue: requests waited in the engine while its cache
	// had room (a record with two or more waiting, or one waiting in two
	// records). The rules' queue checks also want the wait to grow with
	// the load, which only client latencies show.
	LogBasisEngineQueue = "engine_queue"
	// LogBasisBatch: a batch of two or more ran with nothing waiting and
	// no cache pressure: decode speed is the limit, which the accelerator's
	// telemetry would confirm (Unconfirmed).
	LogBasisBatch = "batch_running"
	// LogBasisPromptCache: llama-server's host-RAM prompt cache evicted at
	// least one entry for every request started while two or more ran:
	// every start pays a copy of a slot's cache to host memory, which
	// stalls the batch (Unconfirmed: GPU telemetry would show the
	// accelerator idling).
	LogBasisPromptCache = "prompt_cache_thrash"
	// LogBasisIdle: at most one request ran at a time: no wall was reached.
	LogBasisIdle = "idle"
	// LogBasisNoLoad: the file shows no running or waiting counts, no
	// cache pressure and no request.
	LogBasisNoLoad = "no_load"
)

// LogVerdict is the wall a log (or dump) alone supports, with its
// evidence and what a log cannot tell.
type LogVerdict struct {
	Wall  string `json:"wall"`
	Basis string `json:"basis"`
	// Unconfirmed: the wall is what the lines point to, but Deciding (a
	// Measure* code) would confirm it.
	Unconfirmed bool   `json:"unconfirmed,omitempty"`
	Deciding    string `json:"deciding,omitempty"`
	// Crash is the fatal error's class (serverlog.Problem classes).
	Crash string `json:"crash,omitempty"`
	// Evidence: quoted log lines and readings, strongest first.
	Evidence []Evidence `json:"evidence,omitempty"`
	// Diagnosis is the sweep's rules over the windows.
	Diagnosis Diagnosis   `json:"diagnosis"`
	Windows   []LogWindow `json:"windows,omitempty"`
	// CannotTell lists the Measure* codes a verdict would also rest on
	// that the file cannot give.
	CannotTell []string `json:"cannot_tell,omitempty"`
}

// LogWindow is one stretch of the log at one load: the records whose
// requests in the engine (running + waiting) fall in one doubling band.
type LogWindow struct {
	// Load is the most requests in the engine in the window.
	Load      int   `json:"load"`
	Records   int   `json:"records"`
	FirstLine int64 `json:"first_line,omitempty"`
	LastLine  int64 `json:"last_line,omitempty"`
	// Readings, -1 when the records do not carry them.
	RunningMax  float64 `json:"running_max"`
	WaitingMax  float64 `json:"waiting_max"`
	KVUsageMax  float64 `json:"kv_usage_max"`
	Preemptions int     `json:"preemptions"`
	// TPOTP50S is the median of running ÷ generation throughput over the
	// window's records: the time per output token a decode batch of that
	// size implies (0 when the records carry no throughput).
	TPOTP50S      float64 `json:"tpot_p50_s,omitempty"`
	OutputTokPerS float64 `json:"output_tok_per_s,omitempty"`
}

// logPoint is one reading: a stats record of the log or a scrape of a
// dump.
type logPoint struct {
	ns                             int64
	line                           int64
	text, source, name             string
	running, waiting, kv, genTPS   float64
	hasRun, hasWait, hasKV, hasGen bool
	preemptCounter                 float64 // a dump's preemption counter, -1 when absent
	preemptDelta                   int     // preemptions since the previous scrape (dumps)
}

// maxWindowEvidence bounds the preemption and KV-full lines a window keeps
// as evidence (its counts go on); maxWindowTPOTs the TPOT values it keeps
// for the rules' intervals (an even sample of them beyond that), so a
// 1 GiB log takes bounded memory.
const (
	maxWindowEvidence = 20
	maxWindowTPOTs    = 4096
)

// bandAcc folds the readings of one load band as they come.
type bandAcc struct {
	w                   Window
	lw                  LogWindow
	tpots               []float64
	tpotStride, tpotSeq int
	genSum              float64
	genN                int
	waitSum             float64
	waitN               int
}

// logSeries folds the readings and events of a log or a dump, in order,
// into windows by load band.
type logSeries struct {
	bands    map[int]*bandAcc
	lastBand int // the band of the last reading with running or waiting; -1 before one
	// pending holds events seen before the first reading.
	pendingPreempt, pendingKVFull []Evidence
	busySlots                     map[int]bool
	slotEvents, timings           int
	records                       int // readings with running or waiting
	waitRecords, bigWaitRecords   int // readings with waiting ≥ 1, ≥ 2 (cache with room)
	runMax                        float64
	runMaxEv                      Evidence
	// running is the last reading's running count; busyEvictions and
	// busyLaunches the prompt-cache evictions and the requests started
	// while two or more ran, evictEv the first such eviction.
	running                     float64
	busyEvictions, busyLaunches int
	evictEv                     Evidence
	logTimes, kvSeen            bool
	flags                       []string
}

func newLogSeries() *logSeries {
	return &logSeries{bands: map[int]*bandAcc{}, busySlots: map[int]bool{}, lastBand: -1, runMax: -1}
}

// band is the doubling band of a load: 1, 2, 3-4, 5-8, ...
func band(load float64) int {
	if load <= 1 {
		return 0
	}
	return int(math.Ceil(math.Log2(load)))
}

func (ls *logSeries) bandOf(b int) *bandAcc {
	if a := ls.bands[b]; a != nil {
		return a
	}
	a := &bandAcc{lw: LogWindow{RunningMax: -1, WaitingMax: -1, KVUsageMax: -1}, tpotStride: 1}
	ls.bands[b] = a
	return a
}

// event attaches a preemption or KV-full line to the window of the last
// reading, or keeps it for the first.
func (ls *logSeries) event(e Evidence, kvFull bool) {
	ls.kvSeen = true
	if ls.lastBand < 0 && len(ls.bands) == 0 {
		if kvFull {
			ls.pendingKVFull = append(ls.pendingKVFull, e)
		} else {
			ls.pendingPreempt = append(ls.pendingPreempt, e)
		}
		return
	}
	b := max(ls.lastBand, 0)
	ls.attach(ls.bandOf(b), e, kvFull)
}

func (ls *logSeries) attach(a *bandAcc, e Evidence, kvFull bool) {
	ev := &a.w.Evidence
	s := &a.w.Level.Server
	if kvFull {
		if len(ev.KVFullLog) < maxWindowEvidence {
			ev.KVFullLog = append(ev.KVFullLog, e)
		}
		return
	}
	n := max(e.Count, int(e.Value))
	s.Preemptions += n
	s.PreemptionsKnown = true
	if e.Source == EvidenceMetric {
		s.PreemptionsSource = e.Name
		if ev.PreemptMetric == nil {
			ec := e
			ev.PreemptMetric = &ec
		} else {
			ev.PreemptMetric.Value += e.Value
		}
		return
	}
	s.PreemptionsSource = "server log"
	if len(ev.PreemptLog) < maxWindowEvidence {
		ev.PreemptLog = append(ev.PreemptLog, e)
	}
}

// add takes one log event.
func (ls *logSeries) add(ev *serverlog.Event, set Settings) {
	ns := eventTimeNS(ev)
	evd := Evidence{Source: EvidenceLog, TimeNS: ns, Line: ev.Line}
	switch ev.Kind {
	case serverlog.KindStats:
		st := &ev.Stats
		p := logPoint{ns: ns, line: ev.Line, text: ev.Raw, source: EvidenceLog, preemptCounter: -1}
		if st.Has(serverlog.FieldRunning) {
			p.running, p.hasRun = float64(st.Running), true
		}
		if st.Has(serverlog.FieldWaiting) {
			p.waiting, p.hasWait = float64(st.Waiting), true
		}
		if st.Has(serverlog.FieldKVUsage) {
			p.kv, p.hasKV = st.KVUsage, true
		}
		if st.Has(serverlog.FieldGenerationThroughput) && st.Phase != "prefill" {
			p.genTPS, p.hasGen = st.GenerationTokensPerS, true
		}
		if !p.hasRun && !p.hasWait && !p.hasKV {
			return
		}
		ls.addPoint(p, set)
	case serverlog.KindPreemption:
		n := max(ev.Preemption.Count, 1)
		evd.Kind, evd.Mode, evd.Value, evd.Count, evd.Text = EvPreemptLog, ev.Preemption.Mode, float64(n), n, ev.Raw
		ls.event(evd, false)
	case serverlog.KindKVFull, serverlog.KindContextShift:
		evd.Kind, evd.Text = EvKVFullLog, ev.Raw
		ls.event(evd, true)
	case serverlog.KindWarning:
		if ev.Problem.Class == serverlog.ProblemPromptCache && ls.running >= 2 {
			if ls.busyEvictions == 0 {
				ls.evictEv = Evidence{Kind: EvPromptCacheEvictions, Source: EvidenceLog, TimeNS: ns, Line: ev.Line, Text: ev.Raw, Unit: "evictions"}
			}
			ls.busyEvictions++
		}
	case serverlog.KindSlot:
		running := 0
		switch ev.Slot.Action {
		case serverlog.SlotLaunch:
			ls.busySlots[ev.Slot.ID] = true
			running = len(ls.busySlots)
		case serverlog.SlotActive:
			if ls.busySlots[ev.Slot.ID] {
				return // busy already
			}
			ls.busySlots[ev.Slot.ID] = true
			running = len(ls.busySlots)
		case serverlog.SlotRelease:
			if !ls.busySlots[ev.Slot.ID] {
				return // a task this excerpt did not see start: no count
			}
			delete(ls.busySlots, ev.Slot.ID)
			running = len(ls.busySlots)
		case serverlog.SlotData:
			running = ev.Slot.Busy
		default:
			return
		}
		ls.slotEvents++
		if ev.Slot.Action == serverlog.SlotLaunch && running >= 2 {
			ls.busyLaunches++
		}
		ls.addPoint(logPoint{ns: ns, line: ev.Line, text: ev.Raw, source: EvidenceLog, running: float64(running), hasRun: true, preemptCounter: -1}, set)
	case serverlog.KindTiming:
		ls.timings++
		if ls.slotEvents == 0 && ls.timings == 1 {
			// llama.cpp without slot lines: a timing block says a request
			// ran (one, as far as the lines tell).
			ls.addPoint(logPoint{ns: ns, line: ev.Line, text: ev.Raw, source: EvidenceLog, running: 1, hasRun: true, preemptCounter: -1}, set)
		}
	}
}

// addPoint folds one reading into the window of its band.
func (ls *logSeries) addPoint(p logPoint, set Settings) {
	if p.ns != 0 && p.source == EvidenceLog {
		ls.logTimes = true
	}
	if p.hasKV {
		ls.kvSeen = true
	}
	if p.hasRun || p.hasWait {
		ls.records++
	}
	roomy := !p.hasKV || p.kv < set.Diagnosis.KVAdmissionFull
	if p.hasWait && p.waiting >= 1 && roomy {
		ls.waitRecords++
		if p.waiting >= 2 {
			ls.bigWaitRecords++
		}
	}
	if p.hasRun {
		ls.running = p.running
	}
	if p.hasRun && p.running > ls.runMax {
		ls.runMax = p.running
		ls.runMaxEv = Evidence{Kind: EvRunningMax, Source: p.source, TimeNS: p.ns, Line: p.line, Text: p.text, Name: p.name, Value: p.running, Unit: "requests"}
	}
	load := p.running + p.waiting
	b := ls.lastBand
	if p.hasRun || p.hasWait {
		if load <= 0 && p.preemptDelta == 0 && len(ls.pendingPreempt)+len(ls.pendingKVFull) == 0 {
			return // idle: no load to place the reading at
		}
		b = band(load)
		ls.lastBand = b
	}
	a := ls.bandOf(max(b, 0))
	for _, e := range ls.pendingPreempt {
		ls.attach(a, e, false)
	}
	for _, e := range ls.pendingKVFull {
		ls.attach(a, e, true)
	}
	ls.pendingPreempt, ls.pendingKVFull = nil, nil
	lw, s := &a.lw, &a.w.Level.Server
	lw.Records++
	if p.line > 0 {
		if lw.FirstLine == 0 {
			lw.FirstLine = p.line
		}
		lw.LastLine = p.line
	}
	lw.Load = max(lw.Load, int(math.Round(load)))
	if p.hasRun && (!s.RunningKnown || p.running > s.RunningMax) {
		s.RunningMax, s.RunningKnown = p.running, true
	}
	if p.hasWait {
		a.waitSum += p.waiting
		a.waitN++
		if !s.WaitingKnown || p.waiting > s.WaitingMax {
			s.WaitingMax, s.WaitingKnown = p.waiting, true
			e := Evidence{Kind: EvWaiting, Source: p.source, TimeNS: p.ns, Line: p.line, Text: p.text, Name: "waiting requests", Value: p.waiting, Unit: "requests"}
			a.w.Evidence.WaitingMax = &e
		}
	}
	if p.hasKV && (!s.KVUsageKnown || p.kv > s.KVUsageMaxFraction) {
		src := "server log"
		if p.source == EvidenceMetric {
			src = "/metrics dump"
		}
		s.KVUsageMaxFraction, s.KVUsageKnown, s.KVUsageSource = p.kv, true, src
		e := Evidence{Kind: EvKVUsage, Source: p.source, TimeNS: p.ns, Line: p.line, Text: p.text, Name: "KV cache usage", Value: p.kv, Unit: "fraction"}
		a.w.Evidence.KVMax = &e
	}
	if p.preemptDelta > 0 {
		ls.kvSeen = true
		ls.attach(a, Evidence{Kind: EvPreemptions, Source: EvidenceMetric, TimeNS: p.ns, Name: p.name, Value: float64(p.preemptDelta), Unit: "preemptions"}, false)
	}
	if p.hasGen && p.genTPS > 0 {
		a.genSum += p.genTPS
		a.genN++
		if p.hasRun && p.running > 0 {
			a.addTPOT(p.running / p.genTPS)
		}
	}
}

// addTPOT keeps an even sample of at most maxWindowTPOTs values: when
// full, every other value is dropped and the stride doubles.
func (a *bandAcc) addTPOT(v float64) {
	a.tpotSeq++
	if (a.tpotSeq-1)%a.tpotStride != 0 {
		return
	}
	if len(a.tpots) == maxWindowTPOTs {
		for i := 0; i < len(a.tpots)/2; i++ {
			a.tpots[i] = a.tpots[2*i]
		}
		a.tpots = a.tpots[:len(a.tpots)/2]
		a.tpotStride *= 2
		if (a.tpotSeq-1)%a.tpotStride != 0 {
			return
		}
	}
	a.tpots = append(a.tpots, v)
}

// dumpReadings is what one dump showed, for its summary.
type dumpReadings struct {
	runningMax, waitingMax, kvMax float64
	preemptions                   int
}

// addDump takes the scrapes of a dump: one reading per scrape (running and
// waiting summed over label sets, the fullest KV cache), preemptions as
// the counter's increase (or, for the first scrape, its total since the
// server started).
func (ls *logSeries) addDump(d *servermetrics.Dump, set Settings) (dumpReadings, []servermetrics.Warning, error) {
	r := dumpReadings{runningMax: -1, waitingMax: -1, kvMax: -1, preemptions: -1}
	if d.Engine == "" {
		return r, nil, nil
	}
	res, err := servermetrics.Extract(d.Samples(), servermetrics.Options{Engine: d.Engine})
	if err != nil {
		return r, nil, err
	}
	times := map[int64]*logPoint{}
	var order []int64
	at := func(t int64) *logPoint {
		if p := times[t]; p != nil {
			return p
		}
		p := &logPoint{ns: t, source: EvidenceMetric, preemptCounter: -1}
		times[t] = p
		order = append(order, t)
		return p
	}
	for i, s := range d.Snapshots {
		t := s.TimeNS
		if !d.Timed {
			t = int64(i) * 1e9 // as Dump.Samples places untimed scrapes
		}
		_ = at(t)
	}
	for _, g := range res.Gauges {
		for _, pt := range g.Points {
			p := at(pt.TimeNS)
			switch g.Quantity {
			case servermetrics.Running:
				p.running, p.hasRun, p.name = p.running+pt.Value, true, g.Metric
			case servermetrics.Waiting:
				p.waiting, p.hasWait = p.waiting+pt.Value, true
			case servermetrics.KVUsage:
				p.kv, p.hasKV = math.Max(p.kv, pt.Value), true
			case servermetrics.GenThroughput:
				p.genTPS, p.hasGen = p.genTPS+pt.Value, true
			}
		}
	}
	preemptName := ""
	for _, c := range res.Counters {
		if c.Quantity != servermetrics.Preemptions {
			continue
		}
		for _, pt := range c.Points {
			p := at(pt.TimeNS)
			p.preemptCounter = math.Max(p.preemptCounter, 0) + pt.Value
			preemptName = c.Metric
		}
	}
	sort.Slice(order, func(i, j int) bool { return order[i] < order[j] })
	prev := -1.0
	for _, t := range order {
		p := *times[t]
		if p.preemptCounter >= 0 {
			switch {
			case prev < 0 || p.preemptCounter < prev: // the first, or a restarted server
				p.preemptDelta = int(p.preemptCounter)
			default:
				p.preemptDelta = int(p.preemptCounter - prev)
			}
			prev = p.preemptCounter
			r.preemptions = max(r.preemptions, 0) + p.preemptDelta
			p.name = preemptName
		}
		if p.hasRun {
			r.runningMax = math.Max(r.runningMax, p.running)
		}
		if p.hasWait {
			r.waitingMax = math.Max(r.waitingMax, p.waiting)
		}
		if p.hasKV {
			r.kvMax = math.Max(r.kvMax, p.kv)
		}
		if !p.hasRun && !p.hasWait && !p.hasKV && p.preemptDelta == 0 {
			continue
		}
		ls.addPoint(p, set)
	}
	return r, res.Warnings, nil
}

// windows returns the bands as windows, in order of load.
func (ls *logSeries) windows(set Settings) ([]Window, []LogWindow) {
	if len(ls.bands) == 0 && len(ls.pendingPreempt)+len(ls.pendingKVFull) > 0 {
		// Preemption or KV-full lines and no reading: one window of
		// unknown load holds them.
		a := ls.bandOf(0)
		for _, e := range ls.pendingPreempt {
			ls.attach(a, e, false)
		}
		for _, e := range ls.pendingKVFull {
			ls.attach(a, e, true)
		}
		ls.pendingPreempt, ls.pendingKVFull = nil, nil
	}
	bands := make([]int, 0, len(ls.bands))
	for b := range ls.bands {
		bands = append(bands, b)
	}
	sort.Ints(bands)
	ps := set.reportedPercentiles()
	var ws []Window
	var lws []LogWindow
	for i, b := range bands {
		a := ls.bands[b]
		l := &a.w.Level
		l.LevelIndex, l.Complete, l.Sustained = i, true, true
		l.Concurrency = max(a.lw.Load, 1)
		l.Load = LoadKey{Axis: AxisInEngine, Concurrency: l.Concurrency}
		ev := &a.w.Evidence
		for _, e := range []*Evidence{ev.WaitingMax, ev.KVMax, ev.PreemptMetric} {
			if e != nil {
				e.LevelIndex, e.Concurrency = i, l.Concurrency
			}
		}
		for _, list := range [][]Evidence{ev.PreemptLog, ev.KVFullLog} {
			for j := range list {
				list[j].LevelIndex, list[j].Concurrency = i, l.Concurrency
			}
		}
		if a.waitN > 0 {
			l.Server.WaitingMean = a.waitSum / float64(a.waitN)
		}
		if a.genN > 0 {
			l.OutputTokPerS = a.genSum / float64(a.genN)
		}
		l.TPOT = newLatency(a.tpots, ps)
		a.w.TPOT = a.tpots
		lw := a.lw
		s := l.Server
		if s.RunningKnown {
			lw.RunningMax = s.RunningMax
		}
		if s.WaitingKnown {
			lw.WaitingMax = s.WaitingMax
		}
		if s.KVUsageKnown {
			lw.KVUsageMax = s.KVUsageMaxFraction
		}
		lw.Preemptions = s.Preemptions
		if l.TPOT != nil {
			lw.TPOTP50S = l.TPOT.P50S
		}
		lw.OutputTokPerS = l.OutputTokPerS
		ws = append(ws, a.w)
		lws = append(lws, lw)
	}
	return ws, lws
}

// sources are the measurements a log (and dump) holds, for the rules.
func (ls *logSeries) sources(hasLog, hasDump, kvObservable bool, engine string) Sources {
	return Sources{Log: hasLog, LogTimes: ls.logTimes, Metrics: hasDump, Accelerated: true, Engine: engine, Flags: ls.flags,
		KVObservable: kvObservable || ls.kvSeen || len(ls.pendingPreempt)+len(ls.pendingKVFull) > 0}
}

// flagsOf turns a log's non-default arguments into command-line flags, for
// the rules' engine-cap flag.
func flagsOf(facts []serverlog.Fact) []string {
	var out []string
	for _, f := range facts {
		out = append(out, "--"+strings.ReplaceAll(f.Key, "_", "-"), f.Value)
	}
	return out
}

// judgeLog applies the rules to the windows, then the log-only
// completions, and names what the file cannot tell.
func judgeLog(ls *logSeries, src Sources, crash string, crashAt *Evidence, set Settings) LogVerdict {
	ws, lws := ls.windows(set)
	v := LogVerdict{Windows: lws}
	_, d := DiagnoseWindows(ws, AxisConcurrency, src, set)
	v.Diagnosis = d
	// What a file read alone cannot give: the clients' latencies, the
	// measurements of the host, and the other source (log or /metrics).
	// The sweep's own records (receive times, the load generator's
	// self-check) do not apply; the probe only for a compute verdict.
	v.CannotTell = append([]string{MeasureRequests}, d.Missing...)
	v.CannotTell = slices.DeleteFunc(v.CannotTell, func(m string) bool {
		return m == MeasureLogTimes || m == MeasureClientSamples || m == MeasureProbe
	})
	switch {
	case crash != "":
		v.Wall, v.Basis, v.Crash = LogWallEngineError, LogBasisFatal, crash
		if crashAt != nil {
			v.Evidence = []Evidence{*crashAt}
		}
		return v
	case len(ws) == 0:
		v.Wall, v.Basis = LogWallUnknown, LogBasisNoLoad
		if ls.records > 0 {
			// Records with nothing running or waiting: an idle engine.
			v.Wall, v.Basis = LogWallNone, LogBasisIdle
		}
		return v
	}
	p := d.Primary
	switch p.Kind {
	case WallKVCache:
		v.Wall, v.Basis, v.Evidence = LogWallKVCache, LogBasisRules, p.Evidence
		return v
	case WallEngineCap, WallFrontQueue:
		v.Wall, v.Basis, v.Evidence = LogWallQueueing, LogBasisRules, p.Evidence
		return v
	case WallCompute:
		v.Wall, v.Basis, v.Evidence = LogWallCompute, LogBasisRules, p.Evidence
		return v
	case WallEngineOverhead:
		v.Wall, v.Basis, v.Evidence = LogWallEngineOverhead, LogBasisRules, p.Evidence
		return v
	}
	// The rules found no wall, or could not decide for want of what a log
	// lacks. What the lines alone support:
	runMax, waitKnown := ls.runMax, false
	var waitEv, runEv *Evidence
	if runMax >= 0 {
		e := ls.runMaxEv
		runEv = &e
	}
	for i := range ws {
		if ws[i].Level.Server.WaitingKnown {
			waitKnown = true
		}
		if e := ws[i].Evidence.WaitingMax; e != nil && e.Value > 0 && (waitEv == nil || e.Value > waitEv.Value) {
			waitEv = e
		}
	}
	switch {
	case ls.busyLaunches > 0 && ls.busyEvictions >= ls.busyLaunches:
		// The cache turns over at least once per request started under
		// load: each start pays a host copy that the whole batch waits on.
		v.Wall, v.Basis, v.Unconfirmed = LogWallEngineOverhead, LogBasisPromptCache, true
		v.Deciding = MeasureGPUTelemetry
		e := ls.evictEv
		e.Value, e.Ref = float64(ls.busyEvictions), float64(ls.busyLaunches)
		v.Evidence = append(v.Evidence, e)
		if runEv != nil {
			v.Evidence = append(v.Evidence, *runEv)
		}
		if !waitKnown {
			v.CannotTell = append([]string{MeasureQueueDepth}, v.CannotTell...)
		}
	case ls.bigWaitRecords > 0 || ls.waitRecords >= 2:
		v.Wall, v.Basis = LogWallQueueing, LogBasisEngineQueue
		if waitEv != nil {
			v.Evidence = append(v.Evidence, *waitEv)
		}
		if runEv != nil {
			v.Evidence = append(v.Evidence, *runEv)
		}
	case runMax >= 2:
		v.Wall, v.Basis, v.Unconfirmed = LogWallCompute, LogBasisBatch, true
		v.Deciding = MeasureGPUTelemetry
		v.Evidence = append(v.Evidence, *runEv)
		if p.Kind == WallInconclusive && len(p.Evidence) > 0 {
			v.Evidence = append(v.Evidence, p.Evidence...)
		}
		if !waitKnown {
			v.CannotTell = append([]string{MeasureQueueDepth}, v.CannotTell...)
		}
		v.CannotTell = append(v.CannotTell, MeasureProbe)
	case runMax >= 0:
		v.Wall, v.Basis = LogWallNone, LogBasisIdle
		if runEv != nil {
			v.Evidence = append(v.Evidence, *runEv)
		}
	default:
		v.Wall, v.Basis = LogWallUnknown, LogBasisNoLoad
	}
	return v
}
