package importer

// AIPerf (ai-dynamo/aiperf) writes an artifact directory per run:
// profile_export.jsonl holds one record per request (metadata with epoch
// nanosecond timestamps, metrics in display units, error), and
// profile_export_aiperf.json the aggregates and the input configuration
// (concurrency, request rate, model). Older versions name the start
// timestamp_ns, the phase credit_phase and TTFT "ttft"; newer ones
// request_start_ns, benchmark_phase and "time_to_first_token".

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/headroom-llm/headroom/rundir"
)

type aiperfRecord struct {
	Metadata struct {
		XRequestID     string `json:"x_request_id"`
		RequestStartNS *int64 `json:"request_start_ns"`
		TimestampNS    *int64 `json:"timestamp_ns"`
		RequestEndNS   *int64 `json:"request_end_ns"`
		BenchmarkPhase string `json:"benchmark_phase"`
		CreditPhase    string `json:"credit_phase"`
		WasCancelled   bool   `json:"was_cancelled"`
	} `json:"metadata"`
	Metrics map[string]aiperfValue `json:"metrics"`
	Error   *struct {
		Code    int    `json:"code"`
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

type aiperfValue struct {
	Value json.RawMessage `json:"value"`
	Unit  string          `json:"unit"`
}

// unitSeconds is the length of a time unit AIPerf writes, in seconds.
func unitSeconds(unit string) (float64, bool) {
	switch strings.ToLower(unit) {
	case "ns":
		return 1e-9, true
	case "us", "µs", "μs":
		return 1e-6, true
	case "ms":
		return 1e-3, true
	case "s", "sec", "secs", "seconds":
		return 1, true
	}
	return 0, false
}

// seconds reads a time metric as seconds.
func (r *aiperfRecord) seconds(tags ...string) (float64, bool, error) {
	for _, tag := range tags {
		v, ok := r.Metrics[tag]
		if !ok {
			continue
		}
		scale, ok := unitSeconds(v.Unit)
		if !ok {
			return 0, false, fmt.Errorf("metric %q: unknown time unit %q", tag, v.Unit)
		}
		var x float64
		if err := json.Unmarshal(v.Value, &x); err != nil {
			return 0, false, fmt.Errorf("metric %q: %w", tag, err)
		}
		return x * scale, true, nil
	}
	return 0, false, nil
}

func (r *aiperfRecord) count(tags ...string) *int64 {
	for _, tag := range tags {
		if v, ok := r.Metrics[tag]; ok {
			var x float64
			if json.Unmarshal(v.Value, &x) == nil {
				return ptr(int64(x))
			}
		}
	}
	return nil
}

func (r *aiperfRecord) gapsSeconds(tag string) ([]float64, error) {
	v, ok := r.Metrics[tag]
	if !ok {
		return nil, nil
	}
	scale, ok := unitSeconds(v.Unit)
	if !ok {
		return nil, fmt.Errorf("metric %q: unknown time unit %q", tag, v.Unit)
	}
	var xs []float64
	if err := json.Unmarshal(v.Value, &xs); err != nil {
		return nil, fmt.Errorf("metric %q: %w", tag, err)
	}
	for i := range xs {
		xs[i] *= scale
	}
	return xs, nil
}

// aiperfConfig is what the aggregate file says about the run.
type aiperfConfig struct {
	concurrency int64
	rateRPS     float64
	model       string
	endpoint    string
	url         string
	command     string
	start, end  time.Time
	// cancelled: the requests AIPerf cancelled on purpose
	// (--request-cancellation-rate), from its error summary.
	cancelled int64
	// phaseProblem says why the phases gave no load (profilingPhase).
	phaseProblem string
}

func parseAIPerfRecords(f fileRef) ([]*sweepSource, error) {
	src := &sweepSource{
		kind: KindAIPerfRecords, tool: "AIPerf (profile_export.jsonl)", file: f.path, sha256: f.sha256(),
		engine:   rundir.Engine{Name: "unknown (OpenAI-compatible server measured with AIPerf)"},
		workload: rundir.Workload{Endpoint: "chat"},
		lacks: []string{
			"server log and /metrics", "GPU, driver and engine version", "server flags",
			"tokens per streamed chunk (inter_chunk_latency is per chunk)",
		},
		notes: []string{"send times are AIPerf's request start (epoch ns); first-token and chunk times are send + TTFT + the inter_chunk_latency gaps; end is send + request_latency"},
	}
	level := sourceLevel{origin: f.path}
	cfg, cfgPath, err := aiperfSiblingConfig(f.path)
	if err != nil {
		return nil, err
	}
	if cfgPath != "" {
		src.file = f.path
		level.concurrency, level.rateRPS = cfg.concurrency, cfg.rateRPS
		src.engine.Model, src.engine.BaseURL = cfg.model, cfg.url
		if cfg.endpoint != "" && !strings.Contains(cfg.endpoint, "chat") {
			src.workload.Endpoint = "completions"
		}
		if cfg.command != "" {
			src.notes = append(src.notes, "AIPerf command: "+cfg.command)
		}
	} else {
		src.lacks = append(src.lacks, "the load setting and model (profile_export_aiperf.json was not beside the records)")
	}

	var promptSum, outSum, ok int64
	promptMin, promptMax := int64(1<<62), int64(0)
	lines := bytes.Split(f.data, []byte("\n"))
	var minStart int64
	for li, line := range lines {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var rec aiperfRecord
		if err := decodeStrict(line, &rec); err != nil {
			return nil, fmt.Errorf("line %d: %w", li+1, err)
		}
		req, err := aiperfRequest(&rec)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", li+1, err)
		}
		if minStart == 0 || req.sendNS < minStart {
			minStart = req.sendNS
		}
		if req.status == rundir.StatusOK && !req.warmup {
			ok++
			if req.promptTokens != nil {
				promptSum += *req.promptTokens
				promptMin, promptMax = min(promptMin, *req.promptTokens), max(promptMax, *req.promptTokens)
			}
			if req.outputTokens != nil {
				outSum += *req.outputTokens
			}
		}
		level.requests = append(level.requests, req)
	}
	if len(level.requests) == 0 {
		return nil, errors.New("no records")
	}
	src.start = time.Unix(0, minStart)
	if ok > 0 {
		if promptSum > 0 {
			src.workload.Prompt = lengthDist(promptSum, ok, promptMin, promptMax)
		}
		src.workload.Output = rundir.Dist{Kind: "dataset", Mean: float64(outSum) / float64(ok)}
	}
	src.levels = []sourceLevel{level}
	return []*sweepSource{src}, nil
}

func aiperfRequest(rec *aiperfRecord) (sourceRequest, error) {
	md := rec.Metadata
	var req sourceRequest
	req.id = md.XRequestID
	req.warmup = strings.EqualFold(cmp.Or(md.BenchmarkPhase, md.CreditPhase), "warmup")
	switch {
	case md.RequestStartNS != nil:
		req.sendNS = *md.RequestStartNS
	case md.TimestampNS != nil:
		req.sendNS = *md.TimestampNS
	default:
		return req, errors.New("metadata has neither request_start_ns nor timestamp_ns")
	}
	req.promptTokens = rec.count("input_sequence_length", "error_isl")
	latency, hasLatency, err := rec.seconds("request_latency")
	if err != nil {
		return req, err
	}
	switch {
	case hasLatency:
		req.endNS = req.sendNS + nsFromS(latency)
	case md.RequestEndNS != nil:
		req.endNS = *md.RequestEndNS
	default:
		if v := rec.count("max_response_timestamp"); v != nil {
			req.endNS = *v
		} else {
			req.endNS = req.sendNS
		}
	}
	if rec.Error != nil || md.WasCancelled {
		msg, code := "request was cancelled", 0
		if rec.Error != nil {
			msg = strings.TrimSpace(rec.Error.Type + ": " + rec.Error.Message)
			code = rec.Error.Code
		}
		req.status, req.httpStatus = classifyError(msg, code)
		if md.WasCancelled || (rec.Error != nil && aiperfCancelled(rec.Error.Type)) {
			req.status = rundir.StatusCanceled
		}
		req.err = truncate(msg, 500)
		return req, nil
	}
	req.status = rundir.StatusOK
	ttft, hasTTFT, err := rec.seconds("time_to_first_token", "ttft")
	if err != nil {
		return req, err
	}
	req.outputTokens = rec.count("output_sequence_length", "output_token_count")
	if !hasTTFT {
		// A non-streaming request: the end is all we know.
		return req, nil
	}
	first := req.sendNS + nsFromS(ttft)
	req.firstNS = &first
	gaps, err := rec.gapsSeconds("inter_chunk_latency")
	if err != nil {
		return req, err
	}
	req.chunkNS = chunkTimes(first, gaps)
	return req, nil
}

// aiperfSiblingConfig reads profile_export_aiperf.json next to a records
// file, if there is one.
func aiperfSiblingConfig(recordsPath string) (aiperfConfig, string, error) {
	p := filepath.Join(filepath.Dir(recordsPath), "profile_export_aiperf.json")
	data, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return aiperfConfig{}, "", nil
	}
	if err != nil {
		return aiperfConfig{}, "", err
	}
	var sum aiperfSummaryFile
	if err := decodeStrict(data, &sum); err != nil {
		return aiperfConfig{}, "", fmt.Errorf("%s: %w", p, err)
	}
	return sum.config(), p, nil
}

