package analyze

import (
	"fmt"
	"github.com/headroom-llm/headroom/clientbound"
	"github.com/headroom-llm/headroom/stats"
	"strings"
)

// Diagnosis is the seed's "which wall did you hit": four checks, each with
// its evidence, and the wall they point to.
type Diagnosis struct {
	// Wall is a Wall* value.
	Wall string `json:"wall"`
	// Short names the wall and where in a line, for headlines; Summary
	// explains it.
	Short   string `json:"short"`
	Summary string `json:"summary"`
	// BusyNotSaturated: the compute knee by the seed's test (GPU busy per
	// NVML), but far below the probe's ridge, so the engine's per-step work
	// rather than the silicon bent TPOT.
	BusyNotSaturated bool      `json:"busy_not_saturated,omitempty"`
	Findings         []Finding `json:"findings"`
	// Missing names evidence the run lacks, for the "inconclusive" case
	// and for the reader.
	Missing []string `json:"missing,omitempty"`
}

// Walls.
const (
	WallKVCache      = "kv_cache"
	WallCompute      = "compute"
	WallQueueing     = "queueing"
	WallClientBound  = "client_bound"
	WallNone         = "none" // TPOT stayed flat and nothing queued: no wall reached
	WallInconclusive = "inconclusive"
)

// Finding is one check's result.
type Finding struct {
	Check string `json:"check"` // a Wall* value naming the check
	// Status is "hit", "clear", "unknown" (evidence missing) or
	// "not_applicable".
	Status string `json:"status"`
	// The level it is about: LevelIndex (-1 none), its concurrency and its
	// name in sentences ("c=8", "4 req/s").
	LevelIndex  int        `json:"level_index"`
	Concurrency int        `json:"concurrency,omitempty"`
	Load        string     `json:"load,omitempty"`
	Summary     string     `json:"summary"`
	Evidence    []Evidence `json:"evidence,omitempty"`
	Fixes       []string   `json:"fixes,omitempty"`
	Missing     []string   `json:"missing,omitempty"`
	// AfterKnee marks a wall first hit past the TPOT knee: real, but not
	// the one that bent TPOT, so it does not name the run's wall.
	AfterKnee bool `json:"after_knee,omitempty"`
}

// Finding statuses.
const (
	StatusHit           = "hit"
	StatusClear         = "clear"
	StatusUnknown       = "unknown"
	StatusNotApplicable = "not_applicable"
)

// The seed's fixes.
var (
	queueFixes = []string{
		"put admission control or a concurrency cap in front of the server (at the recommended concurrency); a bigger GPU will not help",
	}
	clientFixes = []string{
		"give the load generator more cores or its own machine, and rerun the levels it saturated",
	}
)

// Missing-evidence names.
const (
	missingLog       = "server log (server.log)"
	missingMetrics   = "server metrics (server_metrics)"
	missingGPU       = "GPU telemetry (gpu_telemetry)"
	missingClient    = "client self-check (client_samples)"
	missingLogTimes  = "log receive times (server_log_lines)"
	missingPerReqest = "per-request data (requests)"
)

