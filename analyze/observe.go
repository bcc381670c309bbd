package analyze

import (
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/headroom-llm/headroom/analyze/serverlog"
	"github.com/headroom-llm/headroom/analyze/servermetrics"
	"github.com/headroom-llm/headroom/clientbound"
	"github.com/headroom-llm/headroom/rundir"
)

// observations is what the server log, metrics, GPU telemetry and the
// client self-check say, cut per level by time.
type observations struct {
	hasLog, hasLogTimes, hasMetrics, hasGPU, hasClient bool
	logEngine                                          string
	metricsEngine                                      string
	// metricHas says which quantities the metrics carried.
	hasServerCPU bool
	metricHas    map[servermetrics.Quantity]bool
	perLevel     map[int]*WindowEvidence
	// waiting sums the waiting counts seen inside each level's measured
	// window, per source, for its mean.
	waitLog, waitMetric map[int]*meanAcc
	logSum              *serverlog.Summary
	notes               []Note
	series              []TimeSeries // for the timeline, absolute times in TS (ns/1e9)
}

// meanAcc accumulates a mean.
type meanAcc struct {
	sum float64
	n   int
}

func (m *meanAcc) add(v float64) { m.sum += v; m.n++ }

// sources is what the observations hold, for the diagnosis.
func (o *observations) sources() Sources {
	return Sources{Log: o.hasLog, LogTimes: o.hasLogTimes, Metrics: o.hasMetrics, GPU: o.hasGPU, ServerCPU: o.hasServerCPU,
		Client: o.hasClient, KVObservable: o.kvObservable()}
}

// kvObservable says whether the run could have shown a KV wall.
func (o *observations) kvObservable() bool {
	if o.metricHas[servermetrics.Preemptions] || o.metricHas[servermetrics.KVUsage] {
		return true
	}
	return o.hasLog && o.logEngine != ""
}

// observe fills each level's Server and Client fields and gathers the
// evidence the diagnosis quotes. Problems reading the log or metrics become
// notes, never errors: the analysis goes on with what it has.
func observe(run *Run, levels []LevelStats, set Settings) *observations {
	o := &observations{perLevel: map[int]*WindowEvidence{}, metricHas: map[servermetrics.Quantity]bool{},
		waitLog: map[int]*meanAcc{}, waitMetric: map[int]*meanAcc{}}
	for _, l := range levels {
		o.perLevel[l.LevelIndex] = &WindowEvidence{}
		o.waitLog[l.LevelIndex], o.waitMetric[l.LevelIndex] = &meanAcc{}, &meanAcc{}
	}
	find := func(ns int64) []int {
		var out []int
		for i, l := range levels {
			if l.StartNS != 0 && ns >= l.StartNS && ns <= l.EndNS {
				out = append(out, i)
			}
		}
		return out
	}
	if logs := run.replicaLogRuns(); len(logs) > 0 {
		for _, l := range logs {
			o.observeLog(l, levels, find, set)
		}
	} else {
		o.observeLog(run, levels, find, set)
	}
	o.observeMetrics(run, levels, find)
	o.observeGPU(run, levels)
	o.observeServerCPU(run, levels)
	o.observeClient(run, levels, set)
	for i := range levels {
		l := &levels[i]
		acc := o.waitMetric[l.LevelIndex]
		if acc.n == 0 {
			acc = o.waitLog[l.LevelIndex]
		}
		if acc.n > 0 {
			l.Server.WaitingMean = acc.sum / float64(acc.n)
		}
	}
	return o
}

func engineName(m *rundir.Manifest) string {
	if m == nil || m.Engine == nil {
		return ""
	}
	return m.Engine.Name
}

