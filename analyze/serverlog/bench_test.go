package serverlog

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headroom-llm/headroom/internal/cputime"
)

// benchLog is the vLLM fixtures repeated to about n bytes.
func benchLog(b *testing.B, prefix string, n int) []byte {
	b.Helper()
	var seed []byte
	for _, p := range fixtures(b) {
		if strings.HasPrefix(filepath.Base(p), prefix) {
			d, err := os.ReadFile(p)
			if err != nil {
				b.Fatal(err)
			}
			seed = append(seed, d...)
		}
	}
	out := make([]byte, 0, n+len(seed))
	for len(out) < n {
		out = append(out, seed...)
	}
	return out
}

func benchScan(b *testing.B, prefix string, engine Engine) {
	data := benchLog(b, prefix, 32<<20)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cputime.Total()
	for i := 0; i < b.N; i++ {
		s := NewScanner(bytes.NewReader(data), Options{Engine: engine})
		z := NewSummarizer()
		for s.Scan() {
			z.Add(s.Event())
		}
		if s.Err() != nil {
			b.Fatal(s.Err())
		}
	}
	// The wall-clock MB/s is unreliable on a shared machine; MB per CPU
	// second (user+system, all threads, GC included) is not.
	if cpu := cputime.Total() - cpu0; cpu > 0 {
		b.ReportMetric(float64(len(data))*float64(b.N)/1e6/cpu.Seconds(), "MB/cpu-s")
	}
}

func BenchmarkScanVLLM(b *testing.B)     { benchScan(b, "vllm-", EngineUnknown) }
func BenchmarkScanSGLang(b *testing.B)   { benchScan(b, "sglang-0", EngineUnknown) }
func BenchmarkScanLlamaCpp(b *testing.B) { benchScan(b, "llamacpp-", EngineLlamaCpp) }
