// Package render turns the analyzer's report model into Markdown and a
// self-contained HTML file. It computes nothing: every number comes from
// the model, formatted with one display scale per quantity. Both outputs
// are made from one view of the model (view.go), so they say the same.
package render

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/rundir"
	"github.com/headroom-llm/headroom/templates"
)

var mdFuncs = template.FuncMap{
	"md":        mdLine,
	"para":      mdPara,
	"cell":      mdCell,
	"code":      mdCode,
	"codeblock": mdCodeBlock,
	"tablemd":   mdTable,
	"inc":       func(i int) int { return i + 1 },
}

var mdTemplate = template.Must(template.New("report.md.tmpl").Funcs(mdFuncs).ParseFS(templates.FS, "report.md.tmpl"))

// Markdown writes the report as Markdown.
func Markdown(w io.Writer, rep *analyze.Report) error {
	p, err := buildPage(rep)
	if err != nil {
		return err
	}
	return markdown(w, p)
}

func markdown(w io.Writer, p *page) error {
	var b bytes.Buffer
	if err := mdTemplate.Execute(&b, p); err != nil {
		return err
	}
	_, err := w.Write(squeezeBlankLines(b.Bytes()))
	return err
}

// squeezeBlankLines leaves at most one blank line in a row, outside fenced
// code blocks, so the template can be laid out for reading.
func squeezeBlankLines(src []byte) []byte {
	var out bytes.Buffer
	blank, inFence := 0, false
	for _, line := range strings.SplitAfter(string(src), "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "```") {
			inFence = !inFence
		}
		if t == "" && !inFence {
			blank++
			if blank > 1 {
				continue
			}
		} else {
			blank = 0
		}
		out.WriteString(strings.TrimRight(line, " \t\n") + "\n")
	}
	return bytes.TrimLeft(out.Bytes(), "\n")
}

// mdEscaper escapes text so Markdown shows it literally: no emphasis, no
// links, no headings, no raw HTML (a model name of "<script>" stays text).
var mdEscaper = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`,
	"<", "&lt;", "|", `\|`, "#", `\#`,
	"~", `\~`, "!", `\!`,
)

// mdLine escapes text for use inside a line of Markdown. ">" and "&" stay
// as they are for the reader of the raw file: ">" is harmless inside a
// line, and "&" only matters where it would start an entity.
func mdLine(s string) string {
	s = strings.ReplaceAll(s, "\r", "")
	s = strings.ReplaceAll(s, "\n", " ")
	s = entityStart.ReplaceAllString(s, "&amp;$1")
	return mdEscaper.Replace(s)
}

// entityStart matches an "&" that Markdown would read as an entity.
var entityStart = regexp.MustCompile(`&(#?[A-Za-z0-9]+;)`)

// mdPara escapes text that starts a line (a paragraph, a quote).
func mdPara(s string) string {
	s = mdLine(s)
	// A line starting with "-", "+", digits and "." or ">" would become a
	// list or a quote; a leading backslash keeps it text.
	if t := strings.TrimLeft(s, " "); t != "" && strings.ContainsRune("-+>=", rune(t[0])) {
		s = `\` + t
	} else if m := orderedListStart.FindStringIndex(t); m != nil {
		s = t[:m[1]-1] + `\` + t[m[1]-1:]
	}
	return s
}

var orderedListStart = regexp.MustCompile(`^[0-9]{1,9}[.)]`)

// mdCell escapes text for a Markdown table cell.
func mdCell(s string) string { return mdLine(s) }

// mdCode writes s as an inline code span: a backtick fence longer than
// any run of backticks inside, and "|" escaped so it works in table cells.
func mdCode(s string) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r", ""), "\n", " ")
	fence := strings.Repeat("`", longestRun(s, '`')+1)
	pad := ""
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		pad = " "
	}
	return fence + pad + strings.ReplaceAll(s, "|", `\|`) + pad + fence
}

// mdCodeBlock writes log lines as a fenced code block, each line prefixed
// with its line number, indented by indent (to sit in a list item).
func mdCodeBlock(lines []logLine, indent string) string {
	var body strings.Builder
	width := 0
	for _, l := range lines {
		width = max(width, len(fmt.Sprint(l.N)))
	}
	for _, l := range lines {
		text := strings.ReplaceAll(l.Text, "\r", "")
		fmt.Fprintf(&body, "%s%*d | %s\n", indent, width, l.N, text)
	}
	fence := strings.Repeat("`", max(3, longestRun(body.String(), '`')+1))
	return indent + fence + "text\n" + body.String() + indent + fence
}

func longestRun(s string, c byte) int {
	best, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			run++
			best = max(best, run)
		} else {
			run = 0
		}
	}
	return best
}

// mdTable writes a table; a table without a head gets an empty one (GFM
// needs a header row).
func mdTable(t table) string {
	var b strings.Builder
	cols := len(t.Head)
	b.WriteString("|")
	for _, h := range t.Head {
		b.WriteString(" " + mdCell(h) + " |")
	}
	b.WriteString("\n|")
	for i := 0; i < cols; i++ {
		if t.Right[i] {
			b.WriteString("---:|")
		} else {
			b.WriteString("---|")
		}
	}
	for _, r := range t.Rows {
		b.WriteString("\n|")
		for _, c := range r {
			b.WriteString(" " + mdCell(c) + " |")
		}
	}
	return b.String()
}

// Files writes report.md and report.html into dir, per format ("md",
// "html" or "both"), and returns the paths written.
func Files(dir string, rep *analyze.Report, format string) ([]string, error) {
	p, err := buildPage(rep)
	if err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	var out []string
	if format == "md" || format == "both" {
		var md bytes.Buffer
		if err := markdown(&md, p); err != nil {
			return nil, fmt.Errorf("render markdown: %w", err)
		}
		path := filepath.Join(dir, "report.md")
		if err := rundir.WriteOutput(path, md.Bytes()); err != nil {
			return nil, err
		}
		out = append(out, path)
	}
	if format == "html" || format == "both" {
		var h bytes.Buffer
		if err := writeHTML(&h, p); err != nil {
			return nil, fmt.Errorf("render html: %w", err)
		}
		path := filepath.Join(dir, "report.html")
		if err := rundir.WriteOutput(path, h.Bytes()); err != nil {
			return nil, err
		}
		out = append(out, path)
	}
	return out, nil
}
