package sweep

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/headroom-llm/headroom/collect/loadgen"
	"github.com/headroom-llm/headroom/rundir"
)

// Dataset configures prompts from a file (WithNamedDataset).
type Dataset struct {
	// Name is the file's format: DatasetCustom, DatasetShareGPT or
	// DatasetHF; "" detects it.
	Name string
	Path string
	// OutputTokens, when above 0, is every request's output length instead
	// of the dataset's reference answers (vllm bench's --sharegpt-output-len,
	// --hf-output-len).
	OutputTokens int
	// DisableShuffle takes the records in file order instead of a seeded
	// shuffle (vllm bench's --disable-shuffle).
	DisableShuffle bool
}

// vllm bench serve's bounds on a ShareGPT sample (is_valid_sequence in
// vllm/benchmarks/dataset_utils.py, "copied from the original
// sample_sharegpt_requests"): both lengths at least 4 tokens, the prompt at
// most 1024, prompt and output together at most 2048.
const (
	vllmMinLen       = 4
	vllmMaxPromptLen = 1024
	vllmMaxTotalLen  = 2048
)

// Reasons a dataset record is not sent, for the manifest.
const (
	skipNoAnswer    = "fewer than two turns"
	skipVLLMBounds  = "outside vllm bench's bounds (prompt 4..1024 tokens, output at least 4, together at most 2048)"
	skipMaxModelLen = "prompt and output over the model's context"
	skipEmpty       = "empty prompt"
)

// defaultDatasetPool is how many records a sweep whose request counts are
// not known ahead (a duration per level, a search) takes from a dataset.
const defaultDatasetPool = 1000

// counter counts a text's tokens: the server's tokenizer, or an estimate.
type counter func(ctx context.Context, text string) (int, error)

// prepareDataset reads the dataset and picks the records the sweep sends:
// each counted once (prompt, and reference answer when it decides the
// output length), filtered as vllm bench filters ShareGPT and to the
// model's context, in seeded order, as many as the busiest level sends
// (reused in order when the dataset has fewer).
func (s *Sweep) prepareDataset(ctx context.Context) error {
	d := s.cfg.datasetCfg
	recs, format := s.datasetRecs, s.datasetFormat
	stats := &rundir.DatasetSample{Format: format, Records: len(recs), Skipped: map[string]int{}, Shuffled: !d.DisableShuffle, OutputOverride: d.OutputTokens}
	order := s.datasetOrder()
	count, method, err := s.datasetCounter(ctx, recs, order)
	if err != nil {
		return err
	}
	stats.Tokenizer = method
	need := s.datasetPoolSize()
	mml := s.maxModelLen
	var pool []datasetRecord
	const batch = 32
	for at := 0; at < len(order) && len(pool) < need; at += batch {
		chunk := order[at:min(at+batch, len(order))]
		counted, err := countRecords(ctx, count, recs, chunk, format, d.OutputTokens)
		if err != nil {
			return fmt.Errorf("dataset %s: counting tokens: %w", d.Path, err)
		}
		for _, c := range counted {
			stats.Considered++
			if reason := s.skipReason(c, format, d.OutputTokens > 0, mml); reason != "" {
				stats.Skipped[reason]++
				continue
			}
			pool = append(pool, c.rec)
			if len(pool) == need {
				break
			}
		}
	}
	if len(pool) == 0 {
		return fmt.Errorf("dataset %s: none of its %d records can be sent (%s)", d.Path, len(recs), skippedText(stats.Skipped))
	}
	stats.Used = len(pool)
	if len(pool) < need {
		stats.Reused = true
		s.note(fmt.Sprintf("dataset %s has %d usable records for levels of up to %d requests: they are sent again in the same order", d.Path, len(pool), need))
	}
	var p, o []float64
	for _, r := range pool {
		if r.promptTokens > 0 {
			p = append(p, float64(r.promptTokens))
		}
		if r.outputTokens > 0 {
			o = append(o, float64(r.outputTokens))
		}
	}
	stats.PromptTokens, stats.OutputTokens = summarize(p), summarize(o)
	if len(stats.Skipped) == 0 {
		stats.Skipped = nil
	}
	s.dataset, s.datasetStats = pool, stats
	return nil
}

// countedRecord is a record with its lengths counted.
type countedRecord struct {
	rec      datasetRecord
	fromRef  bool // the output length is the reference answer's
	hasTurns bool
}

