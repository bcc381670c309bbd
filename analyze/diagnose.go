package analyze

import (
	"math"
	"slices"
	"sort"

	"github.com/headroom-llm/headroom/stats"
)

// Sources says which measurements a run (or a log) holds, and the facts
// about the server the rules need.
type Sources struct {
	Log, LogTimes, Metrics, GPU, ServerCPU, Client, PerRequest bool
	// KVObservable: the log or the metrics can show KV-cache pressure
	// (preemptions or KV usage).
	KVObservable bool
	// Accelerated: the server has GPUs (the manifest lists them); without
	// them the engine is CPU-served and its CPU is what to measure.
	Accelerated bool
	// Engine names the serving engine; Flags are its arguments as recorded.
	Engine string
	Flags  []string
	// Decode is the roofline gap (nil without a probe).
	Decode *DecodeRoofline
}

// WindowEvidence holds the quotable observations of one window (a sweep
// level, or a stretch of a log): log lines and the readings behind each
// level's Server and Client fields.
type WindowEvidence struct {
	PreemptLog, KVFullLog []Evidence
	KVMax, WaitingMax     *Evidence
	PreemptMetric         *Evidence
	GPUUtil               *Evidence
	ServerCPU             *Evidence
	ClientCPU, ClientLag  *Evidence
}

// Window is one stretch of steady load: a sweep level, or a cut of a
// server log or of /metrics dumps. Level holds what is known of it (a
// log-only window has no client requests: Requests 0, and TTFT or TPOT only
// where the log gives them); TPOT and TTFT are per-request values when
// known, for the interval decisions.
type Window struct {
	Level      LevelStats
	Evidence   WindowEvidence
	TPOT, TTFT []float64
}

// DiagnoseWindows applies the verdict rules to windows ordered by load,
// the entry point for a verdict from a server log or metrics alone. The
// axis is AxisConcurrency or AxisRate.
func DiagnoseWindows(ws []Window, axis string, src Sources, set Settings) (Knees, Diagnosis) {
	levels := make([]LevelStats, len(ws))
	samples := map[int]levelSamples{}
	obs := map[int]*WindowEvidence{}
	for i := range ws {
		levels[i] = ws[i].Level
		samples[ws[i].Level.LevelIndex] = levelSamples{tpot: ws[i].TPOT, ttft: ws[i].TTFT}
		ev := ws[i].Evidence
		obs[ws[i].Level.LevelIndex] = &ev
	}
	k := findKnees(levels, samples, axis, set)
	return k, diagnose(levels, samples, obs, k, src, set, OperatingPoint{At: noPoint(axis)})
}

// diagnose runs every check over levels sorted by load and names the
// walls: the first reached is the primary, later ones secondary in order
// of load; without any, none or (evidence missing) inconclusive.
func diagnose(levels []LevelStats, samples map[int]levelSamples, obs map[int]*WindowEvidence, k Knees, src Sources, set Settings, op OperatingPoint) Diagnosis {
	c := &checker{levels: levels, samples: samples, obs: obs, k: k, src: src, set: set, b: bootstrapOf(set)}
	for _, l := range levels {
		if obs[l.LevelIndex] == nil {
			obs[l.LevelIndex] = &WindowEvidence{}
		}
	}
	d := Diagnosis{Missing: missingOf(src)}
	kv := c.checkKV()
	engineCap := c.checkEngineCap(kv)
	client := c.checkClient()
	front := c.checkFrontQueue(kv, engineCap)
	compute, overhead := c.checkKnee(kv, client)
	d.Checks = []Finding{kv, engineCap, front, compute, overhead, client}

	var walls []Wall
	for _, f := range d.Checks {
		if f.Status == StatusHit {
			w := Wall{Kind: f.Check, At: f.At, Evidence: f.Evidence, Basis: basisOf(f)}
			walls = append(walls, w)
		}
	}
	sort.SliceStable(walls, func(i, j int) bool {
		pi, pj := levelPos(levels, walls[i].At.LevelIndex), levelPos(levels, walls[j].At.LevelIndex)
		if pi != pj {
			return pi < pj
		}
		return wallPriority(walls[i].Kind) < wallPriority(walls[j].Kind)
	})
	if len(walls) > 0 {
		d.Primary, d.Secondary = walls[0], walls[1:]
	} else {
		d.Primary = c.noWall(compute, overhead, engineCap, front)
	}
	d.Primary.Fixes = fixesFor(d.Primary, src.Engine, src.Flags, op)
	for i := range d.Secondary {
		d.Secondary[i].Fixes = fixesFor(d.Secondary[i], src.Engine, src.Flags, op)
	}
	d.Wall = d.Primary.Kind
	d.Confidence = c.confidence(d.Primary, d.Checks)
	return d
}

