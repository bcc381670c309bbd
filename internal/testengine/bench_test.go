package testengine

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/internal/gguf"
)

// BenchmarkConcurrency shows the engine's concurrency-versus-throughput shape: each iteration is
// one round of c concurrent streaming requests (sent together) of benchTokens tokens against an engine with 8
// sequences. It reports the aggregate decode rate and the median per-request TPOT and TTFT (c=16 is beyond the sequences: half the requests queue):
//
//	go test -run '^$' -bench Concurrency -benchtime 5x ./internal/testengine/
func BenchmarkConcurrency(b *testing.B) {
	for _, m := range []struct {
		name  string
		model gguf.LlamaConfig
	}{
		{"tiny", gguf.TinyLlama()},
		{"small", gguf.SmallLlama()},
	} {
		b.Run("model="+m.name, func(b *testing.B) {
			e := Start(b, Options{Model: m.model, Sequences: 8, CtxPerSeq: 512})
			for _, c := range []int{1, 2, 4, 8, 16} {
				b.Run(fmt.Sprintf("c=%d", c), func(b *testing.B) { benchRounds(b, e, c) })
			}
		})
	}
}

const benchTokens = 128

func benchRounds(b *testing.B, e *Engine, c int) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var tpots, ttfts []time.Duration
	var tokens int
	var wall time.Duration
	round := 0
	for b.Loop() {
		round++
		start := time.Now()
		results := make([]timedStream, c)
		errs := make([]error, c)
		var wg sync.WaitGroup
		for i := range c {
			wg.Add(1)
			go func() {
				defer wg.Done()
				prompt := fmt.Sprintf("round %d request %d: %s", round, i, strings.Repeat("xyz", 8))
				results[i], errs[i] = streamTimed(ctx, e.BaseURL+"/v1/completions", prompt, benchTokens)
			}()
		}
		wg.Wait()
		wall += time.Since(start)
		for i, r := range results {
			if errs[i] != nil {
				b.Fatal(errs[i])
			}
			if len(r.chunkTimes) != benchTokens {
				b.Fatalf("%d chunks, want %d", len(r.chunkTimes), benchTokens)
			}
			tokens += len(r.chunkTimes)
			ttfts = append(ttfts, r.chunkTimes[0].Sub(start))
			tpots = append(tpots, r.chunkTimes[len(r.chunkTimes)-1].Sub(r.chunkTimes[0])/time.Duration(len(r.chunkTimes)-1))
		}
	}
	slices.Sort(tpots)
	slices.Sort(ttfts)
	b.ReportMetric(float64(tokens)/wall.Seconds(), "tok/s")
	b.ReportMetric(float64(tpots[len(tpots)/2].Microseconds())/1000, "TPOT-ms")
	b.ReportMetric(float64(ttfts[len(ttfts)/2].Microseconds())/1000, "TTFT-ms")
}

type timedStream struct {
	chunkTimes []time.Time // arrival of each chunk with text
}

func streamTimed(ctx context.Context, url, prompt string, n int) (timedStream, error) {
	body := fixedLength(prompt, n)
	body["stream"] = true
	resp, err := postJSON(ctx, url, body)
	if err != nil {
		return timedStream{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return timedStream{}, fmt.Errorf("POST %s: %s", url, resp.Status)
	}
	var s timedStream
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		// Cheap check instead of JSON: content chunks carry a non-empty "text".
		if line := sc.Text(); strings.HasPrefix(line, "data: {") && !strings.Contains(line, `"text":""`) && strings.Contains(line, `"text":"`) {
			s.chunkTimes = append(s.chunkTimes, time.Now())
		}
	}
	return s, sc.Err()
}