// countRecords counts the prompts and reference answers of some records,
// eight at a time.
func countRecords(ctx context.Context, count counter, recs []datasetRecord, idx []int, format string, outputTokens int) ([]countedRecord, error) {
	out := make([]countedRecord, len(idx))
	errs := make([]error, len(idx))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for k, i := range idx {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c := countedRecord{rec: recs[i], hasTurns: len(recs[i].turns) >= 2 || format != DatasetShareGPT}
			r := &c.rec
			var err error
			if r.promptTokens == 0 && r.messages == nil && r.prompt != "" {
				r.promptTokens, err = count(ctx, r.prompt)
			}
			switch {
			case err != nil:
			case outputTokens > 0:
				r.outputTokens = outputTokens
			case r.outputTokens > 0:
			case r.hasReference:
				r.outputTokens, err = count(ctx, r.reference)
				c.fromRef = true
			}
			out[k], errs[k] = c, err
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// skipReason says why a counted record is not sent; "" sends it.
func (s *Sweep) skipReason(c countedRecord, format string, fixedOutput bool, maxModelLen int) string {
	r := c.rec
	switch {
	case format == DatasetShareGPT && !c.hasTurns:
		return skipNoAnswer
	case r.prompt == "" && r.messages == nil:
		return skipEmpty
	}
	// vllm bench applies its bounds to every ShareGPT sample, and to an HF
	// conversation when its output length is the reference's.
	if format == DatasetShareGPT || (format == DatasetHF && c.fromRef) {
		out := r.outputTokens
		if r.promptTokens < vllmMinLen || r.promptTokens > vllmMaxPromptLen || (!fixedOutput && out < vllmMinLen) ||
			r.promptTokens+out > vllmMaxTotalLen {
			return skipVLLMBounds
		}
	}
	if maxModelLen > 0 {
		out := r.outputTokens
		if out == 0 {
			out = s.cfg.output.Max
			if out == 0 {
				out = int(math.Ceil(s.cfg.output.Mean))
			}
		}
		if r.promptTokens+out > maxModelLen {
			return skipMaxModelLen
		}
	}
	return ""
}

func skippedText(m map[string]int) string {
	if len(m) == 0 {
		return "no prompts"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d %s", m[k], k))
	}
	return fmt.Sprint(parts)
}

func summarize(xs []float64) *rundir.TokenSummary {
	if len(xs) == 0 {
		return nil
	}
	t := &rundir.TokenSummary{N: len(xs), Min: int(slices.Min(xs)), Max: int(slices.Max(xs))}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	t.Mean = sum / float64(len(xs))
	return t
}

// datasetPoolSize is the most requests one level sends, or in a
// multi-turn sweep the most sessions it starts (warm-up included), or
// defaultDatasetPool when that is not known ahead.
func (s *Sweep) datasetPoolSize() int {
	if s.search != nil || s.cfg.durationPerLevel > 0 {
		return defaultDatasetPool
	}
	n := 1
	for _, l := range s.plan() {
		n = max(n, l.Warmup+l.Requests)
	}
	return n
}

// datasetCounter is how the dataset's texts are counted: the server's
// /tokenize; without it, a fit of tokens to bytes from the usage counts the
// server reports for a few of the dataset's own prompts; without those, a
// rule of thumb of 4 bytes per token, with a warning.
func (s *Sweep) datasetCounter(ctx context.Context, recs []datasetRecord, order []int) (counter, string, error) {
	if s.tokenizer != nil {
		return s.tokenizer.count, s.tokenizer.name(), nil
	}
	var xs, ys []float64
	for _, i := range order {
		if len(xs) == 8 {
			break
		}
		p := recs[i].prompt
		if p == "" || len(p) > 16<<10 {
			continue
		}
		row, _ := s.gen.Do(ctx, loadgen.Request{ID: "calibrate", Prompt: p, MaxTokens: 1, Extra: s.extra})
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		if row.ServerPromptTokens == nil {
			continue
		}
		xs, ys = append(xs, float64(len(p))), append(ys, float64(*row.ServerPromptTokens))
	}
	if a, b, ok := fitLine(xs, ys); ok {
		worst := 0.0
		for i := range xs {
			worst = max(worst, math.Abs(a+b*xs[i]-ys[i]))
		}
		s.warn(fmt.Sprintf("dataset lengths are estimates: the server has no /tokenize; %.3f tokens per byte + %.0f, fitted to the usage counts of %d of the dataset's prompts (within ±%.0f tokens on those)", b, a, len(xs), worst))
		return func(_ context.Context, text string) (int, error) {
			return max(1, int(math.Round(a+b*float64(len(text))))), nil
		}, fmt.Sprintf("estimated from usage counts of %d dataset prompts: %.3f tokens per byte + %.0f", len(xs), b, a), nil
	}
	s.warn("dataset lengths are estimates: the server offers neither /tokenize nor usage counts; assumed 4 bytes per token")
	return func(_ context.Context, text string) (int, error) { return max(1, (len(text)+3)/4), nil }, "assumed 4 bytes per token", nil
}

// fitLine is the least-squares line y = a + b·x; false with fewer than two
// distinct x or a slope that is not positive.
func fitLine(xs, ys []float64) (a, b float64, ok bool) {
	n := float64(len(xs))
	if len(xs) < 2 {
		return 0, 0, false
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx, sy, sxx, sxy = sx+xs[i], sy+ys[i], sxx+xs[i]*xs[i], sxy+xs[i]*ys[i]
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return 0, 0, false
	}
	b = (n*sxy - sx*sy) / den
	a = (sy - b*sx) / n
	return a, b, b > 0
}

// datasetOrder is the order the dataset's records are taken in: the file's,
// or shuffled by the sweep's seed, the same for single requests and for
// multi-turn conversations, so one seed picks the same records either way.
func (s *Sweep) datasetOrder() []int {
	order := make([]int, len(s.datasetRecs))
	for i := range order {
		order[i] = i
	}
	if !s.cfg.datasetCfg.DisableShuffle {
		rand.New(rand.NewPCG(uint64(s.cfg.seed), 0xda7a5e7)).Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	return order
}