// diagnose runs the four checks over levels sorted by concurrency.
// engine names the serving engine (manifest or log) for the fixes.
func diagnose(levels []LevelStats, knees Knees, obs *observations, decode *DecodeRoofline, set Settings, engine string) Diagnosis {
	var d Diagnosis
	if !obs.hasLog {
		d.Missing = append(d.Missing, missingLog)
	} else if !obs.hasLogTimes {
		d.Missing = append(d.Missing, missingLogTimes)
	}
	if !obs.hasMetrics {
		d.Missing = append(d.Missing, missingMetrics)
	}
	if !obs.hasGPU {
		d.Missing = append(d.Missing, missingGPU)
	}
	if !obs.hasClient {
		d.Missing = append(d.Missing, missingClient)
	}
	kv := checkKV(levels, knees, obs, set, engine)
	compute := checkCompute(levels, knees, obs, kv, decode, set)
	queue := checkQueueing(levels, knees, obs, set)
	client := checkClient(levels, knees, obs, set)
	d.Findings = []Finding{kv, compute, queue, client}

	switch {
	case client.Status == StatusHit:
		d.Wall = WallClientBound
		d.Summary = client.Summary
	case kv.Status == StatusHit && !kv.AfterKnee:
		d.Wall, d.Summary = WallKVCache, kv.Summary
	case compute.Status == StatusHit:
		d.Wall, d.Summary = WallCompute, compute.Summary
	case knees.TPOTKneeLevel >= 0:
		d.Wall = WallInconclusive
		var missing []string
		for _, f := range []Finding{kv, compute} {
			missing = appendUnique(missing, f.Missing...)
		}
		knee := levelLoad(levels, knees.TPOTKneeLevel)
		if len(missing) > 0 {
			d.Summary = fmt.Sprintf("TPOT bent at %s, but the run lacks the evidence to say why: no %s.", knee, strings.Join(missing, ", no "))
		} else {
			kvAtKnee := kv.Summary
			if kv.AfterKnee {
				kvAtKnee = "no KV-cache pressure at or before the knee"
			}
			d.Summary = fmt.Sprintf("TPOT bent at %s, but neither wall fits: %s; %s", knee, lowerFirst(kvAtKnee), lowerFirst(compute.Summary))
			if kp := levelPos(levels, knees.TPOTKneeLevel); kp >= 0 && levels[kp].Server.GPUKnown &&
				levels[kp].Server.GPUUtilMeanPct < set.Diagnosis.GPUUtilBusyPct && client.Status == StatusClear {
				d.Summary += fmt.Sprintf(". With the client keeping up and no KV-cache pressure, a GPU idle %.0f%% of the time at the knee points at the engine's host side (scheduling, kernel launches, Python between steps): profile the server process.",
					100-levels[kp].Server.GPUUtilMeanPct)
			}
		}
		if queue.Status == StatusHit {
			d.Summary += " Separately: " + queue.Summary
		}
	case queue.Status == StatusHit:
		d.Wall, d.Summary = WallQueueing, queue.Summary
	case len(levels) == 0:
		d.Wall, d.Summary = WallInconclusive, "the sweep has no levels"
	case knees.BaselineLevel < 0:
		d.Wall, d.Summary = WallInconclusive, "no level has a TPOT, so no wall can be found"
	default:
		d.Wall = WallNone
		d.Summary = fmt.Sprintf("No wall reached: p50 TPOT stayed within %.1f× of %s up to %s and TTFT did not show queueing. Raise the levels to find where the box stops.",
			knees.TPOTKneeFactor, levelLoad(levels, knees.BaselineLevel), levelLoad(levels, knees.FlatToLevel))
	}
	d.BusyNotSaturated = d.Wall == WallCompute && decode != nil && decode.Ridge.Verdict == RidgeKneeBefore
	d.Short = shortWall(d, levels, knees, kv, client, queue)
	if kv.Status == StatusHit && kv.AfterKnee && d.Wall != WallKVCache {
		d.Summary += " Then, past the knee: " + kv.Summary
		d.Short += "; then the KV-cache wall from " + kv.Load
	}
	return d
}

// shortWall names the wall and its level in a line.
func shortWall(d Diagnosis, levels []LevelStats, knees Knees, kv, client, queue Finding) string {
	knee := levelLoad(levels, knees.TPOTKneeLevel)
	switch d.Wall {
	case WallKVCache:
		return "KV-cache wall at " + kv.Load
	case WallCompute:
		if d.BusyNotSaturated {
			return "compute knee at " + knee + " (GPU busy, not saturated: far below the ridge)"
		}
		return "compute knee at " + knee
	case WallClientBound:
		return "client-bound from " + client.Load
	case WallQueueing:
		return "queueing from " + queue.Load
	case WallNone:
		return "no wall reached up to " + levelLoad(levels, knees.FlatToLevel)
	}
	if knees.TPOTKneeLevel >= 0 {
		return "inconclusive: TPOT bent at " + knee
	}
	return "inconclusive"
}

// levelLoad names the level with the given index, "?" when absent.
func levelLoad(levels []LevelStats, levelIndex int) string {
	if p := levelPos(levels, levelIndex); p >= 0 {
		return levels[p].Load
	}
	return "?"
}

// about points a finding at a level.
func (f *Finding) about(l LevelStats) {
	f.LevelIndex, f.Concurrency, f.Load = l.LevelIndex, l.Concurrency, l.Load
}

// upToKnee returns the levels at or before the TPOT knee (all levels when
// there is none).
func upToKnee(levels []LevelStats, knees Knees) []LevelStats {
	if p := levelPos(levels, knees.TPOTKneeLevel); p >= 0 {
		return levels[:p+1]
	}
	return levels
}