func (o *observations) observeLog(run *Run, levels []LevelStats, find func(int64) []int, set Settings) {
	if run.LogPath == "" {
		return
	}
	f, err := run.openLog()
	if err != nil {
		o.notes = append(o.notes, Note{Kind: NoteLogUnreadable, File: run.LogPath, Error: err.Error()})
		return
	}
	defer f.Close()
	o.hasLog = true
	eng, _ := serverlog.ParseEngine(engineName(run.Manifest))
	opts := serverlog.Options{Engine: eng, Reference: run.Manifest.StartTime, File: run.LogPath}
	if len(run.LogLines) > 0 {
		clock, err := logClock(run.LogLines)
		if err != nil {
			o.notes = append(o.notes, Note{Kind: NoteLogClockBad, File: run.Dir, Error: err.Error()})
		} else {
			opts.Clock = clock
			o.hasLogTimes = true
		}
	} else {
		o.notes = append(o.notes, Note{Kind: NoteNoLogTimes})
	}
	sc := serverlog.NewScanner(f, opts)
	z := serverlog.NewSummarizer()
	kv := TimeSeries{Name: SeriesKVUsage, Unit: "fraction", Source: "server log"}
	running := TimeSeries{Name: SeriesRunning, Unit: "requests", Source: "server log"}
	waiting := TimeSeries{Name: SeriesWaiting, Unit: "requests", Source: "server log"}
	for sc.Scan() {
		ev := sc.Event()
		z.Add(ev)
		ns := eventTimeNS(ev)
		if ns == 0 {
			continue
		}
		if ev.Kind == serverlog.KindStats {
			st := &ev.Stats
			if st.Has(serverlog.FieldKVUsage) {
				kv.Points = append(kv.Points, TimePoint{TS: float64(ns), V: st.KVUsage})
			}
			if st.Has(serverlog.FieldRunning) {
				running.Points = append(running.Points, TimePoint{TS: float64(ns), V: float64(st.Running)})
			}
			if st.Has(serverlog.FieldWaiting) {
				waiting.Points = append(waiting.Points, TimePoint{TS: float64(ns), V: float64(st.Waiting)})
			}
		}
		for _, i := range find(ns) {
			l := &levels[i]
			lo := o.perLevel[l.LevelIndex]
			l.Server.LogLines++
			evd := Evidence{Source: EvidenceLog, Concurrency: l.Concurrency, RateRPS: l.RateRPS, LevelIndex: l.LevelIndex, TimeNS: ns, Line: ev.Line, Text: ev.Raw}
			switch ev.Kind {
			case serverlog.KindPreemption:
				l.Server.Preemptions += max(ev.Preemption.Count, 1)
				l.Server.PreemptionsKnown, l.Server.PreemptionsSource = true, "server log"
				evd.Kind, evd.Mode = EvPreemptLog, string(ev.Preemption.Mode)
				lo.PreemptLog = append(lo.PreemptLog, evd)
			case serverlog.KindKVFull:
				evd.Kind = EvKVFullLog
				lo.KVFullLog = append(lo.KVFullLog, evd)
			case serverlog.KindError:
				l.Server.LogErrors++
			case serverlog.KindStats:
				st := &ev.Stats
				if st.Has(serverlog.FieldKVUsage) && (!l.Server.KVUsageKnown || l.Server.KVUsageSource == "server log") && st.KVUsage >= l.Server.KVUsageMaxFraction {
					l.Server.KVUsageMaxFraction, l.Server.KVUsageKnown, l.Server.KVUsageSource = st.KVUsage, true, "server log"
					e := evd
					e.Kind, e.Name, e.Value, e.Unit = EvKVUsage, "KV cache usage", st.KVUsage, "fraction"
					lo.KVMax = &e
				}
				if st.Has(serverlog.FieldWaiting) && ns >= l.WarmupEndNS && ns <= l.EndNS {
					o.waitLog[l.LevelIndex].add(float64(st.Waiting))
				}
				if st.Has(serverlog.FieldWaiting) && (!l.Server.WaitingKnown || lo.WaitingMax == nil || lo.WaitingMax.Source == EvidenceLog) && float64(st.Waiting) >= l.Server.WaitingMax {
					l.Server.WaitingMax, l.Server.WaitingKnown = float64(st.Waiting), true
					e := evd
					e.Kind, e.Name, e.Value, e.Unit = EvWaiting, "waiting requests", float64(st.Waiting), "requests"
					lo.WaitingMax = &e
				}
				if st.Has(serverlog.FieldRunning) && float64(st.Running) > l.Server.RunningMax {
					l.Server.RunningMax, l.Server.RunningKnown = float64(st.Running), true
				}
			}
		}
	}
	z.SetCounts(sc.Counts(), sc.SyntaxErrors())
	sum := z.Summary()
	if sum.Engine == serverlog.EngineUnknown {
		sum.Engine = sc.Engine()
	}
	o.logSum, o.logEngine = &sum, string(sum.Engine)
	if err := sc.Err(); err != nil {
		o.notes = append(o.notes, Note{Kind: NoteLogReadStopped, File: run.LogPath, Error: err.Error()})
	}
	if sum.Engine == serverlog.EngineUnknown {
		o.notes = append(o.notes, Note{Kind: NoteLogUnrecognised, File: run.LogPath, Count: int(sum.Counts.Lines)})
	}
	// A level the log covers without a preemption line had none only when
	// the engine logs every preemption (SGLang, the test engines), or logs a
	// sample of them (vLLM V0) and the whole log has no preemption line.
	// vLLM V1 and llama.cpp never log them: their silence proves nothing.
	logging := sum.PreemptionLogging()
	if logging == serverlog.PreemptionsAll || (logging == serverlog.PreemptionsSampled && sum.PreemptionLines == 0) {
		for i := range levels {
			if levels[i].Server.LogLines > 0 && !levels[i].Server.PreemptionsKnown {
				levels[i].Server.PreemptionsKnown, levels[i].Server.PreemptionsSource = true, "server log"
			}
		}
	}
	for _, s := range []TimeSeries{kv, running, waiting} {
		// Several replicas' logs: the first that has a series shows it.
		if len(s.Points) > 0 && !slices.ContainsFunc(o.series, func(t TimeSeries) bool { return t.Name == s.Name }) {
			o.series = append(o.series, s)
		}
	}
}

