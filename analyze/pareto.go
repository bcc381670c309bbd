package analyze

import (
	"math"
	"sort"
)

// Pareto places each level of a sweep (or, in a comparison, of several
// runs) by what the box delivers against what one user gets: output
// tokens per second per GPU against output tokens per second per user,
// the trade-off InferenceX charts and `vllm bench sweep plot_pareto`
// draws. A level is on the frontier when no other level is at least as
// fast per user and delivers more per GPU: the operating points worth
// choosing between; every other level is beaten on both axes.
type Pareto struct {
	// GPUs is what the throughput is divided by (the cost section's GPU
	// count: --gpus, else the manifest's GPUs or the log's tensor-parallel
	// size); 0 for a run that used no GPU, whose throughput is then per host.
	GPUs   int           `json:"gpus"`
	Points []ParetoPoint `json:"points"`
}

// ParetoPoint is one level on the Pareto chart.
type ParetoPoint struct {
	// Run is the run's index in a comparison (compare only), Label its
	// label there.
	Run         int     `json:"run,omitempty"`
	Label       string  `json:"label,omitempty"`
	LevelIndex  int     `json:"level_index"`
	Concurrency int     `json:"concurrency"`
	RateRPS     float64 `json:"rate_rps,omitempty"`
	Load        LoadKey `json:"load"`
	// OutputTokPerSPerGPU is the level's output throughput over the GPUs
	// (over 1 for a run without GPU).
	OutputTokPerSPerGPU float64 `json:"output_tok_per_s_per_gpu"`
	// TokPerSPerUser is how fast one user's stream runs: 1 / median TPOT
	// (InferenceX's "interactivity").
	TokPerSPerUser float64 `json:"tok_per_s_per_user"`
	// OutputTokPerSPerConcurrency is vllm bench sweep's tokens per user:
	// output throughput over the concurrency (closed loop; 0 in open loop,
	// where the concurrency is a cap, not the users). It counts the wait
	// for the first token, which 1 / TPOT does not.
	OutputTokPerSPerConcurrency float64 `json:"output_tok_per_s_per_concurrency,omitempty"`
	// Sustained is the level's: only sustained levels can be on the frontier.
	Sustained bool `json:"sustained"`
	Frontier  bool `json:"frontier"`
}

// paretoOf places a sweep's levels; nil when no level has a TPOT and a
// throughput.
func paretoOf(levels []LevelStats, gpus int, mode string) *Pareto {
	p := &Pareto{GPUs: gpus}
	per := float64(max(gpus, 1))
	for _, l := range levels {
		tpot := 0.0
		if l.TPOT != nil {
			tpot, _ = l.TPOT.Quantile(50)
		}
		if tpot <= 0 || l.OutputTokPerS <= 0 {
			continue
		}
		pt := ParetoPoint{
			LevelIndex: l.LevelIndex, Concurrency: l.Concurrency, RateRPS: l.RateRPS, Load: l.Load,
			OutputTokPerSPerGPU: l.OutputTokPerS / per, TokPerSPerUser: 1 / tpot, Sustained: l.Sustained,
		}
		if mode != "open" && l.Concurrency > 0 {
			pt.OutputTokPerSPerConcurrency = l.OutputTokPerS / float64(l.Concurrency)
		}
		p.Points = append(p.Points, pt)
	}
	if len(p.Points) == 0 {
		return nil
	}
	MarkFrontier(p.Points)
	return p
}

// paretoTolerance is how much lower (relatively) a point's throughput per
// GPU may be than a faster-per-user point's and still count as not beaten:
// vllm bench sweep's epsilon, which keeps exact ties.
const paretoTolerance = 1e-9

// MarkFrontier sets Frontier on the sustained points that no other
// sustained point beats: walking from the fastest per user to the slowest,
// a point is on the frontier when it delivers at least as much per GPU as
// every point faster per user (as vllm bench sweep's plot_pareto does).
func MarkFrontier(ps []ParetoPoint) {
	idx := make([]int, 0, len(ps))
	for i := range ps {
		ps[i].Frontier = false
		if ps[i].Sustained {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool {
		pa, pb := ps[idx[a]], ps[idx[b]]
		if pa.TokPerSPerUser != pb.TokPerSPerUser {
			return pa.TokPerSPerUser > pb.TokPerSPerUser
		}
		return pa.OutputTokPerSPerGPU > pb.OutputTokPerSPerGPU
	})
	best := math.Inf(-1)
	for _, i := range idx {
		if y := ps[i].OutputTokPerSPerGPU; y >= best-paretoTolerance*math.Abs(best) {
			ps[i].Frontier = true
			best = max(best, y)
		}
	}
}