func checkKV(levels []LevelStats, knees Knees, obs *observations, set Settings, engine string) Finding {
	f := Finding{Check: WallKVCache, Fixes: kvFixes(engine), LevelIndex: -1}
	if !obs.hasLog && !obs.hasMetrics {
		f.Status = StatusUnknown
		f.Missing = []string{missingLog, missingMetrics}
		f.Summary = "no server log and no server metrics: preemptions and KV cache usage are unknown"
		return f
	}
	before := upToKnee(levels, knees)
	hit, ev := kvPressure(before, obs, set)
	switch {
	case hit != nil && knees.TPOTKneeLevel >= 0:
		f.Status, f.Evidence = StatusHit, ev
		f.about(*hit)
		f.Summary = fmt.Sprintf("KV-cache wall: the server %s from %s, at or before the TPOT knee at %s. The scheduler admitted more sequences than it had cache for, or stopped admitting for want of cache: a memory problem.",
			kvWhat(*hit, obs, set), hit.Load, levelLoad(levels, knees.TPOTKneeLevel))
		if obs.logEngine == "node-llama-cpp" {
			f.Summary += " (The test engine's KV wall is its own admission budget of tokens across sequences, not GPU memory.)"
		}
	case hit != nil:
		f.Status, f.Evidence = StatusClear, ev
		f.about(*hit)
		f.Summary = fmt.Sprintf("the server %s from %s, but TPOT did not bend: the KV cache is tight, not yet a wall", kvWhat(*hit, obs, set), hit.Load)
	default:
		f.Status = StatusClear
		f.Summary = "no preemptions and no full KV cache at or before the knee"
		if !kvObservable(obs) {
			f.Status = StatusUnknown
			f.Summary = "the log and metrics carry neither preemptions nor KV cache usage"
			f.Missing = []string{"a server log or metrics that report preemptions"}
			break
		}
		// A KV wall past the knee is a second wall: report it as such.
		if after, aev := kvPressure(levels[len(before):], obs, set); after != nil {
			f.Status, f.Evidence, f.AfterKnee = StatusHit, aev, true
			f.about(*after)
			f.Summary = fmt.Sprintf("KV-cache wall after the knee: from %s the server %s. TPOT had already bent at %s for another reason; this second wall caps the box past it.",
				after.Load, kvWhat(*after, obs, set), levelLoad(levels, knees.TPOTKneeLevel))
		}
	}
	return f
}

// kvPressure returns the first of levels where the server showed KV-cache
// pressure (preemptions, a full cache, or admission stopped for want of
// cache), with the evidence of every such level.
func kvPressure(levels []LevelStats, obs *observations, set Settings) (*LevelStats, []Evidence) {
	var hit *LevelStats
	var ev []Evidence
	for i := range levels {
		l := &levels[i]
		lo := obs.perLevel[l.LevelIndex]
		full := l.Server.KVUsageKnown && l.Server.KVUsageMaxFraction >= set.Diagnosis.KVUsageFull
		capped := admissionCapped(*l, set)
		if l.Server.Preemptions == 0 && len(lo.kvFullLog) == 0 && len(lo.preemptLog) == 0 && !full && !capped {
			continue
		}
		if hit == nil {
			hit = l
		}
		ev = append(ev, capEvidence(lo.preemptLog, set.Diagnosis.MaxEvidenceLines)...)
		ev = append(ev, capEvidence(lo.kvFullLog, set.Diagnosis.MaxEvidenceLines)...)
		if lo.preemptMetric != nil {
			ev = append(ev, *lo.preemptMetric)
		}
		if lo.kvMax != nil {
			ev = append(ev, *lo.kvMax)
		}
		if capped {
			ev = append(ev, Evidence{Source: EvidenceMetric, Concurrency: l.Concurrency, LevelIndex: l.LevelIndex,
				Name: "running requests (max)", Value: l.Server.RunningMax, Unit: "requests",
				Note: fmt.Sprintf("at most %.0f of %d requests ran while up to %.0f waited, with the KV cache %.0f%% full: admission stopped for want of cache",
					l.Server.RunningMax, l.Concurrency, l.Server.WaitingMax, 100*l.Server.KVUsageMaxFraction)})
			if lo.waitingMax != nil {
				ev = append(ev, *lo.waitingMax)
			}
		}
	}
	return hit, ev
}

