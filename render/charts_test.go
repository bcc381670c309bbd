package render

import (
	"math"
	"slices"
	"testing"
)

// LTTB keeps the first and last points and the extremes of a dense
// series, in order, and draws n points.
func TestLTTB(t *testing.T) {
	var xs, ys []float64
	for i := range 10000 {
		xs = append(xs, float64(i))
		ys = append(ys, math.Sin(float64(i)/300))
	}
	// One spike and one dip a chart must not lose.
	ys[4321], ys[7777] = 5, -4
	ox, oy := lttb(xs, ys, 400)
	if len(ox) != 400 || len(oy) != 400 {
		t.Fatalf("kept %d points, want 400", len(ox))
	}
	if ox[0] != 0 || ox[len(ox)-1] != 9999 || !slices.IsSorted(ox) {
		t.Errorf("first %v, last %v, sorted %v", ox[0], ox[len(ox)-1], slices.IsSorted(ox))
	}
	if !slices.Contains(oy, 5.0) || !slices.Contains(oy, -4.0) {
		t.Error("the spike or the dip was lost")
	}
	if a, b := lttb(xs[:10], ys[:10], 400); len(a) != 10 || len(b) != 10 {
		t.Error("a short series is not kept whole")
	}
}

// Marks are labelled above the plot so that, at the narrowest width,
// no label meets another or runs over the axis: a mark at the axis'
// start is left-aligned, one at its end right-aligned, close ones stack.
func TestVMarkLineLayout(t *testing.T) {
	x := axisRange{Min: 1, Max: 128, Log: true}
	ml, rows := vmarkLine([]vmark{{X: 1, Label: "operating point"}, {X: 2, Label: "plateau"}, {X: 128, Label: "peak 257"}, {X: 64, Label: "knee"}}, x, colorMark)
	data := ml["data"].([]interface{})
	label := func(i int) map[string]interface{} {
		return data[i].(map[string]interface{})["label"].(map[string]interface{})
	}
	if got := label(0)["align"]; got != "left" {
		t.Errorf("a mark at the axis' start is aligned %v, want left (off the axis labels)", got)
	}
	if got := label(3)["align"]; got != "right" {
		t.Errorf("a mark at the axis' end is aligned %v, want right", got)
	}
	if rows < 2 || label(0)["distance"] == label(1)["distance"] {
		t.Errorf("two close marks share a row: %v and %v (%d rows)", label(0), label(1), rows)
	}
	// Marks at one place share a label.
	ml, _ = vmarkLine([]vmark{{X: 64, Label: "plateau"}, {X: 64, Label: "peak 269"}}, x, colorMark)
	if d := ml["data"].([]interface{}); len(d) != 1 || d[0].(map[string]interface{})["name"] != "plateau, peak 269" {
		t.Errorf("marks at one place: %v", d)
	}
}