// aiperfSummaryFile is profile_export_aiperf.json. Older versions nest the
// metrics under "records"; newer ones put them at the top level.
type aiperfSummaryFile struct {
	Records     map[string]statBlock `json:"records"`
	InputConfig struct {
		Endpoint struct {
			ModelNames []string `json:"model_names"`
			Type       string   `json:"type"`
			URL        string   `json:"url"`
			Streaming  *bool    `json:"streaming"`
		} `json:"endpoint"`
		Loadgen struct {
			Concurrency *int64   `json:"concurrency"`
			RequestRate *float64 `json:"request_rate"`
		} `json:"loadgen"`
		// AIPerf's config files (0.10 and later) name the load per phase
		// (phases: a list, or a map by name, in different versions) and
		// the models under models.items; kept raw so a shape not known
		// here costs those fields, not the file.
		Phases     json.RawMessage `json:"phases"`
		Models     json.RawMessage `json:"models"`
		CLICommand string          `json:"cli_command"`
	} `json:"input_config"`
	CLICommand string `json:"cli_command"`
	StartTime  string `json:"start_time"`
	EndTime    string `json:"end_time"`
	// ErrorSummary counts the failed requests by error; the ones AIPerf
	// cancelled itself (--request-cancellation-rate: "the client
	// disconnects before receiving the full response") are of type
	// RequestCancellationError, code 499.
	ErrorSummary []struct {
		ErrorDetails struct {
			Code int    `json:"code"`
			Type string `json:"type"`
		} `json:"error_details"`
		Count int64 `json:"count"`
	} `json:"error_summary"`
}

