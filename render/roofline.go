package render

import (
	"fmt"
	"html/template"
	"sort"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/headroom-llm/headroom/analyze"
)

// rooflineRead says how to read the roofline.
const rooflineRead = "Achieved FLOP/s of one GEMM shape against its arithmetic intensity, log-log. The points climb " +
	"the bandwidth slope (memory-bound) and bend flat at the measured peak (compute-bound); the bend is " +
	"the ridge. Decode at small batches sits far left: it reads every weight once per step, so extra " +
	"concurrent users are nearly free until the batch approaches the ridge."

func rooflineCaption(rl *analyze.Roofline, dec *analyze.DecodeRoofline) string {
	c := fmt.Sprintf("Roofline of %s: (B,%d) @ (%d,%d) %s GEMM, attainable = min(peak, intensity × bandwidth).", orMissing(rl.GPU, "the GPU"), rl.K, rl.K, rl.N, rl.DType)
	if dec != nil && len(dec.Levels) > 0 {
		c += " Diamonds: decode as measured at each level of the sweep (achieved FLOP/s at its intensity)."
	}
	return c
}

// probeSection is a probe run's numbers, shown once in the appendix: the
// roofline is on page one.
func probeSection(id string, r *analyze.RunAnalysis, rl *analyze.Roofline, several bool) section {
	s := section{ID: id, Title: "Hardware ceiling (probe)", Read: rooflineRead}
	if several {
		s.Title += ": " + runLabel(r)
	}
	// A probe run has no details of its own: its warnings are said here.
	for _, w := range r.Warnings {
		s.Notes = append(s.Notes, "Warning: "+w)
	}
	for _, n := range r.Notes {
		s.Notes = append(s.Notes, "Warning: "+noteText(n))
	}
	knee := "not reached in the sweep"
	if rl.KneeBatch > 0 {
		knee = fmt.Sprintf("B=%d", rl.KneeBatch)
	}
	s.Facts = []fact{
		{Label: "GPU", Value: orMissing(rl.GPU, "not recorded")},
		{Label: "Peak " + rl.DType + " GEMM", Value: tflops(rl.PeakFLOPPerS), Note: fmt.Sprintf("at B=%d", rl.PeakBatch)},
		{Label: "Memory bandwidth", Value: gbps(rl.BandwidthBytesPerS), Note: rl.BandwidthMethod},
		{Label: "Ridge point", Value: sig(rl.RidgeFLOPPerByte) + " FLOP/byte", Note: "peak ÷ bandwidth"},
		{Label: fmt.Sprintf("%.0f%% of peak reached at", 100*analyze.KneeFraction), Value: knee},
	}
	if f := rl.FP8; f != nil {
		s.Facts = append(s.Facts, fact{Label: "Peak " + f.DType + " GEMM", Value: tflops(f.PeakFLOPPerS),
			Note: fmt.Sprintf("at B=%d, ridge %s FLOP/byte", f.PeakBatch, sig(f.RidgeFLOPPerByte))})
	}
	t := table{
		Caption: fmt.Sprintf("Measured points: shape (B,%d) @ (%d,%d); intensity = FLOPs ÷ bytes moved.", rl.K, rl.K, rl.N),
		Head:    []string{"B", "Intensity (FLOP/byte)", "TFLOP/s", "% of peak", "Time per call", "Roofline bound (TFLOP/s)"},
		Right:   []bool{true, true, true, true, true, true},
		Fold:    []bool{false, false, false, false, true, true},
	}
	var times []float64
	for _, p := range rl.Points {
		times = append(times, p.TimeS)
	}
	unit := durationScale(times...)
	t.Head[4] += " (" + unit.name + ")"
	for _, p := range rl.Points {
		t.Rows = append(t.Rows, []string{
			integer(p.Batch), sig(p.Intensity), sig(p.FLOPPerS / 1e12), percent(p.FractionPeak),
			unit.in(p.TimeS), sig(p.AttainableFLOPPerS / 1e12),
		})
	}
	t.normalize()
	s.Tables = append(s.Tables, splitRows(t, 10)...)
	if len(rl.Bandwidths) > 1 {
		bt := table{Caption: fmt.Sprintf("Every bandwidth measurement (%d; the best is the slope).", len(rl.Bandwidths)), Head: []string{"Method", "Buffer", "GB/s"}, Right: []bool{false, true, true}, Collapsed: true}
		for _, b := range rl.Bandwidths {
			bt.Rows = append(bt.Rows, []string{b.Method, bytesIEC(b.BufferBytes), thousands(b.BytesPerS/1e9, 0)})
		}
		s.Tables = append(s.Tables, bt)
	}
	if t, ok := stepFloorTable(rl); ok {
		s.Tables = append(s.Tables, t)
	}
	if !rl.Validated {
		s.Notes = append(s.Notes, "The GEMM results were not checked against a reference: a wrong kernel would still time.")
	}
	if rl.Throttled {
		s.Notes = append(s.Notes, "The GPU throttled during the probe: peak and bandwidth are lower than the card can do.")
	}
	if rl.ClocksBelowBase {
		s.Notes = append(s.Notes, "The GPU ran below its base clock during the probe, with no power or thermal reason (clocks locked low?): peak and bandwidth are lower than the card can do.")
	}
	if rl.Busy {
		s.Notes = append(s.Notes, "Other processes were using the GPU during the probe: peak and bandwidth may be lower than the card can do.")
	}
	return s
}