// wallPriority breaks ties between walls first seen at the same level: a
// saturated client explains everything at its level; a full cache explains
// a queue and a bent TPOT; a queue in the engine explains a backlog.
func wallPriority(kind string) int {
	return slices.Index([]string{WallClientBound, WallKVCache, WallEngineCap, WallFrontQueue, WallCompute, WallEngineOverhead}, kind)
}

func basisOf(f Finding) string {
	if f.Check != WallCompute && f.Check != WallEngineOverhead {
		return ""
	}
	for _, e := range f.Evidence {
		switch e.Kind {
		case EvServerCPU:
			return BasisServerCPU
		case EvGPUUtil:
			if f.Check == WallCompute || f.Reason == ReasonGPUNotBusy {
				return BasisGPU
			}
		}
	}
	if f.Reason == ReasonBelowRidge || f.Check == WallEngineOverhead {
		return BasisRidge
	}
	return BasisGPU
}

func missingOf(src Sources) []string {
	var m []string
	add := func(have bool, what string) {
		if !have {
			m = append(m, what)
		}
	}
	add(src.Log, MeasureServerLog)
	if src.Log {
		add(src.LogTimes, MeasureLogTimes)
	}
	add(src.Metrics, MeasureServerMetrics)
	switch {
	case src.Accelerated:
		add(src.GPU, MeasureGPUTelemetry)
	default:
		add(src.ServerCPU, MeasureServerCPU)
	}
	add(src.Client, MeasureClientSamples)
	add(src.Decode != nil, MeasureProbe)
	return m
}

// checker holds what every check reads.
type checker struct {
	levels  []LevelStats
	samples map[int]levelSamples
	obs     map[int]*WindowEvidence
	k       Knees
	src     Sources
	set     Settings
	b       stats.Bootstrap
}

func (c *checker) finding(check string) Finding {
	return Finding{Check: check, At: noPoint(c.k.Axis)}
}

func (c *checker) point(i int) LoadPoint { return pointOf(c.levels[i], c.k.Axis) }

// ev starts an evidence item about level i.
func (c *checker) ev(i int, kind, source string) Evidence {
	l := c.levels[i]
	return Evidence{Kind: kind, Source: source, LevelIndex: l.LevelIndex, Concurrency: l.Concurrency, RateRPS: l.RateRPS}
}

// ttftGrowth compares the p50 TTFT of level i with the level below
// (open loop: from the intended send time): ok when the interval of their
// ratio clears QueueTTFTGrowth. Without per-request values the point
// estimates decide.
func (c *checker) ttftGrowth(i int) (Evidence, bool) {
	if i <= 0 {
		return Evidence{}, false
	}
	lo, hi := c.levels[i-1], c.levels[i]
	a, b := judgedLatency(lo, "ttft"), judgedLatency(hi, "ttft")
	if a == nil || b == nil || a.P50S <= 0 {
		return Evidence{}, false
	}
	r := b.P50S / a.P50S
	iv, ok := c.b.PercentileRatio(c.samples[lo.LevelIndex].ttft, c.samples[hi.LevelIndex].ttft, 50)
	if !ok {
		iv = stats.Interval{Estimate: r, Low: r, High: r}
	}
	e := c.ev(i, EvTTFTGrowth, EvidenceLatency)
	e.Value, e.Ref, e.Ratio, e.Low, e.High, e.Unit = b.P50S, a.P50S, iv.Estimate, iv.Low, iv.High, "s"
	return e, iv.Low > c.set.Diagnosis.QueueTTFTGrowth
}

// ---- KV cache ----