// parseLocalTime reads AIPerf's start_time/end_time (naive local time, or
// RFC 3339); zero when absent or unreadable.
func parseLocalTime(s string) time.Time {
	for _, layout := range []string{"2006-01-02T15:04:05.999999", time.RFC3339Nano} {
		if t, err := time.Parse(layout, s); err == nil {
			return t
		}
	}
	return time.Time{}
}

// statBlock is one metric of AIPerf's and GenAI-Perf's aggregate files:
// its unit and the statistics the tool computed.
type statBlock struct {
	Unit  string   `json:"unit"`
	Avg   *float64 `json:"avg"`
	P50   *float64 `json:"p50"`
	P90   *float64 `json:"p90"`
	P99   *float64 `json:"p99"`
	Count *int64   `json:"count"`
}

func (s *aiperfSummaryFile) config() aiperfConfig {
	ic := s.InputConfig
	c := aiperfConfig{endpoint: ic.Endpoint.Type, url: redactURL(ic.Endpoint.URL), command: redactCommand(cmp.Or(ic.CLICommand, s.CLICommand))}
	if len(ic.Endpoint.ModelNames) > 0 {
		c.model = ic.Endpoint.ModelNames[0]
	}
	if c.model == "" {
		var models struct {
			Items []struct {
				Name string `json:"name"`
			} `json:"items"`
		}
		if json.Unmarshal(ic.Models, &models) == nil && len(models.Items) > 0 {
			c.model = models.Items[0].Name
		}
	}
	if ic.Loadgen.Concurrency != nil {
		c.concurrency = *ic.Loadgen.Concurrency
	}
	if ic.Loadgen.RequestRate != nil {
		c.rateRPS = *ic.Loadgen.RequestRate
	}
	if c.concurrency == 0 && c.rateRPS == 0 {
		c.concurrency, c.rateRPS, c.phaseProblem = profilingPhase(ic.Phases)
	}
	c.start, c.end = parseLocalTime(s.StartTime), parseLocalTime(s.EndTime)
	for _, e := range s.ErrorSummary {
		if aiperfCancelled(e.ErrorDetails.Type) {
			c.cancelled += e.Count
		}
	}
	return c
}

