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

func TestProbeUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"probe", "--devices", "gpu0"}, {"probe", "--buffers", "0"}, {"probe", "--repeats", "0"}, {"probe", "extra"}} {
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
