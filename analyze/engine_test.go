package analyze

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/headroom-llm/headroom/analyze/serverlog"
	"github.com/headroom-llm/headroom/rundir"
)

// contextOf returns the run context item with the given key.
func contextOf(ra RunAnalysis, key string) (ContextItem, bool) {
	for _, c := range ra.Context {
		if c.Key == key {
			return c, true
		}
	}
	return ContextItem{}, false
}

// contextText is an item's value as text: its string, its list, or its
// first number.
func contextText(c ContextItem) string {
	switch {
	case c.Value != "" && len(c.Numbers) == 0:
		return c.Value
	case len(c.Values) > 0:
		return strings.Join(c.Values, " ")
	case len(c.Numbers) > 0:
		return fmt.Sprint(c.Numbers[0])
	}
	return c.Value
}

// A sweep against a vLLM server headroom did not start has a bare
// manifest; the real start-up lines of vLLM 0.8.3 (its config line and
// argument dump) fill the gaps, labelled as coming from server.log.
func TestRunContextFromServerLog(t *testing.T) {
	t.Parallel()
	f := kneeSweep(t)
	f.manifest.Engine = nil
	f.manifest.GPUs = []rundir.GPU{{Index: 0, Name: "NVIDIA H100 80GB HBM3", Driver: "570.86.15", CUDAVersion: "12.8"}}
	for _, l := range fixtureLines(t, "vllm-0.8.3-v0-ray-prefixcache.log")[:8] {
		f.log(fakeStart.UnixNano()-1e9, l) // start-up, before the first level
	}
	set := testSettings()
	set.Cost.GPUHourUSD = 2
	rep, err := Analyze([]*Run{f.write()}, set)
	if err != nil {
		t.Fatal(err)
	}
	ra := rep.Runs[0]
	for _, want := range []struct{ key, value string }{
		{CtxEngine, "vllm"},
		{CtxEngineVersion, "0.8.3"},
		{CtxModel, "deepseek-ai/DeepSeek-V2.5"},
		{CtxDType, "bfloat16"},
		{CtxQuantization, "none"}, // the config line's quantization=None
		{CtxContextLength, "8192"},
		{CtxTensorParallel, "8"},
	} {
		c, ok := contextOf(ra, want.key)
		if !ok || contextText(c) != want.value || c.Source != sourceServerLog {
			t.Errorf("%s: %+v (found %v), want %q from %s", want.key, c, ok, want.value, sourceServerLog)
		}
	}
	flags, _ := contextOf(ra, CtxServerFlags)
	for _, want := range []string{"model=deepseek-ai/DeepSeek-V2.5", "max_model_len=8192", "tensor_parallel_size=8", "pipeline_parallel_size=2", "enforce_eager=True"} {
		if !slices.Contains(flags.Values, want) || !strings.HasPrefix(flags.Source, sourceServerLog) {
			t.Errorf("server flags %+v lack %q", flags, want)
		}
	}
	for _, m := range ra.Missing {
		switch m {
		case CtxEngine, CtxEngineVersion, CtxModel, CtxDType, CtxQuantization, CtxContextLength, CtxServerFlags:
			t.Errorf("%s listed as missing although the log states it (missing: %q)", m, ra.Missing)
		}
	}
	// The log's tensor-parallel size sets the GPU count of the cost.
	if c := ra.Sweep.Cost; c == nil || c.GPUs != 8 {
		t.Errorf("cost GPUs %+v, want 8 from the log's tensor_parallel_size", c)
	}
	// The engine named only by the log still picks its fixes' flags.
	eng, _ := contextOf(ra, CtxEngine)
	if fs := fixesFor(Wall{Kind: WallKVCache}, eng.Value, nil, OperatingPoint{}); !hasFix(fs, FixMoreKVMemory, "--gpu-memory-utilization") {
		t.Errorf("kv fixes for engine %q: %+v, want vLLM's", eng.Value, fs)
	}
}

