package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/render"
)

type predictFlags struct {
	modelConfig, variantConfig, measured, label, jsonOut string
	kvTokens, kvBits, bandwidthGBps, peakTFLOPS          float64
	memoryGB, gpuHourUSD                                 float64
	slots                                                int
}

func newPredictCmd() *cobra.Command {
	var f predictFlags
	cmd := &cobra.Command{
		Use:   "predict PROBE_RUN SWEEP_RUN",
		Short: "Predict a variant's serving curve (another quantization, KV cache, slot cap or GPU) from one measured sweep",
		Long: `predict calibrates on one measured sweep and predicts a variant of it: at
each level the engine's time per decode step beyond the bandwidth bound (its
overhead: launches, scheduling, prefill interleaved with decode, kernels below
copy speed) is taken from the measured run, and the variant's own bound is
added: its weight and KV bytes at the bandwidth, or its FLOPs at the peak. The
variant is another model config (--variant-config: e.g. the same shape
quantized), KV-cache width (--kv-bits) or capacity (--kv-tokens, or
--memory-gb), a slot cap (--slots), or another GPU (--bandwidth-gbps,
--peak-tflops). With --measured, a sweep of the variant, each level's
prediction is set against what was measured, with the error.`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPredict(cmd.OutOrStdout(), args[0], args[1], f)
		},
		SilenceUsage: true,
	}
	fl := cmd.Flags()
	fl.StringVar(&f.modelConfig, "model-config", "", "config.json of the model the measured sweep served (required)")
	fl.StringVar(&f.variantConfig, "variant-config", "", "config.json of the variant's model (default: the measured one)")
	fl.StringVar(&f.measured, "measured", "", "a sweep run of the variant, to compare with")
	fl.StringVar(&f.label, "label", "", "name of the variant in the output")
	fl.Float64Var(&f.kvTokens, "kv-tokens", 0, "the variant's KV cache capacity in tokens (e.g. llama.cpp -c)")
	fl.Float64Var(&f.kvBits, "kv-bits", 0, "the variant's KV-cache element width in bits (16, 8)")
	fl.IntVar(&f.slots, "slots", 0, "the variant's cap on concurrent sequences (llama.cpp -np, vLLM --max-num-seqs)")
	fl.Float64Var(&f.bandwidthGBps, "bandwidth-gbps", 0, "another GPU's copy bandwidth, GB/s (default: the probe's)")
	fl.Float64Var(&f.peakTFLOPS, "peak-tflops", 0, "another GPU's GEMM peak, TFLOP/s (default: the probe's)")
	fl.Float64Var(&f.memoryGB, "memory-gb", 0, "GPU memory for weights and KV cache, GB, to size the KV cache when --kv-tokens is not given")
	fl.Float64Var(&f.gpuHourUSD, "gpu-hour-usd", 0, "price of the serving GPUs for one hour, USD, for $/Mtok")
	fl.StringVar(&f.jsonOut, "json", "", "also write the prediction to this JSON file")
	return cmd
}

func runPredict(w io.Writer, probeDir, sweepDir string, f predictFlags) error {
	if f.modelConfig == "" {
		return usageError{fmt.Errorf("--model-config: the measured sweep's model is needed to calibrate")}
	}
	for name, v := range map[string]float64{"--kv-tokens": f.kvTokens, "--kv-bits": f.kvBits, "--bandwidth-gbps": f.bandwidthGBps,
		"--peak-tflops": f.peakTFLOPS, "--memory-gb": f.memoryGB, "--gpu-hour-usd": f.gpuHourUSD} {
		if v < 0 {
			return usageError{fmt.Errorf("%s %v: must not be negative", name, v)}
		}
	}
	if f.slots < 0 {
		return usageError{fmt.Errorf("--slots %d: must not be negative", f.slots)}
	}
	refModel, err := analyze.ReadModelConfig(f.modelConfig)
	if err != nil {
		return err
	}
	v := analyze.Variant{Label: f.label, KVBits: f.kvBits, KVCapacityTokens: f.kvTokens, Slots: f.slots,
		BandwidthBytesPerS: f.bandwidthGBps * 1e9, PeakFLOPPerS: f.peakTFLOPS * 1e12, MemoryBytes: f.memoryGB * 1e9, GPUHourUSD: f.gpuHourUSD}
	if f.variantConfig != "" {
		if v.Model, err = analyze.ReadModelConfig(f.variantConfig); err != nil {
			return err
		}
	}
	if v.Label == "" {
		v.Label = "variant"
	}
	dirs := []string{probeDir, sweepDir}
	if f.measured != "" {
		dirs = append(dirs, f.measured)
	}
	var runs []*analyze.Run
	for _, d := range dirs {
		r, err := analyze.Load(d)
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	set := analyze.Default()
	set.Model = refModel
	if v.Model != nil && f.measured != "" {
		set.RunModels = map[string]*analyze.ModelSpec{f.measured: v.Model}
	}
	rep, err := analyze.Analyze(runs, set)
	if err != nil {
		return err
	}
	ref := rep.Runs[1].Sweep
	if ref == nil {
		return fmt.Errorf("%s: not a sweep run", sweepDir)
	}
	var meas *analyze.SweepAnalysis
	if f.measured != "" {
		if meas = rep.Runs[2].Sweep; meas == nil {
			return fmt.Errorf("%s: not a sweep run", f.measured)
		}
	}
	p, err := analyze.Predict(sweepDir, ref, refModel, v, f.measured, meas)
	if err != nil {
		return err
	}
	printPrediction(w, p)
	if f.jsonOut != "" {
		data, err := json.MarshalIndent(p, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(f.jsonOut, append(data, '\n'), 0o644); err != nil {
			return err
		}
		fmt.Fprintln(w, "wrote", f.jsonOut)
	}
	return nil
}

func printPrediction(w io.Writer, p *analyze.Prediction) {
	fmt.Fprintf(w, "%s predicted from %s\n", p.Label, p.Reference)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "c\treference TPOT\treference bound\tengine overhead\tvariant bound\tpredicted TPOT\tpredicted tok/s\t$/Mtok\tvariant measured\terror\t\n")
	for _, l := range p.Levels {
		price, measured, errPct := "–", "–", "–"
		if l.USDPerMTok > 0 {
			price = fmt.Sprintf("%.2f", l.USDPerMTok)
		}
		if l.HasMeasured {
			measured, errPct = ms(l.MeasuredTPOTP50S), fmt.Sprintf("%+.1f%%", l.ErrorPct)
		}
		if why := render.OutsideText(l.Outside); why != "" && l.HasMeasured {
			errPct += " (" + why + ")"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%.0f\t%s\t%s\t%s\t\n", l.Concurrency, ms(l.ReferenceTPOTP50S), ms(l.ReferenceBoundS),
			ms(l.EngineOverheadS), ms(l.VariantBoundS), ms(l.PredictedTPOTS), l.PredictedOutTokPer, price, measured, errPct)
	}
	tw.Flush()
	if p.KVCapacityTokens > 0 {
		wall := "not reached in the measured levels"
		if p.KVWallConcurrency > 0 {
			wall = fmt.Sprintf("from c=%d", p.KVWallConcurrency)
		}
		fmt.Fprintf(w, "KV cache %.0f tokens: the KV wall %s\n", p.KVCapacityTokens, wall)
	}
	if p.Measured != "" {
		fmt.Fprintln(w, render.JudgedSentence(p, p.Reference))
	}
	for _, n := range render.PredictionNotes(p) {
		fmt.Fprintln(w, "note:", n)
	}
}

func ms(s float64) string { return fmt.Sprintf("%.2f ms", s*1e3) }