// eventTimeNS is when the client received a log line, else the engine's
// stamp when it carries a full date; 0 when neither is known.
func eventTimeNS(ev *serverlog.Event) int64 {
	if !ev.RecvTime.IsZero() {
		return ev.RecvTime.UnixNano()
	}
	if ev.TimeQuality == serverlog.TimeComplete || ev.TimeQuality == serverlog.TimeNoZone {
		return ev.Time.UnixNano()
	}
	return 0
}

func (o *observations) observeMetrics(run *Run, levels []LevelStats, find func(int64) []int) {
	if len(run.Metrics) == 0 {
		return
	}
	samples := make([]servermetrics.Sample, len(run.Metrics))
	for i, m := range run.Metrics {
		samples[i] = metricSample(m)
	}
	eng := engineName(run.Manifest)
	if _, ok := servermetrics.Lookup(eng); !ok {
		eng = "" // detect from the metric names
	}
	res, err := servermetrics.Extract(samples, servermetrics.Options{Engine: eng})
	if err != nil {
		o.notes = append(o.notes, Note{Kind: NoteMetricsError, Error: err.Error()})
		return
	}
	o.hasMetrics, o.metricsEngine = true, res.Engine
	for _, w := range res.Warnings {
		o.notes = append(o.notes, Note{Kind: NoteMetricsWarning, Metrics: &w})
	}
	// Sum running/waiting over label sets (data-parallel engines) at each
	// scrape; KV usage takes the fullest.
	combine := func(q servermetrics.Quantity, sum bool) ([]servermetrics.Point, string) {
		byTime := map[int64]float64{}
		name := ""
		for _, g := range res.Gauges {
			if g.Quantity != q {
				continue
			}
			name = g.Metric
			for _, p := range g.Points {
				if v, ok := byTime[p.TimeNS]; ok {
					if sum {
						byTime[p.TimeNS] = v + p.Value
					} else {
						byTime[p.TimeNS] = math.Max(v, p.Value)
					}
				} else {
					byTime[p.TimeNS] = p.Value
				}
			}
		}
		pts := make([]servermetrics.Point, 0, len(byTime))
		for t, v := range byTime {
			pts = append(pts, servermetrics.Point{TimeNS: t, Value: v})
		}
		sort.Slice(pts, func(i, j int) bool { return pts[i].TimeNS < pts[j].TimeNS })
		return pts, name
	}
	gauge := func(q servermetrics.Quantity, series, unit string, sum bool, apply func(l *LevelStats, lo *WindowEvidence, p servermetrics.Point, metric string)) {
		pts, name := combine(q, sum)
		if len(pts) == 0 {
			return
		}
		o.metricHas[q] = true
		ts := TimeSeries{Name: series, Unit: unit, Source: name}
		for _, p := range pts {
			ts.Points = append(ts.Points, TimePoint{TS: float64(p.TimeNS), V: p.Value})
			for _, i := range find(p.TimeNS) {
				apply(&levels[i], o.perLevel[levels[i].LevelIndex], p, name)
			}
		}
		o.replaceSeries(ts)
	}
	gauge(servermetrics.KVUsage, SeriesKVUsage, "fraction", false, func(l *LevelStats, lo *WindowEvidence, p servermetrics.Point, metric string) {
		// Metrics take the place of log-derived values.
		if l.Server.KVUsageSource == metric && p.Value <= l.Server.KVUsageMaxFraction {
			return
		}
		l.Server.KVUsageMaxFraction, l.Server.KVUsageKnown, l.Server.KVUsageSource = p.Value, true, metric
		lo.KVMax = &Evidence{Kind: EvKVUsage, Source: EvidenceMetric, Concurrency: l.Concurrency, RateRPS: l.RateRPS, LevelIndex: l.LevelIndex, TimeNS: p.TimeNS,
			Name: metric, Value: p.Value, Unit: "fraction"}
	})
	gauge(servermetrics.Waiting, SeriesWaiting, "requests", true, func(l *LevelStats, lo *WindowEvidence, p servermetrics.Point, metric string) {
		if p.TimeNS >= l.WarmupEndNS && p.TimeNS <= l.EndNS {
			o.waitMetric[l.LevelIndex].add(p.Value)
		}
		if lo.WaitingMax != nil && lo.WaitingMax.Source == EvidenceMetric && p.Value <= l.Server.WaitingMax {
			return
		}
		l.Server.WaitingMax, l.Server.WaitingKnown = p.Value, true
		lo.WaitingMax = &Evidence{Kind: EvWaiting, Source: EvidenceMetric, Concurrency: l.Concurrency, RateRPS: l.RateRPS, LevelIndex: l.LevelIndex, TimeNS: p.TimeNS,
			Name: metric, Value: p.Value, Unit: "requests"}
	})
	gauge(servermetrics.Running, SeriesRunning, "requests", true, func(l *LevelStats, _ *WindowEvidence, p servermetrics.Point, _ string) {
		if !l.Server.RunningKnown || p.Value > l.Server.RunningMax {
			l.Server.RunningMax, l.Server.RunningKnown = p.Value, true
		}
	})
	// Preemptions: counter increases whose interval ends inside a level.
	var cum TimeSeries
	for _, r := range res.Rates {
		if r.Quantity != servermetrics.Preemptions {
			continue
		}
		o.metricHas[servermetrics.Preemptions] = true
		cum = TimeSeries{Name: SeriesPreemptions, Unit: "preemptions (cumulative)", Source: r.Metric}
		total := 0.0
		for _, p := range r.Points {
			total += p.Increase
			cum.Points = append(cum.Points, TimePoint{TS: float64(p.EndNS), V: total})
			for _, i := range find(p.EndNS) {
				l := &levels[i]
				lo := o.perLevel[l.LevelIndex]
				if l.Server.PreemptionsSource != r.Metric {
					// The counter is authoritative over log lines, which
					// some engines print only every Nth time.
					l.Server.Preemptions, l.Server.PreemptionsSource = 0, r.Metric
				}
				l.Server.PreemptionsKnown = true
				l.Server.Preemptions += int(math.Round(p.Increase))
				if p.Increase > 0 {
					lo.PreemptMetric = &Evidence{Kind: EvPreemptions, Source: EvidenceMetric, Concurrency: l.Concurrency, RateRPS: l.RateRPS, LevelIndex: l.LevelIndex, TimeNS: p.EndNS,
						Name: r.Metric, Value: float64(l.Server.Preemptions), Unit: "preemptions"}
				}
			}
		}
	}
	if len(cum.Points) > 0 {
		o.replaceSeries(cum)
	}
	// Prefix cache: tokens looked up and found, over the intervals ending
	// inside a level.
	for _, r := range res.Rates {
		if r.Quantity != servermetrics.PrefixQueries && r.Quantity != servermetrics.PrefixHits {
			continue
		}
		for _, p := range r.Points {
			for _, i := range find(p.EndNS) {
				l := &levels[i]
				l.Server.PrefixKnown, l.Server.PrefixSource = true, r.Metric
				if r.Quantity == servermetrics.PrefixHits {
					l.Server.PrefixHitTokens += p.Increase
				} else {
					l.Server.PrefixQueryTokens += p.Increase
				}
			}
		}
	}
}

