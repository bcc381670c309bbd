package servermetrics

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/headroom-llm/headroom/promtext"
)

// Snapshot is one scrape in a saved dump of /metrics.
type Snapshot struct {
	// TimeNS is when the scrape was taken, from a line between scrapes
	// (`date`, an RFC 3339 or Unix time, a "# scraped at ..." comment) or
	// from the samples' own timestamps; 0 when the dump does not say.
	TimeNS int64
	// Line is the 1-based line where the scrape starts.
	Line    int
	Samples []Sample
	// Families is how many metric families the scrape holds, with or
	// without samples.
	Families int
}

// Dump is a saved text dump of /metrics: one scrape (`curl .../metrics >
// dump.txt`), or several written one after another (a loop of `date;
// curl`), in order.
type Dump struct {
	Snapshots []Snapshot
	// Timed is true when every snapshot has a time.
	Timed bool
	// Engine is the engine the metric names show ("" when none).
	Engine string
	// Generation is vLLM's "V0" or "V1" when the names or help texts show
	// it, else "".
	Generation string
	// Help holds each family's HELP text, over all scrapes (the
	// generation of an engine can show in it).
	Help map[string]string
}

// Samples returns every snapshot's samples. Untimed snapshots are placed
// one second apart from 0 so the order survives (Dump.Timed says whether
// the times are real).
func (d *Dump) Samples() []Sample {
	var out []Sample
	for i, s := range d.Snapshots {
		t := s.TimeNS
		if !d.Timed {
			t = int64(i) * int64(time.Second)
		}
		for _, x := range s.Samples {
			if !d.Timed || x.TimeNS == 0 {
				x.TimeNS = t
			}
			out = append(out, x)
		}
	}
	return out
}

