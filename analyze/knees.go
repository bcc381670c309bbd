package analyze

import (
	"math"
	"strconv"

	"github.com/headroom-llm/headroom/stats"
)

// Load axes.
const (
	AxisConcurrency = "concurrency" // closed loop
	AxisRate        = "rate_rps"    // open loop
)

// loadValue is a level's position on the load axis: its concurrency in a
// closed loop, its arrival rate in an open loop.
func loadValue(l LevelStats, axis string) float64 {
	if axis == AxisRate {
		return l.RateRPS
	}
	return float64(l.Concurrency)
}

// AxisInEngine is the load axis of a log-only window: the most requests
// the engine ran at once, read from its log (no client set a load).
const AxisInEngine = "in_engine"

// LoadKey is a level's place on its load axis: the key levels of different
// runs are matched by, and what render names ("c=8", "4 req/s"). Only the
// axis' own value is set, so two levels at the same load are equal:
// Concurrency on AxisConcurrency and AxisInEngine, RateRPS on AxisRate
// (an open-loop level's cap on requests in flight is not part of its load).
type LoadKey struct {
	Axis        string  `json:"axis"`
	Concurrency int     `json:"concurrency,omitempty"`
	RateRPS     float64 `json:"rate_rps,omitempty"`
}

// LoadKeyOf is the load of a level with that concurrency and rate on axis.
func LoadKeyOf(axis string, concurrency int, rateRPS float64) LoadKey {
	if axis == AxisRate {
		return LoadKey{Axis: axis, RateRPS: rateRPS}
	}
	return LoadKey{Axis: axis, Concurrency: concurrency}
}

// ID is the load as the exported tables (the dataset's level_summary,
// runs.parquet's wall_short) write it, "c=8", "4 req/s" or "in_engine=8":
// a stable identifier to filter and join on in SQL, not a sentence (the
// reports name loads in render).
func (l LoadKey) ID() string {
	switch l.Axis {
	case AxisRate:
		return strconv.FormatFloat(l.RateRPS, 'g', 3, 64) + " req/s"
	case AxisInEngine:
		return "in_engine=" + strconv.Itoa(l.Concurrency)
	}
	return "c=" + strconv.Itoa(l.Concurrency)
}

// levelPos is the position of the level with the given LevelIndex in
// levels (sorted by load); -1 when absent.
func levelPos(levels []LevelStats, levelIndex int) int {
	if levelIndex < 0 {
		return -1
	}
	for i, l := range levels {
		if l.LevelIndex == levelIndex {
			return i
		}
	}
	return -1
}

// levelSamples are a level's per-request values the interval decisions
// resample: TPOT and TTFT of successful measured requests (TTFT from the
// intended send time in an open loop). Nil for imported statistics.
type levelSamples struct {
	tpot, ttft []float64
}

// Plateau states.
const (
	PlateauReached    = "reached"    // later levels gain less than the threshold per doubling
	PlateauRising     = "rising"     // the last step still gains significantly: stopped before the ceiling
	PlateauUnresolved = "unresolved" // neither can be told from the noise
	PlateauSaturated  = "saturated"  // open loop: the achieved rate fell below the offered rate
)