// admissionCapped reports the KV wall of engines that queue rather than
// preempt when the cache runs out (transformers, vLLM V1 under load):
// fewer requests running than were sent, others waiting, and the cache
// nearly full.
func admissionCapped(l LevelStats, set Settings) bool {
	s := l.Server
	return s.RunningKnown && s.WaitingKnown && s.KVUsageKnown && s.WaitingMax > 0 &&
		s.RunningMax < float64(l.Concurrency) && s.KVUsageMaxFraction >= set.Diagnosis.KVAdmissionFull
}

// kvObservable says whether the run could have shown a KV wall.
func kvObservable(obs *observations) bool {
	if obs.metricHas["preemptions"] || obs.metricHas["kv_usage"] {
		return true
	}
	return obs.hasLog && obs.logEngine != ""
}

func kvWhat(l LevelStats, obs *observations, set Settings) string {
	var parts []string
	if l.Server.Preemptions > 0 {
		parts = append(parts, fmt.Sprintf("preempted %d sequence(s)", l.Server.Preemptions))
	}
	if lo := obs.perLevel[l.LevelIndex]; len(lo.kvFullLog) > 0 {
		parts = append(parts, "ran out of KV cache cells")
	}
	if l.Server.KVUsageKnown && l.Server.KVUsageMaxFraction >= set.Diagnosis.KVUsageFull {
		parts = append(parts, fmt.Sprintf("filled its KV cache to %.0f%%", 100*l.Server.KVUsageMaxFraction))
	}
	if admissionCapped(l, set) {
		capped := fmt.Sprintf("ran at most %.0f of %d requests while up to %.0f waited", l.Server.RunningMax, l.Concurrency, l.Server.WaitingMax)
		if l.Server.KVUsageMaxFraction < set.Diagnosis.KVUsageFull { // else the cache's fill is already named
			capped += fmt.Sprintf(", its KV cache %.0f%% full", 100*l.Server.KVUsageMaxFraction)
		}
		parts = append(parts, capped)
	}
	if len(parts) > 0 {
		return strings.Join(parts, " and ")
	}
	return "showed KV cache pressure"
}

func checkCompute(levels []LevelStats, knees Knees, obs *observations, kv Finding, decode *DecodeRoofline, set Settings) Finding {
	f := Finding{Check: WallCompute, LevelIndex: -1}
	kp := levelPos(levels, knees.TPOTKneeLevel)
	if kp < 0 {
		f.Status, f.Summary = StatusNotApplicable, "TPOT did not bend"
		return f
	}
	knee := levels[kp]
	f.about(knee)
	if kv.Status == StatusHit && !kv.AfterKnee {
		f.Status, f.Summary = StatusClear, "the log is not clean: KV-cache pressure explains the knee"
		return f
	}
	if kv.Status == StatusUnknown {
		f.Missing = append(f.Missing, kv.Missing...)
	}
	if decode != nil && decode.Ridge.Sentence != "" {
		f.Evidence = append(f.Evidence, Evidence{Source: EvidenceLatency, Concurrency: knee.Concurrency, LevelIndex: knee.LevelIndex,
			Name: "intensity at the knee", Value: decode.Ridge.IntensityFLOPPerByte, Unit: "FLOP/byte", Note: decode.Ridge.Sentence})
	}
	if lo := obs.perLevel[knee.LevelIndex]; lo != nil && lo.gpuUtil != nil {
		f.Evidence = append(f.Evidence, *lo.gpuUtil)
	}
	f.Evidence = append(f.Evidence, tpotEvidence(knee, knees, levelLoad(levels, knees.BaselineLevel)))
	if !knee.Server.GPUKnown {
		f.Status = StatusUnknown
		f.Missing = append(f.Missing, missingGPU)
		f.Summary = fmt.Sprintf("TPOT rose at %s with a clean log, but GPU utilization was not recorded", knee.Load)
		return f
	}
	if len(f.Missing) > 0 {
		f.Status = StatusUnknown
		f.Summary = fmt.Sprintf("GPU %.0f%% busy at the knee %s, but without a log or metrics the KV cache cannot be ruled out", knee.Server.GPUUtilMeanPct, knee.Load)
		return f
	}
	if knee.Server.GPUUtilMeanPct >= set.Diagnosis.GPUUtilBusyPct {
		f.Status = StatusHit
		if decode != nil && decode.Ridge.Verdict == RidgeKneeBefore {
			// NVML's utilization is the share of time any kernel runs, not
			// how much of the chip works: a step far below the ridge can keep
			// it near 100% while the card does a fraction of what it could.
			f.Summary = fmt.Sprintf("Compute knee, by the seed's test: TPOT rose at %s with a clean log and the GPU %.0f%% busy. But the card is busy, not saturated: %s NVML counts the time any kernel runs, not how much of the chip works, so the engine's per-step work (kernel launches, scheduling, prefill interleaved with decode) is the limit, not the silicon.",
				knee.Load, knee.Server.GPUUtilMeanPct, decode.Ridge.Sentence)
			return f
		}
		f.Summary = fmt.Sprintf("Compute knee: TPOT rose at %s with a clean log and the GPU %.0f%% busy. The card is fully used; nothing to fix.", knee.Load, knee.Server.GPUUtilMeanPct)
		if decode != nil && decode.Ridge.Verdict != "" && decode.Ridge.Verdict != RidgeAgree {
			f.Summary += " But the knee does not sit at the probe's ridge: " + decode.Ridge.Sentence
		}
		return f
	}
	f.Status = StatusClear
	f.Summary = fmt.Sprintf("the GPU was only %.0f%% busy at the knee %s (below %.0f%%): not the compute wall", knee.Server.GPUUtilMeanPct, knee.Load, set.Diagnosis.GPUUtilBusyPct)
	return f
}

