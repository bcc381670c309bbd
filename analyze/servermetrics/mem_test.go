package servermetrics

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"testing"
)

// A dump of many scrapes keeps its samples compactly: the names, labels
// and help texts every scrape repeats are held once, so the memory a dump
// keeps grows by a sample's own value and time, not by its text.
func TestDumpMemoryPerSample(t *testing.T) {
	one, err := os.ReadFile("../../testdata/metrics/sglang-docs-llama31-8b.txt")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	const scrapes = 400
	for i := 0; i < scrapes; i++ {
		fmt.Fprintf(&b, "2026-12-01T12:%02d:%02dZ\n", i/60, i%60)
		b.Write(one)
	}
	data := b.Bytes()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	d, err := ReadDump(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	n := 0
	for _, s := range d.Snapshots {
		n += len(s.Samples)
	}
	if len(d.Snapshots) != scrapes || !d.Timed {
		t.Fatalf("%d scrapes, timed %v", len(d.Snapshots), d.Timed)
	}
	per := float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
	t.Logf("%d samples in %d scrapes: %.0f bytes kept per sample (the text is %.0f bytes per sample)", n, scrapes, per, float64(len(data))/float64(n))
	runtime.KeepAlive(d)
	runtime.KeepAlive(data)
	// Keeping every scrape's strings cost 208 bytes a sample here.
	if per > 128 {
		t.Errorf("%.0f bytes kept per sample: want at most 128 (a Sample is 48)", per)
	}
}
