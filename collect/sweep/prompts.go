package sweep

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
)

// uniqueWords is how many words at the start of each generated prompt
// encode the request's identity (level and sequence number, least
// significant first), so that no two prompts of a run start alike: a
// prefix cache cannot serve one request's prefill from another's by accident.
const uniqueWords = 5

// seedTokensPerWord is the seed's rule of thumb (script 02), used only when
// the server offers neither /tokenize nor usage counts.
const seedTokensPerWord = 1.3

// promptBuilder makes prompts of a target token count from random words.
// A prompt is the concatenation of " "+word; with the server's tokenizer it
// knows each word's cost in tokens and hits the target exactly (up to merges
// across words, checked at calibration); without it, it uses a fitted
// tokens-per-word ratio.
type promptBuilder struct {
	words      []string
	cost       []int         // tokens of " "+word; nil when unknown
	byCost     map[int][]int // word indexes by cost
	costs      []int         // distinct costs, ascending
	filler     string        // appended without a space to hit the target exactly
	fillerCost int
	base       int     // tokens of the prompt besides its words (BOS, template)
	perWord    float64 // tokens per word when costs are unknown
	method     string  // how prompts are sized, for the manifest
	maxErr     int     // largest error seen when checking exact prompts

	prefix       string // shared prefix text
	prefixTokens int
}

// calibrateWithTokenizer learns every word's cost with the server's
// tokenizer and checks a few built prompts against it.
func calibrateWithTokenizer(ctx context.Context, tok tokenizer, words []string) (*promptBuilder, error) {
	const context = "The"
	c0, err := tok.count(ctx, context)
	if err != nil {
		return nil, err
	}
	b := &promptBuilder{byCost: map[int][]int{}}
	costs := make([]int, len(words))
	errs := make([]error, len(words))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, w := range words {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			n, err := tok.count(ctx, context+" "+w)
			costs[i], errs[i] = n-c0, err
		}()
	}
	wg.Wait()
	for i, w := range words {
		if errs[i] != nil {
			return nil, errs[i]
		}
		if costs[i] < 1 {
			continue
		}
		b.byCost[costs[i]] = append(b.byCost[costs[i]], len(b.words))
		b.words = append(b.words, w)
		b.cost = append(b.cost, costs[i])
	}
	if len(b.words) < 16 {
		return nil, fmt.Errorf("tokenizer gave nonsense word costs (%d usable words)", len(b.words))
	}
	for c := range b.byCost {
		b.costs = append(b.costs, c)
	}
	sort.Ints(b.costs)
	if n, err := tok.count(ctx, context+","); err == nil && n-c0 >= 1 {
		b.filler, b.fillerCost = ",", n-c0
	}
	n, err := tok.count(ctx, " "+b.words[0])
	if err != nil {
		return nil, err
	}
	b.base = n - b.cost[0]
	// Check the additive model on prompts of a few sizes.
	rng := rand.New(rand.NewPCG(1, 2))
	for _, target := range []int{b.base + 40, b.base + 200, b.base + 700} {
		p, _ := b.build(rng, target, uint64(target))
		n, err := tok.count(ctx, p)
		if err != nil {
			return nil, err
		}
		b.maxErr = max(b.maxErr, abs(n-target))
	}
	if b.maxErr == 0 {
		b.method = tok.name() + ": exact (checked on 3 prompts)"
	} else {
		b.method = fmt.Sprintf("%s: within ±%d tokens (checked on 3 prompts)", tok.name(), b.maxErr)
	}
	return b, nil
}

// calibrated builds prompts from a fitted tokens-per-word ratio: base +
// perWord × words tokens.
func calibrated(words []string, base, perWord float64, method string) *promptBuilder {
	return &promptBuilder{words: words, base: int(math.Round(base)), perWord: perWord, method: method}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// withPrefix sets a shared prefix of n tokens, built from rng.
func (b *promptBuilder) withPrefix(rng *rand.Rand, n int) {
	if n <= 0 {
		return
	}
	var sb strings.Builder
	b.prefixTokens = b.fill(&sb, rng, n)
	b.prefix = sb.String()
}

// build returns a prompt of target tokens whose first words encode id,
// and its length in tokens: target, or more when target is shorter than
// the template, the shared prefix and the words that make it unique (the
// shortest prompt that can be built), so what is recorded is what is sent.
func (b *promptBuilder) build(rng *rand.Rand, target int, id uint64) (string, int) {
	var sb strings.Builder
	sb.Grow(min(target, 1<<16) * 8) // the target comes from input: grow as words come, past a start
	sb.WriteString(b.prefix)
	left := target - b.base - b.prefixTokens
	if b.cost == nil {
		left -= int(math.Round(uniqueWords * b.perWord))
	}
	for range uniqueWords {
		i := int(id % uint64(len(b.words)))
		id /= uint64(len(b.words))
		sb.WriteByte(' ')
		sb.WriteString(b.words[i])
		left -= b.wordCost(i)
	}
	if left < 0 {
		target -= left
	}
	b.fill(&sb, rng, left)
	return sb.String(), target
}

func (b *promptBuilder) wordCost(i int) int {
	if b.cost == nil {
		return 0 // counted by fill's word count instead
	}
	return b.cost[i]
}

// fill appends random words worth n tokens and returns the tokens added.
func (b *promptBuilder) fill(sb *strings.Builder, rng *rand.Rand, n int) int {
	if b.cost == nil {
		words := int(math.Round(float64(n) / b.perWord))
		if n > 0 && b.prefix == "" && sb.Len() == 0 {
			words = max(words, 1)
		}
		for range words {
			sb.WriteByte(' ')
			sb.WriteString(b.words[rng.IntN(len(b.words))])
		}
		return int(math.Round(float64(words) * b.perWord))
	}
	added := 0
	maxCost, minCost := b.costs[len(b.costs)-1], b.costs[0]
	add := func(i int) {
		sb.WriteByte(' ')
		sb.WriteString(b.words[i])
		added += b.cost[i]
		n -= b.cost[i]
	}
	for n > maxCost+minCost {
		add(rng.IntN(len(b.words)))
	}
	for n > 0 {
		if exact := b.byCost[n]; len(exact) > 0 {
			add(exact[rng.IntN(len(exact))])
			break
		}
		// a word that leaves something we can still finish with
		var ok []int
		for _, c := range b.costs {
			if c <= n-minCost {
				ok = append(ok, b.byCost[c]...)
			}
		}
		if len(ok) == 0 || (b.fillerCost > 0 && n <= b.fillerCost*2) {
			for b.fillerCost > 0 && n >= b.fillerCost {
				sb.WriteString(b.filler)
				added += b.fillerCost
				n -= b.fillerCost
			}
			break
		}
		add(ok[rng.IntN(len(ok))])
	}
	return added
}