func tpotEvidence(l LevelStats, knees Knees, baseline string) Evidence {
	return Evidence{Source: EvidenceLatency, Concurrency: l.Concurrency, LevelIndex: l.LevelIndex, Name: "p50 TPOT", Value: l.TPOT.P50S, Unit: "s",
		Note: fmt.Sprintf("p50 TPOT %s at %s, %.2f× the %s at %s", fmtSeconds(l.TPOT.P50S), l.Load, l.TPOT.P50S/knees.BaselineTPOTP50S, fmtSeconds(knees.BaselineTPOTP50S), baseline)}
}

// checkQueueing looks for p99 TTFT pulling away from p50 while TPOT is
// flat: a level in the flat region whose p99/p50 TTFT is at least the
// threshold and higher than at every lower level.
func checkQueueing(levels []LevelStats, knees Knees, obs *observations, set Settings) Finding {
	f := Finding{Check: WallQueueing, Fixes: queueFixes, LevelIndex: -1}
	ratioMax := 0.0
	threshold := set.Diagnosis.QueueTTFTRatio
	flatTo := levelPos(levels, knees.FlatToLevel)
	hitPos := -1
	var ev []Evidence
	unreliable := 0
	for i, l := range levels {
		if l.TTFTP99OverP50 <= 0 {
			continue
		}
		// Below stats.MinSamples(99) the "p99" is the sample maximum: one
		// slow request would read as a queue. Such levels cannot show it.
		if !reliableP99(l.TTFT) {
			unreliable++
			continue
		}
		flat := flatTo < 0 || i <= flatTo
		r := l.TTFTP99OverP50
		if flat && r >= threshold && r > ratioMax && ratioMax > 0 {
			if hitPos < 0 {
				hitPos = i
			}
			ev = append(ev, Evidence{Source: EvidenceLatency, Concurrency: l.Concurrency, LevelIndex: l.LevelIndex, Name: "p99/p50 TTFT", Value: r,
				Note: fmt.Sprintf("TTFT p99 %s vs p50 %s (%.1f×) at %s, up from at most %.1f× below", fmtSeconds(l.TTFT.P99S), fmtSeconds(l.TTFT.P50S), r, l.Load, ratioMax)})
			if lo := obs.perLevel[l.LevelIndex]; lo != nil && lo.waitingMax != nil && lo.waitingMax.Value > 0 {
				ev = append(ev, *lo.waitingMax)
			}
		}
		ratioMax = max(ratioMax, r)
	}
	if ratioMax == 0 && unreliable > 0 {
		f.Status = StatusUnknown
		f.Summary = fmt.Sprintf("no level has enough requests for a p99 TTFT (%d needed per level), so a growing tail cannot be told from one slow request", stats.MinSamples(99))
		f.Missing = []string{fmt.Sprintf("at least %d measured requests per level (--requests-per-level)", stats.MinSamples(99))}
		return f
	}
	if ratioMax == 0 {
		f.Status, f.Summary = StatusUnknown, "no level has both a p50 and a p99 TTFT"
		f.Missing = []string{missingPerReqest}
		return f
	}
	if hitPos < 0 {
		f.Status = StatusClear
		f.Summary = fmt.Sprintf("p99 TTFT stayed within %.0f× of p50 while TPOT was flat, or did not grow level over level", threshold)
		return f
	}
	f.Status, f.Evidence = StatusHit, ev
	f.about(levels[hitPos])
	f.Summary = fmt.Sprintf("Queueing: from %s p99 TTFT pulls away from p50 while TPOT is still flat. Requests are waiting to be admitted.", levels[hitPos].Load)
	// Only the server's queue while TPOT was still flat confirms this wall:
	// past the knee a queue can come from the other walls.
	lastFlat := len(levels) - 1
	if flatTo >= hitPos {
		lastFlat = flatTo
	}
	waitingSeen := false
	waitingKnown := false
	for _, l := range levels[hitPos : lastFlat+1] {
		if l.Server.WaitingKnown {
			waitingKnown = true
			waitingSeen = waitingSeen || l.Server.WaitingMax > 0
		}
	}
	switch {
	case waitingSeen:
		f.Summary += " The server's own queue confirms it."
	case waitingKnown:
		f.Summary += " The server reported no waiting requests, so the queue is in front of the engine (HTTP server, proxy) or in the client."
	default:
		f.Missing = []string{"waiting-request counts (server metrics or a log with queue stats)"}
		f.Summary += " (Client numbers only: the run has no server queue depth to confirm it.)"
	}
	return f
}

