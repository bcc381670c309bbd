package analyze

import (
	"regexp"
	"strconv"

	"github.com/headroom-llm/headroom/rundir"
)

// clientWarning matches the collector's client-bottleneck warnings
// (collect/sweep ClientBottleneck, present and past wordings) and captures
// the level they name.
var clientWarning = regexp.MustCompile(`^the client (?:fell behind its send schedule|may have been the bottleneck) at .* \(level (\d+)\):`)

// manifestWarnings returns the manifest's warnings less those the analysis
// supersedes: a collector's client-bottleneck warning about a level whose
// client self-check the analyzer judged itself. The analyzer's client
// check applies today's rule to the same samples (a recorded run may carry
// a warning from an older collector's rule), and when the client really
// fell behind its finding carries the evidence; a warning about a level
// without client samples stays, since nothing else says it.
func manifestWarnings(m *rundir.Manifest, sw *SweepAnalysis) []string {
	judged := map[int]bool{}
	if sw != nil {
		for _, l := range sw.Levels {
			if l.Client.Known {
				judged[l.LevelIndex] = true
			}
		}
	}
	var out []string
	for _, w := range m.Warnings {
		if g := clientWarning.FindStringSubmatch(w); g != nil {
			if n, err := strconv.Atoi(g[1]); err == nil && judged[n] {
				continue
			}
		}
		out = append(out, w)
	}
	return out
}
