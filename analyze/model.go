package analyze

import (
	"time"

	"github.com/headroom-llm/headroom/rundir"
)

// Report is the analyzer's output and the renderer's only input. It is
// also written as analysis.json, so every field is plain data.
type Report struct {
	Title           string        `json:"title"`
	GeneratedAt     time.Time     `json:"generated_at"`
	HeadroomVersion string        `json:"headroom_version"`
	Runs            []RunAnalysis `json:"runs"`
}

// RunAnalysis is the analysis of one run directory.
type RunAnalysis struct {
	Dir      string           `json:"dir"`
	Manifest *rundir.Manifest `json:"manifest"`
	// Context is the run's context as labelled values, in display order;
	// Missing names context a reader would need that the run lacks.
	Context  []ContextItem `json:"context"`
	Missing  []string      `json:"missing_context,omitempty"`
	Roofline *Roofline     `json:"roofline,omitempty"`
	Warnings []string      `json:"warnings,omitempty"`
}

// ContextItem is one labelled fact about the run.
type ContextItem struct {
	Label string `json:"label"`
	Value string `json:"value"`
}
