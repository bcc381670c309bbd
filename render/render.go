// Package render turns the analyzer's report model into Markdown and a
// self-contained HTML file. It computes nothing: every number comes from
// the model, formatted with one display scale per quantity.
package render

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/template"
	"time"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/templates"
)

var funcs = template.FuncMap{
	"inc":     func(i int) int { return i + 1 },
	"time":    func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") },
	"cell":    mdCell,
	"line":    mdLine,
	"join":    func(xs []string, sep string) string { return mdLine(strings.Join(xs, sep)) },
	"tflops":  func(v float64) string { return fmt.Sprintf("%.1f", v/1e12) },
	"gbps":    func(v float64) string { return fmt.Sprintf("%.0f", v/1e9) },
	"pct":     func(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) },
	"us":      func(s float64) string { return fmt.Sprintf("%.1f", s*1e6) },
	"runName": runName,
}

var mdTemplate = template.Must(template.New("report.md.tmpl").Funcs(funcs).ParseFS(templates.FS, "report.md.tmpl"))

// Markdown writes the report as Markdown.
func Markdown(w io.Writer, rep *analyze.Report) error {
	return mdTemplate.Execute(w, rep)
}

func runName(r analyze.RunAnalysis) string {
	if r.Manifest != nil && r.Manifest.Label != "" {
		return mdLine(r.Manifest.Label)
	}
	return mdLine(filepath.Base(r.Dir))
}

// mdEscaper escapes text so Markdown shows it literally: no emphasis, no
// links, no raw HTML (a model name of "<script>" stays text).
var mdEscaper = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`,
	"<", "&lt;", ">", "&gt;", "&", "&amp;", "|", `\|`, "#", `\#`,
)

// mdLine escapes text for one line of Markdown.
func mdLine(s string) string {
	s = strings.ReplaceAll(s, "\r", "")
	s = strings.ReplaceAll(s, "\n", " ")
	return mdEscaper.Replace(s)
}

// mdCell escapes text for a Markdown table cell.
func mdCell(s string) string { return mdLine(s) }

// Files writes report.md and report.html into dir, per format ("md",
// "html" or "both"), and returns the paths written.
func Files(dir string, rep *analyze.Report, format string) ([]string, error) {
	var md bytes.Buffer
	if err := Markdown(&md, rep); err != nil {
		return nil, fmt.Errorf("render markdown: %w", err)
	}
	var out []string
	if format == "md" || format == "both" {
		p := filepath.Join(dir, "report.md")
		if err := writeFile(p, md.Bytes()); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	if format == "html" || format == "both" {
		var h bytes.Buffer
		if err := HTML(&h, rep, md.Bytes()); err != nil {
			return nil, fmt.Errorf("render html: %w", err)
		}
		p := filepath.Join(dir, "report.html")
		if err := writeFile(p, h.Bytes()); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}
