package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headroom-llm/headroom/cuda"
	"github.com/headroom-llm/headroom/internal/fakecuda"
	"github.com/headroom-llm/headroom/rundir"
)

// TestProbeWithoutGPUExitsNonZero runs the headroom binary (this test
// binary, re-executed as main) on a machine whose libcuda cannot be found.
func TestProbeWithoutGPUExitsNonZero(t *testing.T) {
	if os.Getenv("HEADROOM_TEST_RUN_MAIN") == "1" {
		os.Args = append([]string{"headroom"}, strings.Fields(os.Getenv("HEADROOM_TEST_ARGS"))...)
		main()
		os.Exit(0)
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestProbeWithoutGPUExitsNonZero$")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HEADROOM_TEST_RUN_MAIN=1", "HEADROOM_TEST_ARGS=probe",
		cuda.EnvLibCUDA+"="+filepath.Join(dir, "no-such-libcuda.so.1"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	exitErr, ok := err.(*exec.ExitError)
	if !ok || exitErr.ExitCode() != 1 {
		t.Fatalf("exit: %v, want status 1; stderr:\n%s", err, stderr.String())
	}
	msg := stderr.String()
	if strings.Count(msg, "\n") != 1 || !strings.HasPrefix(msg, "headroom: probe: cuda: cannot load libcuda.so.1") ||
		!strings.Contains(msg, "install the NVIDIA driver") || strings.Contains(msg, "panic") {
		t.Errorf("stderr is not the one-line message:\n%s", msg)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a run directory was left behind without a GPU: %v", entries)
	}
}

func TestProbeCommandOnFakeGPU(t *testing.T) {
	f := fakecuda.Build(t)
	// Intensity with K = N = 128 is B/(1 + B/64); this roofline bends at
	// intensity 10, so the 90% knee is B = 16.
	f.SetRoofline(0.5, 50)
	f.SetBandwidth(2, 5, 7)
	t.Setenv(cuda.EnvLibCUDA, f.DriverPath)
	t.Setenv(cuda.EnvCUBLAS, f.CUBLASPath)
	t.Setenv("HEADROOM_LIBNVML", f.NVMLPath)
	out := filepath.Join(t.TempDir(), "run")
	code, stdout, stderr := headroom(t, "probe", "--out", out, "--k", "128", "--n", "128",
		"--batches", "1,8,16,64", "--buffers", "1", "--window", "200us", "--repeats", "3")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"bandwidth        5 GB/s  (copy_kernel, 1 MiB buffer", "read-only        7 GB/s", "peak observed    0.5 TFLOP/s",
		"empirical ridge  100 FLOP/byte",
		"90% of peak at   batch 16", "wrote " + out} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	// Not a terminal: one progress line per point, with the current B.
	if !strings.Contains(stderr, "probe GPU 0 solo       [####################....]  6/7 GEMM B=16\n") {
		t.Errorf("progress:\n%s", stderr)
	}
	r, err := rundir.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Manifest.Complete || r.Manifest.Probe == nil || r.Manifest.Probe.KneeBatch != 16 || r.Manifest.Host.OS == "" || r.Manifest.HeadroomVersion == "" {
		t.Errorf("manifest %+v", r.Manifest)
	}
	if err := r.Check(); err != nil {
		t.Error(err)
	}
}

// TestProbeFP8AndModelOnFakeGPU: --dtype fp8 and --model-config add the FP8
// roofline and the model's decode-step floor to the summary and the run.
func TestProbeFP8AndModelOnFakeGPU(t *testing.T) {
	f := fakecuda.Build(t)
	f.SetRoofline(0.5, 50)
	f.SetFP8Roofline(1, 50)
	f.SetBandwidth(2, 5, 7)
	t.Setenv(cuda.EnvLibCUDA, f.DriverPath)
	t.Setenv(cuda.EnvCUBLAS, f.CUBLASPath)
	t.Setenv(cuda.EnvCUBLASLt, f.CUBLASLtPath)
	t.Setenv("HEADROOM_LIBNVML", f.NVMLPath)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfg, []byte(`{"_name_or_path":"tiny-llama","model_type":"llama","num_hidden_layers":2,"hidden_size":64,
		"num_attention_heads":4,"num_key_value_heads":2,"intermediate_size":128,"vocab_size":256,"torch_dtype":"bfloat16"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	code, stdout, stderr := headroom(t, "probe", "--out", out, "--k", "128", "--n", "128", "--batches", "16,64",
		"--buffers", "1", "--window", "200us", "--repeats", "3", "--dtype", "bf16,fp8", "--model-config", cfg, "--model-batches", "1,8")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"FP8 peak         1.0 TFLOP/s", "tiny-llama decode step", "B=1    bf16", "B=8    fp8_e4m3"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "model lm_head fp8_e4m3 B=8") {
		t.Errorf("progress lacks the model GEMMs:\n%s", stderr)
	}
	r, err := rundir.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	if p := r.Manifest.Probe; p.FP8 == nil || p.Model != "tiny-llama" || p.ModelConfig != cfg {
		t.Errorf("manifest probe %+v", p)
	}
	rows, err := rundir.ReadTable[rundir.ProbeModelGEMMRow](out, rundir.TableProbeModelGEMM)
	if err != nil || len(rows) != 2*2*5 {
		t.Errorf("%d model GEMM rows (%v), want 2 batches × 2 dtypes × 5 GEMMs", len(rows), err)
	}
	if err := r.Check(); err != nil {
		t.Error(err)
	}
}

func TestProbeUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"probe", "--devices", "gpu0"}, {"probe", "--buffers", "0"}, {"probe", "--repeats", "0"}, {"probe", "extra"},
		{"probe", "--dtype", "int4"}, {"probe", "--model-config", "/nonexistent/config.json"}, {"probe", "--model-batches", "0", "--model-config", "/dev/null"}} {
		code, _, errs := headroom(t, args...)
		if code != 2 || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line", args, code, errs)
		}
	}
}

func TestParseDevices(t *testing.T) {
	tests := []struct {
		in   string
		want []int
		err  bool
	}{
		{"all", nil, false},
		{"0", []int{0}, false},
		{"0, 2,3", []int{0, 2, 3}, false},
		{"gpu0", nil, true},
		{"-1", nil, true},
		{"", nil, true},
	}
	for _, tt := range tests {
		got, err := parseDevices(tt.in)
		if (err != nil) != tt.err || len(got) != len(tt.want) {
			t.Errorf("parseDevices(%q) = %v, %v", tt.in, got, err)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("parseDevices(%q) = %v, want %v", tt.in, got, tt.want)
			}
		}
	}
}
