package render

import (
	"html/template"
	"io"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/templates"
)

// htmlTemplate is report.html.tmpl under html/template, which escapes every
// string from the model for its context: model names, flags, labels and
// log lines stay text.
var htmlTemplate = template.Must(template.New("report.html.tmpl").Funcs(template.FuncMap{"linkText": linkText}).ParseFS(templates.FS, "report.html.tmpl"))

var (
	pageCSS = mustAsset("report.css")
	pageJS  = mustAsset("report.js")
)

func mustAsset(name string) string {
	b, err := templates.FS.ReadFile(name)
	if err != nil {
		panic("templates: " + name + " not embedded: " + err.Error()) // a build mistake, not input
	}
	return string(b)
}

// htmlPage is what report.html.tmpl renders: the view plus the inlined
// assets, which are our own files (never input) and so trusted.
type htmlPage struct {
	*page
	CSS       template.CSS
	EChartsJS template.JS
	PageJS    template.JS
}

// HTML writes the report as one self-contained HTML page: ECharts, the
// page's script and its style are inlined, and it loads nothing from any
// other host.
func HTML(w io.Writer, rep *analyze.Report) error {
	p, err := buildPage(rep)
	if err != nil {
		return err
	}
	return writeHTML(w, p)
}

func writeHTML(w io.Writer, p *page) error {
	return htmlTemplate.Execute(w, htmlPage{
		page:      p,
		CSS:       template.CSS(pageCSS),
		EChartsJS: template.JS(templates.EChartsJS),
		PageJS:    template.JS(pageJS),
	})
}