// replaceSeries puts a metrics series in place of a log-derived one.
func (o *observations) replaceSeries(ts TimeSeries) {
	for i := range o.series {
		if o.series[i].Name == ts.Name {
			o.series[i] = ts
			return
		}
	}
	o.series = append(o.series, ts)
}

func (o *observations) observeGPU(run *Run, levels []LevelStats) {
	if len(run.GPU) == 0 {
		return
	}
	o.hasGPU = true
	byDev := map[int32][]rundir.GPUTelemetryRow{}
	for _, g := range run.GPU {
		byDev[g.Device] = append(byDev[g.Device], g)
	}
	devs := make([]int, 0, len(byDev))
	for d := range byDev {
		devs = append(devs, int(d))
	}
	sort.Ints(devs)
	for _, d := range devs {
		rows := byDev[int32(d)]
		sort.Slice(rows, func(i, j int) bool { return rows[i].TimeNS < rows[j].TimeNS })
		add := func(name, unit string, v func(rundir.GPUTelemetryRow) float64) {
			ts := TimeSeries{Name: name, Unit: unit, Source: "NVML", Device: d}
			for _, r := range rows {
				ts.Points = append(ts.Points, TimePoint{TS: float64(r.TimeNS), V: v(r)})
			}
			o.series = append(o.series, ts)
		}
		add(SeriesGPUUtil, "percent", func(r rundir.GPUTelemetryRow) float64 { return r.GPUUtilPct })
		add(SeriesGPUPower, "W", func(r rundir.GPUTelemetryRow) float64 { return r.PowerW })
		add(SeriesGPUSMClock, "MHz", func(r rundir.GPUTelemetryRow) float64 { return r.SMClockMHz })
		add(SeriesGPUTemp, "°C", func(r rundir.GPUTelemetryRow) float64 { return r.TemperatureC })
	}
	for i := range levels {
		l := &levels[i]
		// Telemetry describes the measured window, where the load is steady.
		from, to := l.WarmupEndNS, l.EndNS
		if from == 0 {
			continue
		}
		var utilSum, powerSum float64
		var n int
		throttle := map[string]bool{}
		for _, d := range devs {
			var u, p float64
			k := 0
			for _, r := range byDev[int32(d)] {
				if r.TimeNS < from || r.TimeNS > to {
					continue
				}
				u += r.GPUUtilPct
				p += r.PowerW
				k++
				for _, t := range strings.Split(r.Throttle, ",") {
					if t = strings.TrimSpace(t); t != "" {
						throttle[t] = true
					}
				}
			}
			if k > 0 {
				utilSum += u / float64(k)
				powerSum += p / float64(k)
				n++
			}
		}
		if n == 0 {
			continue
		}
		l.Server.GPUKnown = true
		l.Server.GPUUtilMeanPct = utilSum / float64(n)
		l.Server.GPUPowerMeanW = powerSum
		var ts []string
		for t := range throttle {
			ts = append(ts, t)
		}
		sort.Strings(ts)
		l.Server.GPUThrottle = strings.Join(ts, ",")
		o.perLevel[l.LevelIndex].GPUUtil = &Evidence{Kind: EvGPUUtil, Source: EvidenceTelemetry, Concurrency: l.Concurrency, RateRPS: l.RateRPS, LevelIndex: l.LevelIndex,
			Name: "gpu_util_pct", Value: l.Server.GPUUtilMeanPct, Unit: "percent", Count: n}
	}
}