// stepFloorTable is the measured floor of the model's decode step: its own
// weight GEMMs, timed by the probe at each batch and dtype (probe
// --model-config), folded like the bandwidth points.
func stepFloorTable(rl *analyze.Roofline) (table, bool) {
	if len(rl.StepFloors) == 0 {
		return table{}, false
	}
	var times []float64
	for _, f := range rl.StepFloors {
		times = append(times, f.GEMMSeconds)
	}
	u := durationScale(times...)
	t := table{
		Caption: fmt.Sprintf("The decode step's weight GEMMs of %s (%d shapes, each counted as often as a step runs it), at each batch; attention not included.",
			orMissing(rl.FloorModel, "the model"), rl.StepFloors[0].GEMMs),
		Head:      []string{"Batch", "Dtype", "GEMMs (" + u.name + ")", "Weights read", "GB/s"},
		Right:     []bool{true, false, true, true, true},
		Collapsed: true,
	}
	for _, f := range rl.StepFloors {
		t.Rows = append(t.Rows, []string{integer(f.Batch), f.DType, u.in(f.GEMMSeconds), sig(f.WeightBytes/1e9) + " GB", thousands(f.WeightBytes/f.GEMMSeconds/1e9, 0)})
	}
	return t, true
}

// decodeSection is a sweep's roofline gap: the decode ceiling the probe
// predicts at each level against what was measured.
func decodeSection(id string, rep *analyze.Report, r *analyze.RunAnalysis) section {
	s := section{ID: id, Title: "Roofline gap"}
	dec := r.Sweep.Decode
	if dec == nil {
		s.Missing = "Not measured: no probe run was given with this sweep. Run headroom probe on the same GPU and report " +
			"both runs together (headroom report probe.run sweep.run -o out) to see the roofline gap."
		return s
	}
	if probeOf(rep, dec.ProbeRun) == nil {
		s.Sentences = append(s.Sentences, fmt.Sprintf("Probe %s: %s peak, %s, ridge %s FLOP/byte.",
			dec.ProbeRun, tflops(dec.PeakFLOPPerS), gbps(dec.BandwidthBytesPerS), sig(dec.RidgeFLOPPerByte)))
	}
	if rs := ridgeSentence(dec.Ridge); rs != "" {
		// Page one says it for its run.
		s.Sentences = append(s.Sentences, rs)
	}
	if len(dec.Levels) > 0 {
		s.Tables = append(s.Tables, decodeTable(dec))
	}
	if t, ok := gapSplitTable(dec); ok {
		s.Tables = append(s.Tables, t)
	}
	s.Notes = append(s.Notes, decodeNotes(dec)...)
	return s
}