// aiperfPhase is one phase of an AIPerf config: the results hold the
// phases not excluded from them (warm-up is); a concurrency phase sets
// concurrency, a rate phase (constant, poisson, gamma) its rate, with
// concurrency as its cap.
type aiperfPhase struct {
	Name               string   `json:"name"`
	Kind               string   `json:"kind"`
	Type               string   `json:"type"`
	ExcludeFromResults bool     `json:"exclude_from_results"`
	Concurrency        *int64   `json:"concurrency"`
	Rate               *float64 `json:"rate"`
	RequestRate        *float64 `json:"request_rate"`
}

// profilingPhase reads the load of the one phase in the results; problem
// says why there is none (no phases, or several, whose loads the
// aggregates mix).
func profilingPhase(raw json.RawMessage) (concurrency int64, rateRPS float64, problem string) {
	var list []aiperfPhase
	if json.Unmarshal(raw, &list) != nil {
		var byName map[string]aiperfPhase
		if json.Unmarshal(raw, &byName) != nil {
			return 0, 0, ""
		}
		for _, name := range slices.Sorted(maps.Keys(byName)) {
			p := byName[name]
			p.Name = cmp.Or(p.Name, name)
			list = append(list, p)
		}
	}
	var in []aiperfPhase
	for _, p := range list {
		if !p.ExcludeFromResults && p.Kind != "warmup" {
			in = append(in, p)
		}
	}
	switch {
	case len(in) == 0:
		return 0, 0, ""
	case len(in) > 1:
		var names []string
		for _, p := range in {
			names = append(names, p.Name)
		}
		return 0, 0, fmt.Sprintf("its results hold %d phases (%s), whose loads the aggregates mix", len(in), strings.Join(names, ", "))
	}
	p := in[0]
	if p.Concurrency != nil {
		concurrency = *p.Concurrency
	}
	if r := cmp.Or(p.Rate, p.RequestRate); r != nil && p.Type != "concurrency" {
		rateRPS = *r
	}
	return concurrency, rateRPS, ""
}

// aiperfCancelled reports whether an AIPerf error type is a request the
// tool cancelled itself.
func aiperfCancelled(errType string) bool {
	return strings.Contains(errType, "Cancel")
}

// AIPerfPercentileMethod names where the percentiles of a summary import
// come from.
const AIPerfPercentileMethod = "as AIPerf computed them (profile_export_aiperf.json)"