// checkKV looks at every level for KV-cache pressure: preemptions, the
// cache out of cells, admission stopped for want of cache, or the cache
// full with requests waiting or TTFT growing. It needs no TPOT knee.
func (c *checker) checkKV() Finding {
	f := c.finding(WallKVCache)
	if !c.src.KVObservable {
		f.Status = StatusUnknown
		f.Reason = ReasonNoKVSignals
		f.Missing = []string{MeasureKVSignals}
		return f
	}
	set := c.set.Diagnosis
	tight := -1
	var strongest []Evidence
	var rest []Evidence
	for i, l := range c.levels {
		lo := c.obs[l.LevelIndex]
		s := l.Server
		full := s.KVUsageKnown && s.KVUsageMaxFraction >= set.KVUsageFull
		capped := admissionCapped(l, c.set)
		growth, grows := c.ttftGrowth(i)
		symptom := (s.WaitingKnown && s.WaitingMax > 0) || grows
		if s.Preemptions == 0 && len(lo.KVFullLog) == 0 && !capped && !(full && symptom) {
			if full && tight < 0 {
				tight = i
			}
			continue
		}
		first := !f.At.Valid()
		if first {
			f.At = c.point(i)
		}
		if s.Preemptions > 0 {
			e := c.ev(i, EvPreemptions, EvidenceLog)
			if lo.PreemptMetric != nil {
				e = *lo.PreemptMetric
			}
			e.Value, e.Unit = float64(s.Preemptions), "preemptions"
			if e.Name == "" {
				e.Name, e.Count = s.PreemptionsSource, len(lo.PreemptLog)
			}
			strongest = append(strongest, e)
		}
		if capped {
			e := c.ev(i, EvAdmission, EvidenceMetric)
			e.Value, e.Ref, e.Unit = s.RunningMax, float64(l.Concurrency), "requests"
			strongest = append(strongest, e)
		}
		if !first {
			// Later levels: what shows the wall there, not every reading.
			if s.Preemptions == 0 && !capped {
				strongest = append(strongest, capEvidence(lo.KVFullLog, 1)...)
			}
			continue
		}
		rest = append(rest, capEvidence(lo.KVFullLog, set.MaxEvidenceLines)...)
		if lo.KVMax != nil {
			rest = append(rest, *lo.KVMax)
		}
		if s.WaitingKnown && s.WaitingMax > 0 && lo.WaitingMax != nil {
			rest = append(rest, *lo.WaitingMax)
		}
		if grows && !capped && s.Preemptions == 0 {
			rest = append(rest, growth)
		}
		rest = append(rest, capEvidence(lo.PreemptLog, set.MaxEvidenceLines)...)
	}
	switch {
	case f.At.Valid():
		f.Status, f.Evidence = StatusHit, append(strongest, rest...)
	case tight >= 0:
		f.Status, f.Reason = StatusClear, ReasonKVTight
		f.At = c.point(tight)
		if lo := c.obs[c.levels[tight].LevelIndex]; lo.KVMax != nil {
			f.Evidence = []Evidence{*lo.KVMax}
		}
	default:
		f.Status = StatusClear
	}
	return f
}

// admissionCapped reports the KV wall of engines that queue rather than
// preempt when the cache runs out (transformers, vLLM V1 under load):
// fewer requests running than were sent, others waiting, and the cache too
// full for one more request (cacheFull).
func admissionCapped(l LevelStats, set Settings) bool {
	s := l.Server
	return s.RunningKnown && s.WaitingKnown && s.KVUsageKnown && s.WaitingMax > 0 &&
		s.RunningMax < float64(l.Concurrency) && cacheFull(l, set)
}

// cacheFull reports whether a level's KV cache had no room for one more
// request: usage at or above KVAdmissionFull (engines keep some blocks
// free), or, with the running requests holding about equal shares, one
// more share would not fit (a few long requests fill a small cache well
// below that fraction).
func cacheFull(l LevelStats, set Settings) bool {
	s := l.Server
	if !s.KVUsageKnown {
		return false
	}
	u := s.KVUsageMaxFraction
	return u >= set.Diagnosis.KVAdmissionFull || (s.RunningMax >= 1 && u*(s.RunningMax+1)/s.RunningMax > 1)
}

// cacheHasRoom reports whether requests that waited at a level waited
// with room in the KV cache: nothing preempted, no cell shortage logged,
// the cache not full for one more request.
func (c *checker) cacheHasRoom(i int) bool {
	l := c.levels[i]
	return l.Server.Preemptions == 0 && len(c.obs[l.LevelIndex].KVFullLog) == 0 && !cacheFull(l, c.set)
}

// ---- queueing at the engine's sequence cap ----

