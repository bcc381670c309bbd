package render

import (
	"fmt"
	"strconv"

	"github.com/headroom-llm/headroom/analyze"
)

// loadAxis is what a sweep's levels are plotted and named by: concurrency
// in a closed loop, arrival rate in an open loop (the analyzer's
// Knees.Axis). In an open loop the concurrency fields hold each level's
// concurrency cap.
type loadAxis struct{ rate bool }

func axisOf(sw *analyze.SweepAnalysis) loadAxis {
	return loadAxis{rate: sw.Knees.Axis == analyze.AxisRate}
}

// x is a level's place on the axis.
func (a loadAxis) x(l analyze.LevelStats) float64 {
	if a.rate {
		return l.RateRPS
	}
	return float64(l.Concurrency)
}

// title names the axis of the charts.
func (a loadAxis) title() string {
	if a.rate {
		return "Arrival rate (req/s, log₂)"
	}
	return "Concurrency (log₂)"
}

// head names the load column of the tables.
func (a loadAxis) head() string {
	if a.rate {
		return "Rate (req/s)"
	}
	return "Concurrency"
}

// cell is a level's load in a table.
func (a loadAxis) cell(conc int, rate float64) string {
	if a.rate {
		return sig(rate)
	}
	return integer(conc)
}

// name is a level's load in a sentence: "concurrency 8" or "4.00 req/s".
func (a loadAxis) name(conc int, rate float64) string {
	if a.rate {
		return sig(rate) + " req/s"
	}
	return fmt.Sprintf("concurrency %d", conc)
}

// mark is a level's place for a chart marker; nil when there is no such
// level (the analyzer's level index is -1).
func (a loadAxis) mark(level, conc int, rate float64) interface{} {
	if level < 0 {
		return nil
	}
	if a.rate {
		return round(rate)
	}
	return conc
}

// levelByIndex finds a level by the analyzer's level index.
func levelByIndex(sw *analyze.SweepAnalysis, index int) *analyze.LevelStats {
	for i := range sw.Levels {
		if sw.Levels[i].LevelIndex == index {
			return &sw.Levels[i]
		}
	}
	return nil
}

// loadName names a load on its axis: "c=8", "4 req/s", or "8 in the
// engine" for a log-only window; "" for no load.
func loadName(l analyze.LoadKey) string {
	switch {
	case l == analyze.LoadKey{}:
		return ""
	case l.Axis == analyze.AxisRate:
		return sig(l.RateRPS) + " req/s"
	case l.Axis == analyze.AxisInEngine:
		return integer(l.Concurrency) + " in the engine"
	}
	return "c=" + strconv.Itoa(l.Concurrency)
}

// gpuCount names the GPUs of a run in short: "NVIDIA H200", "2× NVIDIA H200".
func gpuCount(name string, n int) string {
	if n > 1 && name != "" {
		return integer(n) + "× " + name
	}
	return name
}
