package analyze

import (
	"fmt"
	"strings"
	"time"

	"github.com/headroom-llm/headroom/rundir"
)

// runContext lists the facts a reader needs next to every number (the
// seed's "report the context" rule) and names the ones the run lacks.
func runContext(m *rundir.Manifest) (items []ContextItem, missing []string) {
	add := func(label, value string) {
		if value != "" {
			items = append(items, ContextItem{label, value})
		}
	}
	need := func(label, value string) {
		if value == "" {
			missing = append(missing, label)
			return
		}
		items = append(items, ContextItem{label, value})
	}
	need("Date", formatTime(m.StartTime))
	add("Run label", m.Label)
	add("Measurements", strings.Join(m.Kinds, ", "))
	if !m.Complete {
		why := "collection did not finish"
		if m.Stopped != nil {
			why += ": " + m.Stopped.Reason
		}
		add("Complete", "no ("+why+")")
	}
	var gpus, drivers, cuda []string
	for _, g := range m.GPUs {
		gpus = append(gpus, fmt.Sprintf("%d: %s", g.Index, g.Name))
		drivers = append(drivers, g.Driver)
		cuda = append(cuda, g.CUDAVersion)
	}
	if len(m.GPUs) > 0 || m.HasKind(rundir.KindProbe) {
		need("GPU", strings.Join(gpus, "; "))
		need("Driver", uniqueJoin(drivers))
		need("CUDA", uniqueJoin(cuda))
	}
	add("Host", m.Host.Hostname)
	add("CPU", m.Host.CPUModel)
	if e := m.Engine; e != nil || m.HasKind(rundir.KindSweep) {
		if e == nil {
			e = &rundir.Engine{}
		}
		need("Engine", e.Name)
		need("Engine version", e.Version)
		need("Model", e.Model)
		need("Quantization", e.Quantization)
		need("DType", e.DType)
		if e.MaxContextTokens > 0 {
			add("Context length", fmt.Sprintf("%d tokens", e.MaxContextTokens))
		} else {
			missing = append(missing, "Context length")
		}
		if len(e.Flags) > 0 {
			add("Server flags", strings.Join(e.Flags, " "))
		} else {
			missing = append(missing, "Server flags")
		}
		add("Engine notes", e.Description)
	}
	if w := m.Workload; w != nil {
		add("Endpoint", "/v1/"+strings.TrimPrefix(w.Endpoint, "/v1/"))
		add("Prompt tokens", describeDist(w.Prompt))
		add("Output tokens", describeDist(w.Output))
		if !w.FixedOutput {
			add("Output length", "not fixed: "+w.FixedOutputNote)
		}
	}
	if s := m.Source; s != nil {
		add("Imported from", s.Tool+": "+s.File)
		if len(s.Lacks) > 0 {
			add("The source lacks", strings.Join(s.Lacks, "; "))
		}
	}
	add("headroom", m.HeadroomVersion)
	return items, missing
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04 MST")
}

func uniqueJoin(vals []string) string {
	seen := map[string]bool{}
	var out []string
	for _, v := range vals {
		if v != "" && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return strings.Join(out, ", ")
}

func describeDist(d rundir.Dist) string {
	switch d.Kind {
	case "":
		return ""
	case "fixed":
		return fmt.Sprintf("%.0f (fixed)", d.Mean)
	default:
		s := fmt.Sprintf("%s, mean %.0f", d.Kind, d.Mean)
		if d.StdDev > 0 {
			s += fmt.Sprintf(", sd %.0f", d.StdDev)
		}
		if d.Max > 0 {
			s += fmt.Sprintf(", range %d..%d", d.Min, d.Max)
		}
		return s
	}
}