// The manifest wins over the log; the log only fills what it lacks.
func TestRunContextManifestWins(t *testing.T) {
	t.Parallel()
	f := kneeSweep(t)
	f.manifest.Engine = &rundir.Engine{Name: "vllm", DType: "float16", Flags: []string{"--max-model-len", "4096"}}
	for _, l := range fixtureLines(t, "vllm-0.8.3-v0-ray-prefixcache.log")[:8] {
		f.log(fakeStart.UnixNano()-1e9, l)
	}
	rep, err := Analyze([]*Run{f.write()}, testSettings())
	if err != nil {
		t.Fatal(err)
	}
	ra := rep.Runs[0]
	for _, want := range []struct{ key, value, source string }{
		{CtxEngine, "vllm", ""},
		{CtxDType, "float16", ""},
		{CtxServerFlags, "--max-model-len 4096", ""},
		{CtxEngineVersion, "0.8.3", sourceServerLog},
		{CtxContextLength, "8192", sourceServerLog},
	} {
		if c, ok := contextOf(ra, want.key); !ok || contextText(c) != want.value || c.Source != want.source {
			t.Errorf("%s: %+v, want %q from %q", want.key, c, want.value, want.source)
		}
	}
}

// The flagship example's server.log prints dtype=bfloat16 at start-up but
// nothing about quantization: DType comes from the log, Quantization stays
// missing (nothing is inferred from "bf16 weights").
func TestRunContextFlagshipExample(t *testing.T) {
	t.Parallel()
	run, err := Load(filepath.Join("..", "examples", "runs", "h200", "sweep-kv256"))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Analyze([]*Run{run}, Default())
	if err != nil {
		t.Fatal(err)
	}
	ra := rep.Runs[0]
	if c, _ := contextOf(ra, CtxDType); c.Value != "bfloat16" || c.Source != sourceServerLog {
		t.Errorf("DType %+v, want bfloat16 from server.log", c)
	}
	if c, _ := contextOf(ra, CtxEngine); c.Value != "transformers-cb" || c.Source != "" {
		t.Errorf("Engine %+v, want transformers-cb from the manifest", c)
	}
	missing := ra.Missing
	if slices.Contains(missing, CtxDType) || !slices.Contains(missing, CtxQuantization) {
		t.Errorf("missing context %q: want Quantization, not DType", missing)
	}
	if fs := fixesFor(Wall{Kind: WallKVCache}, "transformers-cb", nil, OperatingPoint{}); !hasFix(fs, FixMoreKVMemory, "--kv-blocks") {
		t.Errorf("transformers-cb kv fixes %+v lack --kv-blocks", fs)
	}
}

// resolveEngine on the summaries of real start-up logs of other engines:
// llama.cpp's context is per slot, SGLang's context and non-default args
// are read, and a log without a fact leaves it empty.
func TestResolveEngineOtherEngines(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		fixture                  string
		name, context, dtype, tp string
		flagsHave                string
	}{
		{"llamacpp-b9265-new-slots.log", "llamacpp", "1024 tokens per slot", "", "", ""},
		{"sglang-0.5.18-startup-retract.log", "sglang", "32768 tokens", "", "", "mem_fraction_static=0.85"},
		{"vllm-0.6.4.post1-serve-enginedead.log", "vllm", "105088 tokens", "float16", "1", "gpu_memory_utilization=0.95"},
	} {
		fh, err := os.Open(filepath.Join("..", "testdata", "serverlogs", tt.fixture))
		if err != nil {
			t.Fatal(err)
		}
		sum, err := serverlog.ScanSummary(fh, serverlog.Options{})
		fh.Close()
		if err != nil {
			t.Fatal(err)
		}
		ef := resolveEngine(&rundir.Manifest{}, &sum)
		ctx := ""
		if ef.ContextTokens > 0 {
			ctx = strings.TrimSpace(fmt.Sprintf("%d tokens %s", ef.ContextTokens, ef.ContextNote))
		}
		tp := ""
		if ef.TensorParallel > 0 {
			tp = fmt.Sprint(ef.TensorParallel)
		}
		if ef.Name != tt.name || ctx != tt.context || ef.DType != tt.dtype || tp != tt.tp {
			t.Errorf("%s: name %q context %q dtype %q tp %q, want %q %q %q %q", tt.fixture, ef.Name, ctx, ef.DType, tp, tt.name, tt.context, tt.dtype, tt.tp)
		}
		if flags := strings.Join(ef.Flags, " "); !strings.Contains(flags, tt.flagsHave) || (tt.flagsHave == "" && flags != "") {
			t.Errorf("%s: flags %q, want %q", tt.fixture, flags, tt.flagsHave)
		}
		if ef.Name != "" && !ef.fromLog[efName] {
			t.Errorf("%s: engine name not marked as from the log", tt.fixture)
		}
	}
}