// pinnedAt returns the cap on running requests that level i is held at:
// its most running requests, below what was sent, and the same at another
// level that also had requests waiting or was sent exactly that many (or
// the engine's cap flag says so). ok is false when level i is not held.
func (c *checker) pinnedAt(i int, capValue int) (float64, int, bool) {
	l := c.levels[i]
	s := l.Server
	if !s.RunningKnown || s.RunningMax <= 0 || s.RunningMax >= float64(l.Concurrency)-0.5 {
		return 0, 0, false
	}
	same := func(a, b float64) bool { return math.Abs(a-b) < 0.5 }
	n := 1
	for j, m := range c.levels {
		if j == i || !m.Server.RunningKnown || !same(m.Server.RunningMax, s.RunningMax) {
			continue
		}
		if (m.Server.WaitingKnown && m.Server.WaitingMax > 0) || same(float64(m.Concurrency), s.RunningMax) {
			n++
		}
	}
	if n < 2 && !(capValue > 0 && same(float64(capValue), s.RunningMax)) {
		return 0, 0, false
	}
	return s.RunningMax, n, true
}

// checkEngineCap looks for queueing at the engine's cap on running
// sequences: running held at a constant below the load, requests waiting
// in the engine through the level (a mean of at least CapWaitingMean)
// while the cache has room, and TTFT growing with the load.
// Little's law (wait = waiting ÷ completion rate) is its cross-check.
func (c *checker) checkEngineCap(kv Finding) Finding {
	f := c.finding(WallEngineCap)
	if !c.queueObservable() {
		f.Status, f.Missing = StatusUnknown, []string{MeasureQueueDepth}
		return f
	}
	set := c.set.Diagnosis
	flag, flagValue, hasFlag := capFlag(c.src.Engine, c.src.Flags)
	waited, heldNoGrowth := false, false
	for i, l := range c.levels {
		s := l.Server
		if !s.WaitingKnown || s.WaitingMax <= 0 {
			continue
		}
		waited = true
		if !c.cacheHasRoom(i) {
			continue // waiting for want of cache: the KV check's
		}
		if s.WaitingMean < set.CapWaitingMean {
			continue // a burst, not a queue held through the level
		}
		capRunning, levels, ok := c.pinnedAt(i, flagValue)
		if !ok {
			continue
		}
		growth, grows := c.ttftGrowth(i)
		if !grows {
			heldNoGrowth = true
			continue
		}
		f.Status, f.At = StatusHit, c.point(i)
		e := c.ev(i, EvRunningPinned, EvidenceMetric)
		e.Value, e.Count, e.Ref, e.Unit = capRunning, levels, float64(c.levels[len(c.levels)-1].Concurrency), "requests"
		f.Evidence = append(f.Evidence, e)
		if hasFlag {
			fe := c.ev(i, EvCapFlag, EvidenceFlags)
			fe.Name, fe.Value = flag, float64(flagValue)
			f.Evidence = append(f.Evidence, fe)
		}
		if lo := c.obs[l.LevelIndex]; lo.WaitingMax != nil {
			f.Evidence = append(f.Evidence, *lo.WaitingMax)
		}
		if le, ok := c.little(i); ok {
			f.Evidence = append(f.Evidence, le)
		}
		f.Evidence = append(f.Evidence, growth)
		return f
	}
	f.Status = StatusClear
	switch {
	case heldNoGrowth:
		f.Reason = ReasonTTFTFlat
	case !waited:
		f.Reason = ReasonNoQueue
	case kv.Status == StatusHit:
		f.Reason = ReasonCacheFull
	default:
		f.Reason = ReasonNotPinned
	}
	return f
}

// queueObservable: running and waiting counts exist at some level.
func (c *checker) queueObservable() bool {
	for _, l := range c.levels {
		if l.Server.RunningKnown && l.Server.WaitingKnown {
			return true
		}
	}
	return false
}

// little is Little's law at level i: the mean number waiting over the
// completion rate predicts the mean wait, against the measured wait (p50
// TTFT over the lowest level's).
func (c *checker) little(i int) (Evidence, bool) {
	l := c.levels[i]
	base := judgedLatency(c.levels[0], "ttft")
	cur := judgedLatency(l, "ttft")
	if l.RequestsPerS <= 0 || base == nil || cur == nil || l.Server.WaitingMean <= 0 {
		return Evidence{}, false
	}
	measured := cur.P50S - base.P50S
	if measured <= 0 {
		return Evidence{}, false
	}
	e := c.ev(i, EvLittle, EvidenceMetric)
	e.Value, e.Ref, e.Unit = l.Server.WaitingMean/l.RequestsPerS, measured, "s"
	e.Ratio = e.Value / e.Ref
	return e, true
}