func parseAIPerfSummary(f fileRef) ([]*sweepSource, error) {
	var sum aiperfSummaryFile
	if err := decodeStrict(f.values[0], &sum); err != nil {
		return nil, err
	}
	if sum.Records == nil {
		// Newer layout: the metric blocks are top-level entries.
		var top map[string]json.RawMessage
		if err := json.Unmarshal(f.values[0], &top); err != nil {
			return nil, err
		}
		sum.Records = map[string]statBlock{}
		for k, v := range top {
			var st statBlock
			if json.Unmarshal(v, &st) == nil && st.Unit != "" {
				sum.Records[k] = st
			}
		}
	}
	cfg := sum.config()
	tool := "AIPerf (profile_export_aiperf.json)"
	var sideNote string
	if f.syntax == "csv" {
		// The CSV export has the statistics only: the load setting and the
		// model are in the JSON export beside it.
		tool = "AIPerf (profile_export_aiperf.csv)"
		side, sidePath, err := aiperfSiblingConfig(f.path)
		if err != nil {
			return nil, err
		}
		if sidePath == "" {
			return nil, errors.New("AIPerf's CSV export records no load setting: import profile_export_aiperf.json or profile_export.jsonl instead (or keep the CSV beside profile_export_aiperf.json)")
		}
		cfg = side
		sideNote = "the load setting, model and times are from " + sidePath + " beside the CSV"
	}
	src := &sweepSource{
		kind: KindAIPerfSummary, tool: tool, file: f.path, sha256: f.sha256(),
		engine:   rundir.Engine{Name: "unknown (OpenAI-compatible server measured with AIPerf)", Model: cfg.model, BaseURL: cfg.url},
		workload: rundir.Workload{Endpoint: "chat"},
		lacks: []string{
			"per-request and per-token times (import profile_export.jsonl, or the artifact directory, for those)",
			"server log and /metrics", "GPU, driver and engine version", "server flags",
		},
	}
	if cfg.endpoint != "" && !strings.Contains(cfg.endpoint, "chat") {
		src.workload.Endpoint = "completions"
	}
	if cfg.command != "" {
		src.notes = append(src.notes, "AIPerf command: "+cfg.command)
	}
	if sideNote != "" {
		src.notes = append(src.notes, sideNote)
	}
	if !cfg.start.IsZero() {
		src.start, src.end = cfg.start, cfg.end
		src.notes = append(src.notes, "start_time and end_time are AIPerf's, local times of an unknown zone read as UTC")
	}
	stat := func(tags ...string) (statBlock, float64) {
		for _, t := range tags {
			if s, ok := sum.Records[t]; ok {
				scale, isTime := unitSeconds(s.Unit)
				if !isTime {
					scale = 1
				}
				return s, scale
			}
		}
		return statBlock{}, 0
	}
	val := func(p *float64, scale float64) float64 {
		if p == nil {
			return 0
		}
		return *p * scale
	}
	row := &rundir.LevelStatsRow{PercentileMethod: AIPerfPercentileMethod}
	ttft, sc := stat("time_to_first_token", "ttft")
	row.TTFTP50S, row.TTFTP90S, row.TTFTP99S = val(ttft.P50, sc), val(ttft.P90, sc), val(ttft.P99, sc)
	// AIPerf's inter_token_latency is (latency − TTFT)/(output tokens − 1)
	// per request, headroom's TPOT; its inter_chunk_latency is the gaps
	// between streamed chunks, headroom's ITL.
	tpot, sc := stat("inter_token_latency")
	row.TPOTP50S, row.TPOTP90S, row.TPOTP99S = val(tpot.P50, sc), val(tpot.P90, sc), val(tpot.P99, sc)
	itl, sc := stat("inter_chunk_latency")
	row.ITLP50S, row.ITLP90S, row.ITLP99S = val(itl.P50, sc), val(itl.P90, sc), val(itl.P99, sc)
	e2e, sc := stat("request_latency")
	row.E2EP50S, row.E2EP90S, row.E2EP99S = val(e2e.P50, sc), val(e2e.P90, sc), val(e2e.P99, sc)
	thr, _ := stat("output_token_throughput")
	row.OutputTokPerS = val(thr.Avg, 1)
	rps, _ := stat("request_throughput")
	row.RequestsPerS = val(rps.Avg, 1)
	if d, sc := stat("benchmark_duration"); sc > 0 {
		row.WindowS = val(d.Avg, sc)
	}
	if v, _ := stat("input_sequence_length"); v.Avg != nil {
		row.MeanPromptTokens = *v.Avg
	}
	if v, _ := stat("output_sequence_length"); v.Avg != nil {
		row.MeanOutputTokens = *v.Avg
	}
	if c, _ := stat("request_count"); c.Avg != nil {
		row.RequestsOK = int64(*c.Avg)
	}
	if c, _ := stat("error_request_count"); c.Avg != nil {
		row.Errors = int64(*c.Avg)
	}
	if n := min(cfg.cancelled, row.Errors); n > 0 {
		// AIPerf counts its own cancellations as errors; they are not the
		// server's failures: counted neither completed nor failed.
		row.Errors -= n
		row.Incomplete += n
		src.notes = append(src.notes, fmt.Sprintf("%d requests AIPerf cancelled on purpose (--request-cancellation-rate) are counted neither completed nor failed, not as the server's errors", n))
	}
	if row.OutputTokPerS == 0 {
		return nil, errors.New(`no "output_token_throughput": nothing to import`)
	}
	level := sourceLevel{origin: f.path, concurrency: cfg.concurrency, rateRPS: cfg.rateRPS, stats: row}
	if level.concurrency == 0 && level.rateRPS == 0 {
		if cfg.phaseProblem != "" {
			return nil, errors.New("the load level is unknown: " + cfg.phaseProblem + " (import profile_export.jsonl instead)")
		}
		return nil, errors.New("input_config names no load (loadgen.concurrency or request_rate, or a phase's concurrency or rate): the load level is unknown (import profile_export.jsonl instead)")
	}
	src.levels = []sourceLevel{level}
	return []*sweepSource{src}, nil
}