// sampleLine is a text-format sample: name, optional labels, value,
// optional timestamp.
var sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?[ \t]+([^ \t]+)([ \t]+-?[0-9]+)?[ \t]*$`)

// LooksLikeDump reports whether data (the start of a file) is Prometheus
// text: a HELP or TYPE line among its first lines, or samples (with a
// number for a value) outnumbering the other lines (a date, a prompt)
// among its first twenty.
func LooksLikeDump(data []byte) bool {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	lines, samples := 0, 0
	for sc.Scan() && lines < 20 {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		lines++
		if strings.HasPrefix(line, "# HELP ") || strings.HasPrefix(line, "# TYPE ") {
			return lines <= 5
		}
		if m := sampleLine.FindStringSubmatch(line); m != nil {
			if _, err := strconv.ParseFloat(m[3], 64); err == nil {
				samples++
			}
		}
	}
	return samples >= 1 && 2*samples > lines
}

// ReadDump reads a saved dump of /metrics with expfmt. Scrapes are told
// apart by a line that is neither a comment nor a sample (a `date` line, a
// timestamp, a shell prompt: its time, if it has one, is the next scrape's),
// by a "# ..." comment holding a time, by a family's HELP or TYPE line
// seen a second time, or by a sample (name and labels) seen a second time.
func ReadDump(r io.Reader) (*Dump, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	d := &Dump{Help: map[string]string{}}
	var chunk bytes.Buffer
	chunkStart, lineNo := 1, 0
	var pendingTime int64
	families := map[string]bool{}
	series := map[string]bool{}
	// Every scrape repeats the names, label sets and help texts of the one
	// before: each is kept once, so a long dump costs its values, not its
	// text.
	in := interner{}
	flush := func() error {
		if len(bytes.TrimSpace(chunk.Bytes())) == 0 {
			chunk.Reset()
			return nil
		}
		snap, err := parseChunk(chunk.Bytes(), chunkStart, in, d.Help)
		if err != nil {
			return err
		}
		if pendingTime != 0 {
			snap.TimeNS = pendingTime
		}
		pendingTime = 0
		if len(snap.Samples) > 0 || snap.Families > 0 {
			d.Snapshots = append(d.Snapshots, snap)
		}
		chunk.Reset()
		clear(families)
		clear(series)
		return nil
	}
	for sc.Scan() {
		lineNo++
		raw := sc.Text()
		line := strings.TrimSpace(raw)
		newScrape, t := false, int64(0)
		switch {
		case line == "":
		case strings.HasPrefix(line, "# HELP ") || strings.HasPrefix(line, "# TYPE "):
			f := strings.Fields(line)
			if len(f) >= 3 {
				key := f[1] + " " + f[2]
				if families[key] {
					newScrape = true
				}
				families[key] = true
			}
		case strings.HasPrefix(line, "#"):
			if t = timeLine(line); t != 0 {
				newScrape = true
			} else {
				continue // a comment of no use (EOF markers, notes)
			}
		default:
			m := sampleLine.FindStringSubmatch(line)
			if m == nil {
				// A separator between scrapes: a date, a prompt, a banner.
				t = timeLine(line)
				newScrape = true
				break
			}
			key := m[1] + m[2]
			if series[key] {
				newScrape = true
			}
			series[key] = true
		}
		if newScrape {
			if err := flush(); err != nil {
				return nil, err
			}
			chunkStart = lineNo
			if t != 0 {
				pendingTime = t
			}
			if !sampleLine.MatchString(line) && !strings.HasPrefix(line, "# HELP ") && !strings.HasPrefix(line, "# TYPE ") {
				chunkStart = lineNo + 1
				continue
			}
			// The repeated HELP/TYPE or sample starts the new scrape.
			if strings.HasPrefix(line, "# ") {
				f := strings.Fields(line)
				families[f[1]+" "+f[2]] = true
			} else if m := sampleLine.FindStringSubmatch(line); m != nil {
				series[m[1]+m[2]] = true
			}
		}
		chunk.WriteString(raw)
		chunk.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("servermetrics: reading the dump: %w", err)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	if len(d.Snapshots) == 0 {
		return nil, fmt.Errorf("servermetrics: no metric families in %d lines", lineNo)
	}
	d.Timed = true
	for _, s := range d.Snapshots {
		if s.TimeNS == 0 {
			d.Timed = false
		}
	}
	// The engine shows in the names: every series once (a scrape's worth,
	// not the whole dump) is enough.
	var series1 []Sample
	seen := map[[2]string]bool{}
	for _, s := range d.Snapshots {
		for _, x := range s.Samples {
			if k := [2]string{x.Name, x.Labels}; !seen[k] {
				seen[k] = true
				series1 = append(series1, Sample{Name: x.Name, Labels: x.Labels})
			}
		}
	}
	d.Engine = DetectEngine(series1)
	if d.Engine == "" {
		// A dump with HELP and TYPE lines but no samples (metrics
		// disabled) still names its engine.
		var names []Sample
		for n := range d.Help {
			names = append(names, Sample{Name: n})
		}
		d.Engine = DetectEngine(names)
	}
	if d.Engine == "vllm" {
		d.Generation = vllmGeneration(d)
	}
	return d, nil
}

// interner keeps one copy of each string.
type interner map[string]string

func (in interner) of(s string) string {
	if v, ok := in[s]; ok {
		return v
	}
	in[s] = s
	return s
}

// parseChunk reads one scrape with expfmt; the families' HELP texts go to
// help.
func parseChunk(text []byte, line int, in interner, help map[string]string) (Snapshot, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return Snapshot{}, fmt.Errorf("servermetrics: the scrape starting at line %d: %w", line, err)
	}
	snap := Snapshot{Line: line}
	inScrape := map[string]bool{}
	names := make([]string, 0, len(fams))
	for n := range fams {
		names = append(names, n)
	}
	sort.Strings(names)
	snap.Samples = promtext.Flatten(fams, 0)
	for i := range snap.Samples {
		x := &snap.Samples[i]
		x.Name, x.Labels = in.of(x.Name), in.of(x.Labels)
	}
	snap.Samples = slices.Clip(snap.Samples)
	stamps := map[int64]bool{}
	for _, n := range names {
		mf := fams[n]
		inScrape[n] = true
		if h := mf.GetHelp(); h != "" || len(mf.GetMetric()) == 0 {
			help[in.of(n)] = in.of(h)
		}
		for _, m := range mf.GetMetric() {
			if m.TimestampMs != nil {
				stamps[m.GetTimestampMs()] = true
			}
		}
	}
	// expfmt leaves out families without samples; their HELP lines still
	// name the metrics (a dump of an engine with metrics disabled).
	for _, l := range strings.Split(string(text), "\n") {
		if f := strings.SplitN(strings.TrimSpace(l), " ", 4); len(f) >= 3 && f[0] == "#" && f[1] == "HELP" {
			if !inScrape[f[2]] && fams[f[2]] == nil {
				inScrape[f[2]] = true
				if len(f) == 4 {
					help[in.of(f[2])] = in.of(f[3])
				} else {
					help[in.of(f[2])] = ""
				}
			}
		}
	}
	snap.Families = len(inScrape)
	if len(stamps) == 1 {
		for ms := range stamps {
			snap.TimeNS = ms * int64(time.Millisecond)
		}
	}
	return snap, nil
}

var (
	isoTime  = regexp.MustCompile(`\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2}| ?[A-Z]{2,5})?`)
	unixTime = regexp.MustCompile(`(^|[^0-9.])(1[0-9]{9})(\.[0-9]+)?([^0-9]|$)`)
	dateTime = regexp.MustCompile(`[A-Z][a-z]{2} [A-Z][a-z]{2} [ 0-3]?[0-9] [0-9]{2}:[0-9]{2}:[0-9]{2}( [AP]M)? [A-Z]{2,5} [0-9]{4}`)
)

// timeLine reads the time a separator line holds: RFC 3339 or
// "2006-01-02 15:04:05" (UTC unless it says), date(1)'s default output, or
// Unix seconds (a ten-digit number); 0 when it holds none.
func timeLine(line string) int64 {
	if m := isoTime.FindString(line); m != "" {
		m = strings.Replace(m, " ", "T", 1)
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999Z0700", "2006-01-02T15:04:05.999999999", "2006-01-02T15:04:05.999999999 MST", "2006-01-02T15:04:05.999999999MST"} {
			if t, err := time.Parse(layout, m); err == nil {
				return t.UnixNano()
			}
		}
	}
	if m := dateTime.FindString(line); m != "" {
		for _, layout := range []string{"Mon Jan _2 15:04:05 MST 2006", "Mon Jan _2 03:04:05 PM MST 2006", "Mon Jan 2 15:04:05 MST 2006"} {
			if t, err := time.Parse(layout, m); err == nil {
				return t.UnixNano()
			}
		}
	}
	if m := unixTime.FindStringSubmatch(line); m != nil {
		if v, err := strconv.ParseFloat(m[2]+m[3], 64); err == nil {
			return int64(v * 1e9)
		}
	}
	return 0
}

// vllmGeneration tells vLLM V0 from V1 by names only one of them exposes,
// or by the help text V1 gives num_requests_running.
func vllmGeneration(d *Dump) string {
	has := map[string]bool{}
	help := d.Help
	for _, s := range d.Snapshots {
		for _, x := range s.Samples {
			has[x.Name] = true
		}
	}
	for n := range help {
		has[n] = true
	}
	for _, n := range []string{"vllm:num_requests_swapped", "vllm:cpu_cache_usage_perc", "vllm:gpu_prefix_cache_hit_rate", "vllm:cpu_prefix_cache_hit_rate", "vllm:avg_prompt_throughput_toks_per_s", "vllm:avg_generation_throughput_toks_per_s"} {
		if has[n] {
			return "V0"
		}
	}
	for _, n := range []string{"vllm:kv_cache_usage_perc", "vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total", "vllm:inter_token_latency_seconds_bucket", "vllm:request_prefill_time_seconds_bucket"} {
		if has[n] {
			return "V1"
		}
	}
	if strings.Contains(help["vllm:num_requests_running"], "model execution batches") {
		return "V1"
	}
	return ""
}