// ---- queueing in front of the engine ----

// checkFrontQueue looks for a queue before the engine: in an open loop, an
// achieved rate significantly below the offered one or requests waiting
// for a free client slot; in a closed loop, the engine's own queue empty
// while fewer requests run than were sent and TTFT grows. A queue the
// engine holds (its cap, or the cache) is not this one.
func (c *checker) checkFrontQueue(kv, engineCap Finding) Finding {
	f := c.finding(WallFrontQueue)
	explained := func(i int) bool {
		p := func(g Finding) bool {
			return g.Status == StatusHit && levelPos(c.levels, g.At.LevelIndex) <= i
		}
		return p(kv) || p(engineCap)
	}
	inEngine := false
	for i, l := range c.levels {
		var ev []Evidence
		if l.RateRPS > 0 {
			if openLoopSaturated(l) {
				e := c.ev(i, EvAchievedRate, EvidenceClient)
				e.Value, e.Ref, e.Unit = l.RequestsPerS, l.RateRPS, "req/s"
				e.Ratio = e.Value / e.Ref
				ev = append(ev, e)
			}
			if w := l.SendWait; w != nil && w.P90S >= c.set.Diagnosis.SlotWaitS {
				e := c.ev(i, EvSlotWait, EvidenceClient)
				e.Value, e.Ref, e.Unit = w.P90S, c.set.Diagnosis.SlotWaitS, "s"
				ev = append(ev, e)
			}
		} else if s := l.Server; s.WaitingKnown && s.WaitingMax == 0 && s.RunningKnown {
			if _, _, ok := c.pinnedAt(i, 0); ok {
				if growth, grows := c.ttftGrowth(i); grows {
					e := c.ev(i, EvServerQueue0, EvidenceMetric)
					e.Value, e.Ref, e.Unit = 0, s.RunningMax, "requests"
					ev = append(ev, e, growth)
				}
			}
		}
		if len(ev) == 0 {
			continue
		}
		if explained(i) || (l.Server.WaitingKnown && l.Server.WaitingMax > 0 && l.RateRPS == 0) {
			inEngine = true
			continue
		}
		if f.At.Valid() {
			f.Evidence = append(f.Evidence, ev[0]) // a later level: what shows it there
			continue
		}
		if l.Server.WaitingKnown && l.Server.WaitingMax == 0 && l.RateRPS > 0 {
			e := c.ev(i, EvServerQueue0, EvidenceMetric)
			e.Value, e.Ref, e.Unit = 0, l.Server.RunningMax, "requests"
			ev = append(ev, e)
		}
		if growth, grows := c.ttftGrowth(i); grows && l.RateRPS > 0 {
			ev = append(ev, growth)
		}
		f.Status, f.At, f.Evidence = StatusHit, c.point(i), ev
	}
	if f.At.Valid() {
		return f
	}
	f.Status = StatusClear
	switch {
	case inEngine:
		f.Reason = ReasonQueueInEngine
	case c.k.Axis == AxisRate:
		f.Reason = ReasonKeptUp
	case !c.queueObservable():
		f.Status, f.Missing = StatusUnknown, []string{MeasureQueueDepth}
	case slices.ContainsFunc(c.levels, func(l LevelStats) bool { return l.Server.WaitingKnown && l.Server.WaitingMax > 0 }):
		f.Reason = ReasonQueueInEngine
	default:
		f.Reason = ReasonNoQueue
	}
	return f
}

// ---- the TPOT knee: compute or engine overhead ----

