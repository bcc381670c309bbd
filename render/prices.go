package render

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/headroom-llm/headroom/analyze"
)

// PriceList writes the price table `headroom prices` shows: the hosted
// API prices a report compares with, the GPU-hour presets of --gpu-preset
// and the board powers assumed when no power was measured, each with its
// date and source, a secondary source marked as such.
func PriceList(w io.Writer, t *analyze.PriceTable, source string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Price table: %s.\n", source)
	fmt.Fprintf(&b, "A price read on the vendor's own page is marked \"vendor\"; one quoted by another site, \"secondary\": check it before you quote it.\n")

	tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
	fmt.Fprintf(&b, "\nHosted API prices (USD per million tokens), compared with at the SLO operating point:\n")
	fmt.Fprintln(tw, "MODEL\tPROVIDER\tINPUT\tOUTPUT\tACTIVE PARAMS\tDATE\tSOURCE")
	for _, a := range t.APIs {
		params := "–"
		if a.ActiveParamsB > 0 {
			params = sig(a.ActiveParamsB) + "B"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s %s\n", a.Model, a.Provider, usd(a.InputUSDPerMTok), usd(a.OutputUSDPerMTok), params, a.Date, sourceKind(a.Verified), a.SourceURL)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(&b, "\nGPU-hour presets, for --gpu-preset NAME (USD per GPU per hour):\n")
	fmt.Fprintln(tw, "NAME\tGPU\tPROVIDER\tPRICE\tDATE\tSOURCE")
	for _, g := range t.GPUHours {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s %s\n", g.Name, g.GPU, g.Provider, usd(g.USDPerGPUHour), g.Date, sourceKind(g.Verified), g.SourceURL)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(&b, "\nBoard power assumed when a run measured none and its manifest has no power limit (first match of the GPU's name wins):\n")
	fmt.Fprintln(tw, "GPU NAME CONTAINS\tWATTS\tSOURCE")
	for _, p := range t.GPUPower {
		src := p.Source
		if p.Verified != nil && !*p.Verified {
			src = "secondary: " + src
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Match, sig(p.Watts), src)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(&b, "\nReplace any section with headroom report --prices FILE (headroom prices --yaml writes this table to start from).\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func sourceKind(verified bool) string {
	if verified {
		return "vendor"
	}
	return "secondary"
}