func (o *observations) observeClient(run *Run, levels []LevelStats, set Settings) {
	if len(run.Client) == 0 {
		return
	}
	o.hasClient = true
	rows := append([]rundir.ClientSampleRow(nil), run.Client...)
	sort.Slice(rows, func(i, j int) bool { return rows[i].TimeNS < rows[j].TimeNS })
	cpu := TimeSeries{Name: SeriesClientCPU, Unit: "fraction of GOMAXPROCS", Source: "client self-check"}
	for i := 1; i < len(rows); i++ {
		if f, ok := cpuBusy(rows[i-1], rows[i]); ok {
			cpu.Points = append(cpu.Points, TimePoint{TS: float64(rows[i].TimeNS), V: f})
		}
	}
	if len(cpu.Points) > 0 {
		o.series = append(o.series, cpu)
	}
	for i := range levels {
		l := &levels[i]
		from, to := l.WarmupEndNS, l.EndNS
		if from == 0 {
			from = l.StartNS
		}
		var in []rundir.ClientSampleRow
		for _, r := range rows {
			if r.TimeNS >= from && r.TimeNS <= to {
				in = append(in, r)
			}
		}
		if len(in) == 0 {
			continue
		}
		c := &l.Client
		c.Known = true
		for _, r := range in {
			c.OpenStreamsMax = max(c.OpenStreamsMax, r.OpenStreams)
		}
		// The client-bound rule is clientbound's, the collector's too.
		chk := clientbound.Judge(clientbound.Thresholds{CPUFraction: set.Diagnosis.ClientCPUBusy, SendLagS: set.Diagnosis.ClientSendLagS},
			clientbound.Level{FromNS: from, ToNS: to, OpenLoop: l.RateRPS > 0, Concurrency: l.Concurrency, Requests: int64(l.Requests)}, in)
		c.CPUs, c.Samples, c.LagSamples, c.LagLimitS, c.SendLagMaxS = chk.CPUs, chk.Samples, chk.LagSamples, chk.LagLimitS, chk.LagMaxS
		c.CPUBusyFraction, c.CPUDemand, c.CPUDemandKnown = chk.CPUFraction, chk.CPUDemand, chk.DemandKnown
		c.CPUBound, c.Lagging = chk.CPUBound, chk.Lagging
		last := in[len(in)-1]
		lo := o.perLevel[l.LevelIndex]
		lo.ClientCPU = &Evidence{Kind: EvClientCPU, Source: EvidenceClient, Concurrency: l.Concurrency, RateRPS: l.RateRPS, LevelIndex: l.LevelIndex,
			TimeNS: last.TimeNS, Name: "client CPU", Value: c.CPUDemand, Ref: set.Diagnosis.ClientCPUBusy, Unit: "fraction of GOMAXPROCS", Count: c.CPUs}
		lo.ClientLag = &Evidence{Kind: EvSendLag, Source: EvidenceClient, Concurrency: l.Concurrency, RateRPS: l.RateRPS, LevelIndex: l.LevelIndex,
			Name: "send lag max", Value: c.SendLagMaxS, Ref: c.LagLimitS, Unit: "s", Count: c.LagSamples}
	}
}