// checkKnee says what bent TPOT at the knee: compute when the accelerator
// (or, for a CPU engine, the server's busiest thread) was saturated and the
// knee is not far below the probe's ridge; engine overhead when the knee
// lies far below the ridge or the accelerator was not saturated. KV
// pressure or a saturated client at or before the knee explain it instead.
func (c *checker) checkKnee(kv, client Finding) (compute, overhead Finding) {
	compute, overhead = c.finding(WallCompute), c.finding(WallEngineOverhead)
	both := func(status, reason string) {
		compute.Status, compute.Reason = status, reason
		overhead.Status, overhead.Reason = status, reason
	}
	kp := levelPos(c.levels, c.k.TPOTKneeLevel)
	if kp < 0 {
		both(StatusNotApplicable, ReasonNoKnee)
		return
	}
	compute.At, overhead.At = c.point(kp), c.point(kp)
	before := func(g Finding) bool {
		return g.Status == StatusHit && levelPos(c.levels, g.At.LevelIndex) <= kp
	}
	if before(kv) {
		both(StatusClear, ReasonKneeIsKV)
		return
	}
	if before(client) {
		both(StatusClear, ReasonKneeIsClient)
		return
	}
	knee := c.levels[kp]
	lo := c.obs[knee.LevelIndex]
	tpot := c.ev(kp, EvTPOTRatio, EvidenceLatency)
	tpot.Value, tpot.Ref, tpot.Unit = knee.TPOT.P50S, c.k.BaselineTPOTP50S, "s"
	tpot.Ratio, tpot.Low, tpot.High = c.k.TPOTKneeRatio, c.k.TPOTKneeRatioLow, c.k.TPOTKneeRatioHigh
	var ridge *Evidence
	belowRidge := false
	if d := c.src.Decode; d != nil && d.Ridge.Verdict != "" && d.Ridge.Verdict != RidgeNoKnee {
		e := c.ev(kp, EvRidge, EvidenceProbe)
		e.Value, e.Ref, e.Ratio, e.Unit = d.Ridge.IntensityFLOPPerByte, d.Ridge.RidgeFLOPPerByte, d.Ridge.Ratio, "FLOP/byte"
		ridge = &e
		belowRidge = d.Ridge.Verdict == RidgeKneeBefore
	}
	if !c.src.KVObservable {
		both(StatusUnknown, ReasonNoKVSignals)
		compute.Missing, overhead.Missing = []string{MeasureKVSignals}, []string{MeasureKVSignals}
		compute.Evidence = []Evidence{tpot}
		return
	}
	hit := func(f *Finding, reason string, ev ...*Evidence) {
		f.Status, f.Reason = StatusHit, reason
		for _, e := range ev {
			if e != nil {
				f.Evidence = append(f.Evidence, *e)
			}
		}
	}
	set := c.set.Diagnosis
	intake := c.promptIntake(kp)
	switch {
	case knee.Server.GPUKnown:
		util := lo.GPUUtil
		switch {
		case knee.Server.GPUUtilMeanPct >= set.GPUUtilBusyPct && belowRidge:
			hit(&overhead, ReasonBelowRidge, ridge, util, &tpot, intake)
			compute.Status, compute.Reason = StatusClear, ReasonBelowRidge
		case knee.Server.GPUUtilMeanPct >= set.GPUUtilBusyPct:
			hit(&compute, ReasonSaturated, &tpot, util, ridge)
			overhead.Status, overhead.Reason = StatusClear, ReasonSaturated
		default:
			hit(&overhead, ReasonGPUNotBusy, util, &tpot, ridge, intake)
			compute.Status, compute.Reason = StatusClear, ReasonGPUNotBusy
		}
	case knee.Server.CPUKnown:
		threads := cpuThreads(c.src.Engine, c.src.Flags, knee.Server.CPUHostCores)
		total := c.ev(kp, EvServerCPUTotal, EvidenceTelemetry)
		total.Value, total.Ref, total.Unit = knee.Server.CPUProcessDemand, threads, "cores"
		cpu := lo.ServerCPU
		if knee.Server.CPUThreadDemand >= set.ServerCPUBusy || knee.Server.CPUProcessDemand >= set.ServerCPUBusy*threads {
			hit(&compute, ReasonSaturated, &tpot, &total, cpu, ridge)
			overhead.Status, overhead.Reason = StatusClear, ReasonSaturated
		} else {
			hit(&overhead, ReasonCPUNotBusy, &total, cpu, &tpot, ridge)
			compute.Status, compute.Reason = StatusClear, ReasonCPUNotBusy
		}
	case belowRidge:
		hit(&overhead, ReasonBelowRidge, ridge, &tpot, intake)
		compute.Status, compute.Reason = StatusClear, ReasonBelowRidge
	default:
		both(StatusUnknown, ReasonNoGPUNoCPU)
		compute.Missing = []string{MeasureServerCPU}
		if c.src.Accelerated {
			compute.Missing = []string{MeasureGPUTelemetry}
		}
		overhead.Missing = compute.Missing
		compute.Evidence = []Evidence{tpot}
	}
	return
}