// findKnees finds the TPOT knee, the flat region, the throughput plateau
// and the peak over levels sorted by load. The knee is the first level
// where the interval of p50 TPOT over the baseline's clears the factor and
// every higher level stays above it; without per-request data (imports)
// the point estimates decide.
func findKnees(levels []LevelStats, samples map[int]levelSamples, axis string, set Settings) Knees {
	k := Knees{Axis: axis, TPOTKneeFactor: set.TPOTKneeFactor, PlateauGainPerDoubling: set.PlateauGainPerDoubling,
		BaselineLevel: -1, TPOTKneeLevel: -1, FlatToLevel: -1, PlateauLevel: -1, PeakLevel: -1, UnsustainedPeakLevel: -1, SaturatedLevel: -1}
	b := bootstrapOf(set)
	var tp []LevelStats // levels with a p50 TPOT
	for _, l := range levels {
		if l.TPOT != nil && l.TPOT.P50S > 0 {
			tp = append(tp, l)
		}
	}
	if len(tp) > 0 {
		base := tp[0]
		k.BaselineLevel, k.BaselineConcurrency, k.BaselineTPOTP50S = base.LevelIndex, base.Concurrency, base.TPOT.P50S
		k.BaselineIsLowestRate = axis == AxisRate
		k.BaselineNotC1 = axis != AxisRate && base.Concurrency != 1
		k.FlatFromConcurrency = base.Concurrency
		k.Intervals = true
		flatEnded := false
		// stays reports whether every level from position i on keeps its
		// p50 TPOT above the factor: a knee is where TPOT bends for good,
		// not one level slowed by a busy host.
		stays := func(i int) bool {
			for _, l := range tp[i:] {
				if l.TPOT.P50S/base.TPOT.P50S <= set.TPOTKneeFactor {
					return false
				}
			}
			return true
		}
		for i, l := range tp {
			r := l.TPOT.P50S / base.TPOT.P50S
			iv, ok := b.PercentileRatio(samples[base.LevelIndex].tpot, samples[l.LevelIndex].tpot, 50)
			if !ok {
				k.Intervals = false
				iv = stats.Interval{Estimate: r, Low: r, High: r}
			}
			if r > set.TPOTKneeFactor {
				flatEnded = true
			}
			if !flatEnded {
				k.FlatToLevel, k.FlatToConcurrency, k.FlatToRateRPS = l.LevelIndex, l.Concurrency, l.RateRPS
				k.FlatTPOTMaxRatio = math.Max(k.FlatTPOTMaxRatio, r)
			}
			if iv.Low > set.TPOTKneeFactor && stays(i) {
				k.TPOTKneeLevel, k.TPOTKneeConcurrency, k.TPOTKneeRateRPS = l.LevelIndex, l.Concurrency, l.RateRPS
				k.TPOTKneeRatio, k.TPOTKneeRatioLow, k.TPOTKneeRatioHigh = iv.Estimate, iv.Low, iv.High
				break
			}
		}
	}

	// Throughput steps, plateau and peak over levels with a throughput.
	var th []LevelStats
	for _, l := range levels {
		if l.OutputTokPerS > 0 && loadValue(l, axis) > 0 {
			th = append(th, l)
		}
	}
	for i := 1; i < len(th); i++ {
		k.Steps = append(k.Steps, ThroughputStep{
			FromConcurrency: th[i-1].Concurrency, ToConcurrency: th[i].Concurrency,
			FromRateRPS: th[i-1].RateRPS, ToRateRPS: th[i].RateRPS,
			GainPerDoubling: gainPerDoubling(th[i-1], th[i], axis),
		})
	}
	// The plateau is the first level from which every later level gains
	// less than the threshold per doubling: robust to one noisy level.
	for i := 0; i+1 < len(th) && k.PlateauLevel < 0; i++ {
		flat := true
		for j := i + 1; j < len(th); j++ {
			if gainPerDoubling(th[i], th[j], axis) >= set.PlateauGainPerDoubling {
				flat = false
				break
			}
		}
		if flat {
			k.PlateauLevel, k.PlateauConcurrency, k.PlateauRateRPS = th[i].LevelIndex, th[i].Concurrency, th[i].RateRPS
		}
	}
	switch {
	case len(th) < 2:
		k.Plateau = PlateauUnresolved
	case k.PlateauLevel >= 0:
		k.Plateau = PlateauReached
	case significantGain(th[len(th)-2], th[len(th)-1], axis, set.PlateauGainPerDoubling):
		k.Plateau = PlateauRising
	default:
		k.Plateau = PlateauUnresolved
	}
	if axis == AxisRate {
		for _, l := range levels {
			if openLoopSaturated(l) {
				k.SaturatedLevel, k.SaturatedRateRPS = l.LevelIndex, l.RateRPS
				k.Plateau = PlateauSaturated
				break
			}
		}
	}
	raw := -1
	for i, l := range th {
		if raw < 0 || l.OutputTokPerS > th[raw].OutputTokPerS {
			raw = i
		}
		if !l.Sustained {
			continue
		}
		if l.OutputTokPerS > k.PeakOutputTokPerS {
			k.PeakOutputTokPerS, k.PeakLevel, k.PeakConcurrency, k.PeakRateRPS = l.OutputTokPerS, l.LevelIndex, l.Concurrency, l.RateRPS
		}
	}
	if raw >= 0 && th[raw].LevelIndex != k.PeakLevel {
		k.UnsustainedPeakLevel = th[raw].LevelIndex
	}
	return k
}

