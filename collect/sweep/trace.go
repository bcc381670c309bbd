package sweep

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/headroom-llm/headroom/collect/loadgen"
	"github.com/headroom-llm/headroom/rundir"
)

// Trace formats.
const (
	// TraceMooncake is Mooncake's JSONL: {"timestamp": ms since the first
	// request, "input_length", "output_length", "hash_ids": one id per
	// block of the prompt, equal ids for equal blocks}.
	TraceMooncake = "mooncake"
	// TraceBurstGPT is BurstGPT's CSV: Timestamp (s), Model, Request
	// tokens, Response tokens, Total tokens, Log Type.
	TraceBurstGPT = "burstgpt"
)

// DefaultTraceBlockSize is the tokens per hash id of a Mooncake trace (its
// release's block size).
const DefaultTraceBlockSize = 512

// Trace configures a replay of a timestamped trace (WithTrace).
type Trace struct {
	Path   string
	Format string // TraceMooncake or TraceBurstGPT; "" detects (a .csv file is BurstGPT)
	// Speeds replays the trace once per speed, one level each: 2 sends it
	// twice as fast, 0.5 at half speed. Default: 1.
	Speeds []float64
	// BlockSize is the tokens of one hash id (default 512).
	BlockSize int
}

// traceRow is one request of a trace.
type traceRow struct {
	at            time.Duration // from the trace's first request
	input, output int
	hashIDs       []int64
}

// readTrace reads a trace file, sorted by arrival.
func readTrace(path, format string) ([]traceRow, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", fmt.Errorf("trace: %w", err)
	}
	defer f.Close()
	if format == "" {
		format = TraceMooncake
		if strings.HasSuffix(strings.ToLower(path), ".csv") {
			format = TraceBurstGPT
		}
	}
	var rows []traceRow
	switch format {
	case TraceMooncake:
		rows, err = parseMooncake(f)
	case TraceBurstGPT:
		rows, err = parseBurstGPT(f)
	default:
		return nil, format, fmt.Errorf("trace format %q: want %s or %s", format, TraceMooncake, TraceBurstGPT)
	}
	if err != nil {
		return nil, format, fmt.Errorf("trace %s: %w", path, err)
	}
	slices.SortStableFunc(rows, func(a, b traceRow) int { return int(a.at - b.at) })
	start := rows[0].at
	for i := range rows {
		rows[i].at -= start
	}
	return rows, format, nil
}