// promptIntake is how much of the time between tokens at the knee (level
// position kp) was spent in gaps holding a new prompt's intake, against
// the baseline: what an engine's overhead at the knee is made of when new
// prompts hold the running answers up. Nil when either level lacks
// per-token times.
func (c *checker) promptIntake(kp int) *Evidence {
	bp := levelPos(c.levels, c.k.BaselineLevel)
	if bp < 0 || bp == kp || c.levels[kp].PromptIntakeShare == nil || c.levels[bp].PromptIntakeShare == nil {
		return nil
	}
	e := c.ev(kp, EvPromptIntake, EvidenceLatency)
	e.Value, e.Ref = *c.levels[kp].PromptIntakeShare, *c.levels[bp].PromptIntakeShare
	return &e
}

// ---- the client ----

// checkClient finds the first level where the load generator was the
// bottleneck by the client-bound rule (package clientbound, applied in
// observeClient): its CPU demand (CPU time plus waiting for a core) at or
// above ClientCPUBusy of its GOMAXPROCS, or its send lag over the limit in
// at least half of the level's samples (two at least), so one late send on
// a busy host does not decide it.
func (c *checker) checkClient() Finding {
	f := c.finding(WallClientBound)
	if !c.src.Client {
		f.Status, f.Missing = StatusUnknown, []string{MeasureClientSamples}
		return f
	}
	for i, l := range c.levels {
		cl := l.Client
		if !cl.Known {
			continue
		}
		busy, lagging := cl.CPUBound, cl.Lagging
		if !busy && !lagging {
			continue
		}
		lo := c.obs[l.LevelIndex]
		first := !f.At.Valid()
		if first {
			f.Status, f.At = StatusHit, c.point(i)
		}
		// The first level's readings, then what shows it at later levels.
		if busy && lo.ClientCPU != nil {
			f.Evidence = append(f.Evidence, *lo.ClientCPU)
		}
		if lagging && lo.ClientLag != nil && (first || !busy) {
			f.Evidence = append(f.Evidence, *lo.ClientLag)
		}
	}
	if !f.At.Valid() {
		f.Status, f.Reason = StatusClear, ReasonClientIdle
	}
	return f
}

// ---- no wall ----

// raiseKVUsageMin: a cache at least this full at the highest level says
// where it would run out; a nearly empty one says nothing.
const raiseKVUsageMin = 0.25

// noWall is the verdict when no check hit: inconclusive when the evidence
// that would decide is missing (naming it and the likely wall), else none,
// with how far to raise the load.
func (c *checker) noWall(compute, overhead, engineCap, front Finding) Wall {
	axis := c.k.Axis
	w := Wall{At: noPoint(axis)}
	inconclusive := func(likely, deciding string) Wall {
		w.Kind, w.Likely, w.Deciding = WallInconclusive, likely, deciding
		return w
	}
	if len(c.levels) == 0 {
		return inconclusive("", MeasureRequests)
	}
	if compute.Status == StatusUnknown {
		// TPOT bent and the run cannot say why. The likeliest wall is what
		// the evidence there points to: far below the ridge, the engine's
		// overhead; else the compute wall.
		w.At = compute.At
		likely := WallCompute
		if d := c.src.Decode; d != nil && d.Ridge.Verdict == RidgeKneeBefore {
			likely = WallEngineOverhead
		}
		if l := c.levels[levelPos(c.levels, compute.At.LevelIndex)]; l.Server.GPUKnown && l.Server.GPUUtilMeanPct < c.set.Diagnosis.GPUUtilBusyPct {
			likely = WallEngineOverhead
		}
		w.Evidence = compute.Evidence
		return inconclusive(likely, compute.Missing[0])
	}
	if engineCap.Status == StatusUnknown || front.Status == StatusUnknown {
		for i := range c.levels {
			if e, grows := c.ttftGrowth(i); grows {
				w.At, w.Evidence = c.point(i), []Evidence{e}
				likely := WallEngineCap
				if axis == AxisRate {
					likely = WallFrontQueue
				}
				return inconclusive(likely, MeasureQueueDepth)
			}
		}
	}
	if c.k.BaselineLevel < 0 && c.k.PeakLevel < 0 {
		return inconclusive("", MeasureTPOT)
	}
	top := c.levels[len(c.levels)-1]
	w.Kind, w.At = WallNone, c.point(len(c.levels)-1)
	w.RaiseTo, w.RaiseBasis = 4*loadValue(top, axis), RaiseDoubling
	if u := top.Server.KVUsageMaxFraction; top.Server.KVUsageKnown && u >= raiseKVUsageMin && u < c.set.Diagnosis.KVUsageFull {
		// The cache fills about in proportion to the sequences running:
		// from a quarter full or more, that says where it runs out.
		w.RaiseTo, w.RaiseBasis = math.Max(math.Ceil(loadValue(top, axis)/u), 2*loadValue(top, axis)), RaiseKVUsage
	}
	if lo := c.obs[top.LevelIndex]; lo.KVMax != nil {
		w.Evidence = []Evidence{*lo.KVMax}
	}
	return w
}