func checkClient(levels []LevelStats, knees Knees, obs *observations, set Settings) Finding {
	f := Finding{Check: WallClientBound, Fixes: clientFixes, LevelIndex: -1}
	if !obs.hasClient {
		f.Status, f.Summary, f.Missing = StatusUnknown, "the run has no client self-check", []string{missingClient}
		return f
	}
	hitPos := -1
	var ev []Evidence
	for i, l := range levels {
		if !l.Client.Known {
			continue
		}
		lo := obs.perLevel[l.LevelIndex]
		busy := l.Client.CPUBusyFraction >= set.Diagnosis.ClientCPUBusy
		lag := l.Client.SendLagMaxS > sendLagLimit(l, set)
		if !busy && !lag {
			continue
		}
		if hitPos < 0 {
			hitPos = i
		}
		if busy && lo.clientCPU != nil {
			ev = append(ev, *lo.clientCPU)
		}
		if lag && lo.clientLag != nil {
			ev = append(ev, *lo.clientLag)
		}
	}
	if hitPos < 0 {
		f.Status = StatusClear
		f.Summary = fmt.Sprintf("the load generator stayed below %.0f%% CPU and %s send lag at every level", 100*set.Diagnosis.ClientCPUBusy, fmtSeconds(set.Diagnosis.ClientSendLagS))
		return f
	}
	hit := levels[hitPos]
	f.about(hit)
	f.Evidence = ev
	if kp := levelPos(levels, knees.TPOTKneeLevel); kp >= 0 && hitPos > kp {
		f.Status = StatusClear
		f.Summary = fmt.Sprintf("the load generator saturated from %s, after the TPOT knee at %s: levels from %s measure the client as much as the server", hit.Load, levels[kp].Load, hit.Load)
		return f
	}
	f.Status = StatusHit
	f.Summary = fmt.Sprintf("Client-bound: from %s the load generator itself was the bottleneck (CPU or send lag past its limit), so the numbers there measure the client, not the server.", hit.Load)
	return f
}

func capEvidence(ev []Evidence, n int) []Evidence {
	if n > 0 && len(ev) > n {
		return ev[:n]
	}
	return ev
}

func appendUnique(dst []string, xs ...string) []string {
	for _, x := range xs {
		found := false
		for _, d := range dst {
			if d == x {
				found = true
			}
		}
		if !found {
			dst = append(dst, x)
		}
	}
	return dst
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// reliableP99 reports whether a latency's p99 rests on enough samples to
// be a tail estimate rather than the sample maximum.
func reliableP99(l *Latency) bool {
	if l == nil {
		return false
	}
	for _, q := range l.Percentiles {
		if q.Percentile == 99 {
			return q.Reliable
		}
	}
	return false
}

// sendLagLimit is the send lag above which the client fell behind, by the
// rule the sweep's warning uses too (clientbound.LagLimitS).
func sendLagLimit(l LevelStats, set Settings) float64 {
	return clientbound.LagLimitS(clientbound.Thresholds{SendLagS: set.Diagnosis.ClientSendLagS},
		clientbound.Level{OpenLoop: l.RateRPS > 0, Concurrency: l.Concurrency, Requests: int64(l.Requests), ToNS: int64(l.WindowS * 1e9)})
}