// rooflineChart draws the measured points, the roofline bound through
// them, the ridge, the 90% knee and, for a sweep, decode at each level.
// The axes start and end at the data. Labels are few and placed where
// nothing else is: the ridge above the roof, left of its corner; the knee
// below its point (the measured points lie on or under the roof); decode
// labels under their diamonds (decode climbs up and right), and only for
// the first level, the TPOT knee and the last.
func rooflineChart(rl *analyze.Roofline, dec *analyze.DecodeRoofline) (template.JS, error) {
	c := charts.NewLine()
	x, _ := valueAxis("Arithmetic intensity (FLOP/byte, log)", "log", 30)
	_, y := valueAxis("TFLOP/s (log)", "log", 44)
	c.SetGlobalOptions(append(baseOpts("64", "24"),
		charts.WithXAxisOpts(x), charts.WithYAxisOpts(y))...)

	var measured []opts.ScatterData
	var bound []opts.LineData
	var xs, ys []float64
	var knee []interface{}
	for _, p := range rl.Points {
		measured = append(measured, opts.ScatterData{Name: fmt.Sprintf("B=%d", p.Batch), Value: xy(p.Intensity, p.FLOPPerS/1e12)})
		bound = append(bound, opts.LineData{Value: xy(p.Intensity, p.AttainableFLOPPerS/1e12)})
		xs, ys = append(xs, p.Intensity), append(ys, p.FLOPPerS/1e12, p.AttainableFLOPPerS/1e12)
		if int(p.Batch) == rl.KneeBatch {
			knee = xy(p.Intensity, p.FLOPPerS/1e12)
		}
	}
	// The bound bends at the ridge: add that corner to the line.
	bound = append(bound, opts.LineData{Value: xy(rl.RidgeFLOPPerByte, rl.PeakFLOPPerS/1e12)})
	sort.SliceStable(bound, func(i, j int) bool {
		return bound[i].Value.([]interface{})[0].(float64) < bound[j].Value.([]interface{})[0].(float64)
	})
	ridgeLabel := "ridge " + sig(rl.RidgeFLOPPerByte) + " FLOP/B"
	c.AddSeries(fmt.Sprintf("Roofline: %s slope, %s peak", gbps(rl.BandwidthBytesPerS), tflops(rl.PeakFLOPPerS)), bound,
		lineStyle(colorBound, "dashed", 2), itemColor(colorBound),
		charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false), Symbol: "none"}),
		charts.WithMarkPointNameCoordItemOpts(opts.MarkPointNameCoordItem{
			Name: ridgeLabel, Coordinate: xy(rl.RidgeFLOPPerByte, rl.PeakFLOPPerS/1e12),
			Symbol: "circle", SymbolSize: 5, ItemStyle: &opts.ItemStyle{Color: colorMark},
			Label: &opts.Label{Show: opts.Bool(true), Position: "top", Align: "right", Color: colorMark, FontSize: markFont, Formatter: "{b}"},
		}),
	)
	measuredOpts := []charts.SeriesOpts{itemColor(colorMeasured), charts.WithScatterChartOpts(opts.ScatterChart{Symbol: "circle", SymbolSize: 8})}
	if knee != nil {
		measuredOpts = append(measuredOpts,
			charts.WithMarkPointNameCoordItemOpts(opts.MarkPointNameCoordItem{
				Name: fmt.Sprintf("%.0f%% at B=%d", 100*analyze.KneeFraction, rl.KneeBatch), Coordinate: knee,
				Symbol: "emptyCircle", SymbolSize: 16, ItemStyle: &opts.ItemStyle{Color: colorMark, BorderColor: colorMark},
				Label: &opts.Label{Show: opts.Bool(true), Position: "bottom", Align: "left", Color: colorMark, FontSize: markFont, Formatter: "{b}"},
			}))
	}
	points := charts.NewScatter()
	points.AddSeries("Measured GEMM", measured, measuredOpts...)
	var labelled []int
	if dec != nil && len(dec.Levels) > 0 {
		var decode []opts.ScatterData
		for i, l := range dec.Levels {
			decode = append(decode, opts.ScatterData{Name: fmt.Sprintf("c=%d", l.Concurrency), Value: xy(l.IntensityFLOPPerByte, l.AchievedFLOPPerS/1e12)})
			xs, ys = append(xs, l.IntensityFLOPPerByte), append(ys, l.AchievedFLOPPerS/1e12)
			if i == 0 || i == len(dec.Levels)-1 || l.Concurrency == dec.Ridge.KneeConcurrency {
				labelled = append(labelled, i)
			}
		}
		// The series' own symbol is the diamond, so its legend shows one.
		points.AddSeries("Decode at each level (measured)", decode, itemColor(colorP99),
			charts.WithScatterChartOpts(opts.ScatterChart{Symbol: "diamond", SymbolSize: 11}))
	}
	c.Overlap(points)
	xr, _ := logExtent(xs, 1.25)
	yr, _ := logExtent(append(ys, rl.PeakFLOPPerS/1e12), 1.6)
	return optionJSON(c, func(o map[string]interface{}) {
		// The extents are the data's, not powers of ten: label the powers
		// of ten inside them only.
		noEnds := map[string]interface{}{"color": "#222", "showMinLabel": false, "showMaxLabel": false}
		setAxis(o, "xAxis", map[string]interface{}{"min": xr.Min, "max": xr.Max, "axisLabel": noEnds})
		// Room above the roof for the ridge label, below decode for its.
		setAxis(o, "yAxis", map[string]interface{}{"min": round(yr.Min / 1.6), "max": round(yr.Max * 1.6), "axisLabel": noEnds})
		if list, _ := o["series"].([]interface{}); len(list) > 2 {
			data, _ := list[2].(map[string]interface{})["data"].([]interface{})
			for _, i := range labelled {
				if d, ok := data[i].(map[string]interface{}); ok {
					d["label"] = map[string]interface{}{"show": true, "position": "bottom", "color": colorP99, "fontSize": markFont, "formatter": "{b}"}
				}
			}
		}
	})
}