// ---- confidence ----

// confidence grades the verdict: high when the primary wall rests on the
// server's own counters or on differences that clear their intervals, at
// more than one level; medium with any reason for doubt (one level only,
// Little's law disagreeing, no probe for a compute verdict, a queue seen
// in client latencies only); low when inconclusive.
func (c *checker) confidence(w Wall, checks []Finding) Confidence {
	switch w.Kind {
	case WallInconclusive:
		return Confidence{Level: ConfidenceLow, Reasons: []string{WhyMissing}}
	case WallNone:
		return Confidence{Level: ConfidenceMedium, Reasons: []string{WhyUntested}}
	}
	var good, doubt []string
	server := false
	for _, e := range w.Evidence {
		switch e.Kind {
		case EvPreemptions, EvPreemptLog, EvKVFullLog, EvAdmission, EvRunningPinned, EvAchievedRate:
			server = true
		case EvLittle:
			if e.Ratio > 2 || e.Ratio < 0.5 {
				doubt = append(doubt, WhyLittleDisagrees)
			}
		case EvTTFTGrowth, EvTPOTRatio:
			if e.Low > 0 {
				good = appendUnique(good, WhyIntervalsClear)
			}
		}
	}
	if server {
		good = append([]string{WhyServerEvidence}, good...)
	}
	if c.severalLevels(w) {
		good = append(good, WhySeveralLevels)
	} else {
		doubt = append(doubt, WhyOneLevel)
	}
	for _, f := range checks {
		if f.Status == StatusUnknown && f.At.Valid() && levelPos(c.levels, f.At.LevelIndex) < levelPos(c.levels, w.At.LevelIndex) {
			doubt = appendUnique(doubt, WhyEarlierUnknown)
		}
	}
	if w.Kind == WallCompute && w.Basis == BasisGPU && c.src.Decode == nil {
		doubt = append(doubt, WhyNoRidge)
	}
	if w.Kind == WallFrontQueue && !server && !slices.ContainsFunc(w.Evidence, func(e Evidence) bool { return e.Kind == EvServerQueue0 || e.Kind == EvSlotWait }) {
		doubt = append(doubt, WhyTTFTOnly)
	}
	if len(doubt) > 0 {
		return Confidence{Level: ConfidenceMedium, Reasons: doubt}
	}
	return Confidence{Level: ConfidenceHigh, Reasons: good}
}

// severalLevels reports whether a wall shows at more than one level: its
// evidence spans two levels or more, a cap held at several levels, or a
// TPOT knee below the highest level (TPOT stays bent above it).
func (c *checker) severalLevels(w Wall) bool {
	seen := map[int]bool{}
	for _, e := range w.Evidence {
		seen[e.LevelIndex] = true
		if e.Kind == EvRunningPinned && e.Count >= 2 {
			return true
		}
	}
	if len(seen) >= 2 {
		return true
	}
	knee := w.Kind == WallCompute || w.Kind == WallEngineOverhead
	return knee && levelPos(c.levels, w.At.LevelIndex) < len(c.levels)-1
}

func capEvidence(ev []Evidence, n int) []Evidence {
	if n > 0 && len(ev) > n {
		return ev[:n]
	}
	return ev
}

func appendUnique(dst []string, xs ...string) []string {
	for _, x := range xs {
		if !slices.Contains(dst, x) {
			dst = append(dst, x)
		}
	}
	return dst
}