// cpuBusy is the client's CPU time between two samples over wall time and
// GOMAXPROCS.
func cpuBusy(a, b rundir.ClientSampleRow) (float64, bool) {
	dt := float64(b.TimeNS-a.TimeNS) / 1e9
	if dt <= 0 || b.CPUs <= 0 {
		return 0, false
	}
	cpu := (b.CPUUserS + b.CPUSystemS) - (a.CPUUserS + a.CPUSystemS)
	return cpu / dt / float64(b.CPUs), true
}

// observeServerCPU cuts the server process's thread samples per level:
// each thread's CPU demand over the measured window (time on a CPU plus
// time runnable but waiting for one, over wall time; CPU time alone when
// the kernel gives no schedstat), the busiest thread, and the process's
// total in cores.
func (o *observations) observeServerCPU(run *Run, levels []LevelStats) {
	if len(run.ServerCPU) == 0 {
		return
	}
	o.hasServerCPU = true
	type key struct{ pid, tid int32 }
	byThread := map[key][]rundir.ServerCPURow{}
	var keys []key
	for _, r := range run.ServerCPU {
		k := key{r.PID, r.TID}
		if _, ok := byThread[k]; !ok {
			keys = append(keys, k)
		}
		byThread[k] = append(byThread[k], r)
	}
	for _, k := range keys {
		rows := byThread[k]
		sort.Slice(rows, func(i, j int) bool { return rows[i].TimeNS < rows[j].TimeNS })
	}
	busy := func(r rundir.ServerCPURow) float64 {
		if r.RunS > 0 || r.WaitS > 0 {
			return r.RunS + r.WaitS
		}
		return r.CPUUserS + r.CPUSystemS
	}
	// The process's demand over time, for the timeline: per thread, the
	// increase between its consecutive samples, summed at the later time.
	total := map[int64]float64{}
	for _, k := range keys {
		rows := byThread[k]
		for i := 1; i < len(rows); i++ {
			if dt := float64(rows[i].TimeNS-rows[i-1].TimeNS) / 1e9; dt > 0 {
				total[rows[i].TimeNS] += max(busy(rows[i])-busy(rows[i-1]), 0) / dt
			}
		}
	}
	series := TimeSeries{Name: SeriesServerCPU, Unit: "cores", Source: "server_cpu"}
	for t, v := range total {
		series.Points = append(series.Points, TimePoint{TS: float64(t), V: v})
	}
	if len(series.Points) > 0 {
		o.series = append(o.series, series)
	}
	for i := range levels {
		l := &levels[i]
		from, to := l.WarmupEndNS, l.EndNS
		if from == 0 || to <= from {
			continue
		}
		window := float64(to-from) / 1e9
		var best float64
		var bestName string
		var sum float64
		hostCPUs := 0
		seen := false
		for _, k := range keys {
			var first, last *rundir.ServerCPURow
			for j := range byThread[k] {
				r := &byThread[k][j]
				if r.TimeNS < from || r.TimeNS > to {
					continue
				}
				if first == nil {
					first = r
				}
				last = r
			}
			if first == nil || last == first {
				continue
			}
			seen = true
			hostCPUs = int(last.HostCPUs)
			d := max(busy(*last)-busy(*first), 0)
			sum += d
			if f := d / (float64(last.TimeNS-first.TimeNS) / 1e9); f > best {
				best, bestName = f, last.Thread
			}
		}
		if !seen {
			continue
		}
		s := &l.Server
		s.CPUKnown, s.CPUThreadDemand, s.CPUBusiestThread, s.CPUProcessDemand, s.CPUHostCores = true, best, bestName, sum/window, hostCPUs
		o.perLevel[l.LevelIndex].ServerCPU = &Evidence{Kind: EvServerCPU, Source: EvidenceTelemetry, Concurrency: l.Concurrency, RateRPS: l.RateRPS,
			LevelIndex: l.LevelIndex, Name: bestName, Value: best, Ref: s.CPUProcessDemand, Unit: "cores", Count: hostCPUs}
	}
}