func orMissing(s, missing string) string {
	if s == "" {
		return missing
	}
	return s
}

// probeOf finds the roofline of the probe run a decode roofline used, when
// that run is in the report.
func probeOf(rep *analyze.Report, dir string) *analyze.Roofline {
	for i := range rep.Runs {
		if rep.Runs[i].Dir == dir && rep.Runs[i].Roofline != nil {
			return rep.Runs[i].Roofline
		}
	}
	return nil
}

// decodeTable is the roofline gap level by level.
func decodeTable(dec *analyze.DecodeRoofline) table {
	var tpots []float64
	for _, l := range dec.Levels {
		tpots = append(tpots, l.PredictedTPOTS, l.MeasuredTPOTP50S)
	}
	u := durationScale(tpots...)
	t := table{
		Caption: "Roofline gap: the decode ceiling the probe predicts for this model at each level, against what was measured.",
		Head: []string{"Concurrency", "Decode batch", "Intensity (FLOP/byte)", "Bound by", "TPOT floor (" + u.name + ")", "TPOT p50 (" + u.name + ")",
			"TPOT ÷ floor", "Ceiling tok/s", "Measured tok/s", "% of ceiling"},
		Right: []bool{true, true, true, false, true, true, true, true, true, true},
		Fold:  []bool{false, true, true, false, false, false, false, true, true, false},
	}
	for _, l := range dec.Levels {
		t.Rows = append(t.Rows, []string{
			integer(l.Concurrency), sig(l.Batch), sig(l.IntensityFLOPPerByte), l.Bound, u.in(l.PredictedTPOTS), orDash(l.MeasuredTPOTP50S, u.in),
			orDash(l.TPOTRatio, sig), sig(l.PredictedOutputTokPerS), orDash(l.MeasuredOutputTokPerS, sig), percent(l.ThroughputFraction),
		})
	}
	return t
}

// gapSplitTable splits the roofline gap into the silicon's share (the
// model's own GEMMs, measured by the probe, against the bandwidth bound) and
// the engine's (measured TPOT against those GEMMs), where the probe timed
// the model's GEMMs.
func gapSplitTable(dec *analyze.DecodeRoofline) (table, bool) {
	var tpots []float64
	for _, l := range dec.Levels {
		if l.MeasuredFloorS > 0 {
			tpots = append(tpots, l.PredictedTPOTS, l.MeasuredFloorS, l.MeasuredTPOTP50S)
		}
	}
	if len(tpots) == 0 {
		return table{}, false
	}
	u := durationScale(tpots...)
	t := table{
		Caption: "Whose gap: the silicon's share (the measured floor, the model's own weight GEMMs timed by the probe in " + dec.FloorDType +
			" plus the KV-cache reads at the copy bandwidth, against the bandwidth bound) and the engine's (TPOT p50 against that floor); silicon × engine = TPOT ÷ floor.",
		Head: []string{"Concurrency", "Bandwidth bound (" + u.name + ")", "GEMMs measured (" + u.name + ")", "+ KV reads (" + u.name + ")",
			"Measured floor (" + u.name + ")", "TPOT p50 (" + u.name + ")", "Silicon ×", "Engine ×"},
		Right: []bool{true, true, true, true, true, true, true, true},
		Fold:  []bool{false, true, true, true, false, true, false, false},
	}
	for _, l := range dec.Levels {
		if l.MeasuredFloorS <= 0 {
			continue
		}
		t.Rows = append(t.Rows, []string{integer(l.Concurrency), u.in(l.PredictedTPOTS), u.in(l.FloorGEMMS), u.in(l.FloorAttentionS),
			u.in(l.MeasuredFloorS), orDash(l.MeasuredTPOTP50S, u.in), sig(l.SiliconFactor), orDash(l.EngineFactor, sig)})
	}
	return t, true
}

func decodeNotes(dec *analyze.DecodeRoofline) []string {
	var out []string
	if m := dec.Model; m != nil {
		out = append(out, fmt.Sprintf("Model: %s parameters (%s active per token), %s of weights read per decode step at batch 1, %s of KV cache per token.",
			sigCount(m.TotalParams), sigCount(m.ActiveParamsPerToken), bytesIEC(int64(m.WeightBytesPerStepB1)), bytesIEC(int64(m.KVBytesPerToken))))
	}
	return append(out, noteTexts(dec.Notes)...)
}

// sigCount formats a large count with a suffix: 8.03B, 70.6M.
func sigCount(n float64) string {
	switch {
	case n >= 1e12:
		return sig(n/1e12) + "T"
	case n >= 1e9:
		return sig(n/1e9) + "B"
	case n >= 1e6:
		return sig(n/1e6) + "M"
	case n >= 1e3:
		return sig(n/1e3) + "k"
	}
	return sig(n)
}