// significantGain reports whether b's throughput clears a's by at least
// gain per doubling of the load, interval against interval (estimates when
// a level has no interval).
func significantGain(a, b LevelStats, axis string, gain float64) bool {
	d := math.Log2(loadValue(b, axis) / loadValue(a, axis))
	if d <= 0 {
		return false
	}
	aHigh, bLow := a.OutputTokPerS, b.OutputTokPerS
	if iv := a.Confidence.OutputTokPerS; iv != nil {
		aHigh = iv.High
	}
	if iv := b.Confidence.OutputTokPerS; iv != nil {
		bLow = iv.Low
	}
	return aHigh > 0 && bLow >= aHigh*math.Pow(1+gain, d)
}

// gainPerDoubling is the throughput gain from a to b expressed per
// doubling of the load: (Tb/Ta)^(1/log2(xb/xa)) − 1. Levels less than
// minDoubling apart (concurrency 1000 and 1001) say nothing per doubling:
// the exponent would turn any noise into an infinite gain.
func gainPerDoubling(a, b LevelStats, axis string) float64 {
	d := math.Log2(loadValue(b, axis) / loadValue(a, axis))
	if d < minDoubling || a.OutputTokPerS <= 0 {
		return 0
	}
	return math.Pow(b.OutputTokPerS/a.OutputTokPerS, 1/d) - 1
}

// minDoubling is the least load ratio, in doublings (2^(1/16): 4.4%), over
// which a gain per doubling is computed.
const minDoubling = 1.0 / 16

// Open-loop saturation: completions over the measured window against the
// arrivals the offered rate predicts.
const (
	// saturatedRateFraction: achieved below this share of the offered rate
	// is a shortfall worth naming.
	saturatedRateFraction = 0.9
	// saturatedZ: and the shortfall is at least this many standard
	// deviations of a Poisson count, so arrival noise cannot fake it.
	saturatedZ = 3.0
	// saturatedWaitShare: the share of the shortfall a backlog's median
	// wait must reach (a backlog implies half; see openLoopSaturated).
	saturatedWaitShare = 0.25
)

// openLoopSaturated reports whether an open-loop level completed
// significantly fewer requests than its offered rate sends: the server
// could not keep up and a backlog built.
//
// A level of a fixed number of requests (vllm bench serve, guidellm with
// a request limit) also ends with a drain: its window runs to the last
// completion, one latency after the last send, so a short run falls
// short of rate × window with no backlog at all. A backlog is what makes
// requests wait: the shortfall, as time (window − completed ÷ rate), is
// the wait of the last arrival, and the waits grow from zero to it, so
// their median is half of it. A shortfall whose requests did not wait
// (TTFT p50, from the intended send where measured, below a quarter of
// it: half the median a backlog implies) is the drain, not saturation.
func openLoopSaturated(l LevelStats) bool {
	if l.RateRPS <= 0 || l.WindowS <= 0 {
		return false
	}
	want := l.RateRPS * l.WindowS
	got := l.RequestsPerS * l.WindowS
	if got >= saturatedRateFraction*want || (want-got)/math.Sqrt(want) < saturatedZ {
		return false
	}
	shortfallS := l.WindowS - got/l.RateRPS
	ttft := l.TTFTFromIntended
	if ttft == nil {
		ttft = l.TTFT
	}
	return ttft == nil || ttft.P50S >= saturatedWaitShare*shortfallS
}

func bootstrapOf(set Settings) stats.Bootstrap {
	return stats.Bootstrap{Resamples: set.BootstrapResamples, Seed: set.BootstrapSeed, Confidence: set.Confidence}
}