// timeline turns the gathered series into plot data relative to the sweep
// start, each capped at max points by bucket means.
func (o *observations) timeline(levels []LevelStats, maxPoints int) *Timeline {
	if len(levels) == 0 || levels[0].StartNS == 0 {
		return nil
	}
	start := levels[0].StartNS
	t := &Timeline{StartNS: start}
	for _, l := range levels {
		t.Levels = append(t.Levels, LevelSpan{LevelIndex: l.LevelIndex, Concurrency: l.Concurrency, RateRPS: l.RateRPS, Load: l.Load,
			StartS: float64(l.StartNS-start) / 1e9, WarmupEndS: float64(l.WarmupEndNS-start) / 1e9, EndS: float64(l.EndNS-start) / 1e9})
	}
	for _, s := range o.series {
		sort.Slice(s.Points, func(i, j int) bool { return s.Points[i].TS < s.Points[j].TS })
		for i := range s.Points {
			s.Points[i].TS = (s.Points[i].TS - float64(start)) / 1e9
		}
		s.Points = downsample(s.Points, maxPoints)
		t.Series = append(t.Series, s)
	}
	return t
}

// downsample averages points into at most n buckets of equal count.
func downsample(pts []TimePoint, n int) []TimePoint {
	if n <= 0 || len(pts) <= n {
		return pts
	}
	out := make([]TimePoint, 0, n)
	for b := range n {
		lo, hi := b*len(pts)/n, (b+1)*len(pts)/n
		var ts, v float64
		for _, p := range pts[lo:hi] {
			ts += p.TS
			v += p.V
		}
		k := float64(hi - lo)
		out = append(out, TimePoint{TS: ts / k, V: v / k})
	}
	return out
}
