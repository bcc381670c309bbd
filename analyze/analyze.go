package analyze

import (
	"time"

	"github.com/headroom-llm/headroom/internal/buildinfo"
)

// Options are the analysis settings. The zero value is not useful; start
// from Default.
type Options struct {
	// Now stamps the report; tests fix it for deterministic output.
	Now time.Time
}

// Default returns the default analysis settings.
func Default() Options { return Options{Now: time.Now()} }

// Analyze turns loaded runs into the report model.
func Analyze(runs []*Run, opts Options) (*Report, error) {
	rep := &Report{
		Title:           "headroom report",
		GeneratedAt:     opts.Now.UTC(),
		HeadroomVersion: buildinfo.Version(),
	}
	for _, run := range runs {
		ra := RunAnalysis{Dir: run.Dir, Manifest: run.Manifest}
		ra.Context, ra.Missing = runContext(run.Manifest)
		if len(run.GEMM) > 0 {
			rl, err := roofline(run, run.GEMM[0].Device)
			if err != nil {
				return nil, err
			}
			ra.Roofline = rl
		}
		ra.Warnings = append(ra.Warnings, run.Manifest.Warnings...)
		rep.Runs = append(rep.Runs, ra)
	}
	return rep, nil
}
