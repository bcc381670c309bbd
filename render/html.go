package render

import (
	"bytes"
	"html/template"
	"io"
	"os"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"

	"github.com/headroom-llm/headroom/analyze"
)

var htmlPage = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;color:#111;background:#fff;max-width:1100px;margin:2em auto;padding:0 1em;line-height:1.45}
table{border-collapse:collapse;margin:.6em 0}th,td{border:1px solid #bbb;padding:.25em .6em}th{background:#f2f2f2}
td{vertical-align:top}blockquote{border-left:4px solid #c60;margin:.5em 0;padding:.2em .8em;background:#fff6ee}
@media print{body{max-width:none;margin:0}h2{page-break-before:always}}
@page{size:A4 landscape;margin:12mm}
</style></head><body>
{{.Body}}
</body></html>
`))

// HTML writes the report as one self-contained HTML page. It loads nothing
// from any other host.
func HTML(w io.Writer, rep *analyze.Report, markdown []byte) error {
	var body bytes.Buffer
	md := goldmark.New(goldmark.WithExtensions(extension.Table))
	if err := md.Convert(markdown, &body); err != nil {
		return err
	}
	return htmlPage.Execute(w, struct {
		Title string
		// The body is goldmark's output of our own escaped Markdown, with
		// raw HTML disabled (goldmark's default), so it is safe to inline.
		Body template.HTML
	}{rep.Title, template.HTML(body.String())})
}

func writeFile(path string, data []byte) error {
	return os.WriteFile(path, data, 0o644)
}