func parseMooncake(r io.Reader) ([]traceRow, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var rows []traceRow
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var v struct {
			Timestamp    *float64 `json:"timestamp"`
			InputLength  *int     `json:"input_length"`
			OutputLength *int     `json:"output_length"`
			HashIDs      []int64  `json:"hash_ids"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, fmt.Errorf("line %d: not a trace row (%s)", line, jsonProblem(err))
		}
		switch {
		case v.Timestamp == nil || v.InputLength == nil || v.OutputLength == nil:
			return nil, fmt.Errorf("line %d: a trace row needs \"timestamp\" (ms), \"input_length\" and \"output_length\"", line)
		case *v.Timestamp < 0 || math.IsNaN(*v.Timestamp):
			return nil, fmt.Errorf("line %d: timestamp %v: want 0 or more milliseconds", line, *v.Timestamp)
		case *v.InputLength < 1 || *v.OutputLength < 1:
			return nil, fmt.Errorf("line %d: input_length %d, output_length %d: want at least 1 token each", line, *v.InputLength, *v.OutputLength)
		}
		rows = append(rows, traceRow{at: time.Duration(*v.Timestamp * float64(time.Millisecond)), input: *v.InputLength,
			output: *v.OutputLength, hashIDs: v.HashIDs})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, errors.New("no requests")
	}
	return rows, nil
}

// parseBurstGPT reads BurstGPT's CSV by its header names; rows with no
// response tokens (failed requests in the trace) are left out, as vllm
// bench's BurstGPT reader does.
func parseBurstGPT(r io.Reader) ([]traceRow, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		return nil, errors.New("no header line")
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.TrimSpace(h)] = i
	}
	for _, h := range []string{"Timestamp", "Request tokens", "Response tokens"} {
		if _, ok := col[h]; !ok {
			return nil, fmt.Errorf("no %q column (BurstGPT's CSV has Timestamp, Model, Request tokens, Response tokens)", h)
		}
	}
	var rows []traceRow
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", line, err)
		}
		get := func(h string) (float64, error) {
			i := col[h]
			if i >= len(rec) {
				return 0, fmt.Errorf("line %d: no %q value", line, h)
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(rec[i]), 64)
			if err != nil || v < 0 {
				return 0, fmt.Errorf("line %d: %s %q: want a number of 0 or more", line, h, rec[i])
			}
			return v, nil
		}
		ts, err1 := get("Timestamp")
		in, err2 := get("Request tokens")
		out, err3 := get("Response tokens")
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, err
		}
		if out < 1 || in < 1 {
			continue
		}
		rows = append(rows, traceRow{at: time.Duration(ts * float64(time.Second)), input: int(in), output: int(out)})
	}
	if len(rows) == 0 {
		return nil, errors.New("no requests with response tokens")
	}
	return rows, nil
}

// traceLengths are a row's lengths as sent: the prompt cut so that prompt
// and output fit the model's context (the arrival stays), the output cut
// only when it alone does not fit.
func traceLengths(r traceRow, maxModelLen int) (input, output int, cut bool) {
	input, output = r.input, r.output
	if maxModelLen > 0 && input+output > maxModelLen {
		output = min(output, maxModelLen-1)
		input = max(1, maxModelLen-output)
		cut = true
	}
	return input, output, cut
}

// tracePrompt builds a row's prompt of input tokens from its blocks: each
// hash id's text is made from a generator seeded by (seed, id), so equal
// ids give equal text and a shared prefix of ids is a shared prefix of
// text, as in the trace; the last block is cut to what the length leaves.
// A row without hash ids gets a prompt of its own (of at least the
// shortest length a unique prompt has). It returns the prompt and its
// length in tokens.
func (s *Sweep) tracePrompt(r traceRow, input int, seq int) (string, int) {
	b := s.prompts
	if len(r.hashIDs) == 0 {
		rng := rand.New(rand.NewPCG(uint64(s.cfg.seed), uint64(seq)|0x7ace<<48))
		return b.build(rng, input, uint64(seq))
	}
	var sb strings.Builder
	left := input - b.base
	size := s.traceCfg.BlockSize
	for i, id := range r.hashIDs {
		if left <= 0 {
			break
		}
		n := min(size, left)
		if i == len(r.hashIDs)-1 {
			n = left // a trace whose blocks do not cover its length: the last block takes the rest
		}
		rng := rand.New(rand.NewPCG(uint64(s.cfg.seed), uint64(id)|0xb10c<<48))
		left -= b.fill(&sb, rng, n)
	}
	return sb.String(), input
}

// traceLevel is the replay of the trace at one speed: every row at its
// arrival divided by the speed, the first Warmup rows marked warm-up.
func (s *Sweep) traceLevel(index int, speed float64) loadgen.Level {
	times := make(loadgen.Times, len(s.trace))
	for i, r := range s.trace {
		times[i] = time.Duration(float64(r.at) / speed)
	}
	l := loadgen.Level{Index: index, Concurrency: s.cfg.maxConc, Arrivals: times}
	if span := times[len(times)-1].Seconds(); span > 0 {
		l.RateRPS = float64(len(times)-1) / span
	} else {
		l.RateRPS = math.Inf(1)
	}
	l.Warmup = min(max(s.cfg.warmup, 0), len(times)-1)
	l.Requests = len(times) - l.Warmup
	return l
}

// traceRecord is the trace for the manifest.
func (s *Sweep) traceRecord() *rundir.TraceReplay {
	t := s.traceCfg
	rec := &rundir.TraceReplay{Path: t.Path, Format: s.traceFormat, Rows: len(s.trace), Speeds: t.Speeds, BlockSize: t.BlockSize}
	if len(s.trace) > 0 {
		rec.SpanS = s.trace[len(s.trace)-1].at.Seconds()
	}
	seen := map[int64]bool{}
	for _, r := range s.trace {
		in, _, cut := traceLengths(r, s.maxModelLen)
		if cut {
			rec.Cut++
		}
		rec.PromptTokens += int64(in)
		// Tokens of blocks already seen in an earlier request: what a
		// prefix cache with room for everything could serve.
		left := in
		for _, id := range r.hashIDs {
			n := min(t.BlockSize, left)
			if n <= 0 {
				break
			}
			if seen[id] {
				rec.RepeatedBlockTokens += int64(n)
			}
			seen[id] = true
			left -= n
		}
	}
	return rec
}
