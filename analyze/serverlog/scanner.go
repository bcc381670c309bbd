package serverlog

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unsafe"
)

// Defaults for Options fields left at zero.
const (
	DefaultMaxLineBytes    = 1 << 20 // longer lines are cut (and counted in Counts.Long)
	DefaultDetectLines     = 2000    // lines read ahead to detect the engine
	DefaultMaxSyntaxErrors = 100     // syntax errors kept; more are only counted
	detectBytes            = 8 << 20 // read-ahead limit for detection, in bytes
	readBufferBytes        = 64 << 10
	maxRawBytes            = 64 << 10 // Event.Raw is cut to this length
)

// Options control a Scanner. The zero value detects the engine, reads
// times without a zone as UTC and leaves the year of vLLM's "MM-DD"
// stamps unknown (year 0).
type Options struct {
	// Engine selects the parser; EngineUnknown detects it from the first
	// lines.
	Engine Engine
	// Year is the year of the first stamps that do not print one (vLLM,
	// journald short). Zero takes the year from Reference. Either way the
	// year moves on by one where the stamps run from November or December
	// into January or February; other backward jumps keep the year.
	Year int
	// Location is the zone of stamps that do not print one (vLLM, SGLang).
	// Nil means UTC.
	Location *time.Location
	// Reference is a time near the start of the log, typically the run's
	// start time. It supplies the year when Year is zero and anchors
	// llama.cpp's relative --log-timestamps stamps.
	Reference time.Time
	// Clock, when set, gives each event its client receive time
	// (Event.RecvTime) from the capture sidecar; see Align.
	Clock LineClock
	// File names the input in SyntaxErrors.
	File string
	// MaxLineBytes bounds the memory used for one line.
	MaxLineBytes int
	// DetectLines bounds the read-ahead used to detect the engine.
	DetectLines int
	// MaxSyntaxErrors bounds how many SyntaxErrors are kept.
	MaxSyntaxErrors int
}

// Counts summarise what a Scanner has read so far.
type Counts struct {
	Lines   int64 // lines read
	Events  int64 // lines that produced an event
	Ignored int64 // lines in a known format with nothing to extract
	Unknown int64 // lines in no known format (tracebacks, progress bars, other tools)
	Bad     int64 // lines that looked like a known record but could not be read
	Long    int64 // lines cut at Options.MaxLineBytes
	Wrapped int64 // lines that came inside a container, journald or CI wrapper
	// Duplicates are events another parallel rank had already printed
	// (the same message, another rank, within a couple of seconds); they
	// are not returned.
	Duplicates int64
	// Rejoined are lines a terminal or a copy hard-wrapped, joined back to
	// the line before them (each pair is read as one record).
	Rejoined int64
}

// SyntaxError is a line that looked like a known record but could not be
// read. It is not fatal: the scan goes on.
type SyntaxError struct {
	File string
	Line int64
	Msg  string
}

func (e *SyntaxError) Error() string {
	if e.File == "" {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// status is what a parser made of a line.
type status uint8

const (
	stUnknown status = iota
	stIgnored
	stEvent
	stBad
	stNext // a message rule's prefix matched, but the line is not its own (rules.go)
)

// Scanner reads a server log line by line and yields an Event for each
// line it recognises.
type Scanner struct {
	r      *bufio.Reader
	opts   Options
	engine Engine

	detected   bool
	pending    [][]byte
	pendingPos int
	eof        bool
	err        error
	long       []byte

	line    int64
	counts  Counts
	synErrs []*SyntaxError
	badMsg  string

	ev        Event
	lineStamp stamp
	u         unwrapper
	raws      rawArena

	// year inference for stamps without a year
	lastMon   int
	yearShift int

	// llama.cpp: the slot/task of an open multi-line timing block
	timingSlot, timingTask int
	timingOpen             bool
	// llama.cpp: the line that dropped an idle slot's prompt (kvEvict)
	evictedAt int64

	// tbTop: the entry point of the current Python traceback was reported.
	tbTop bool
	// engineProc: the vLLM line came from an engine-core or worker process
	// (its "(EngineCore_0 pid=7) " or "(Worker_TP0 pid=9) " prefix).
	engineProc bool

	// the test engine's and transformers-cb's fields of the current line
	// (nodeFields), kept to be reused by the next
	nodeToks []string
	nodeKVs  []nodeKV

	// recent rank-tagged events, to fold the copies other ranks print
	recent []rankedEvent
	ranks  map[string]string // interned rank tags: a log has few

	// hard-wrapped lines: the line read ahead (peeked), the buffer a line
	// and its continuation are joined in, and the first line of the record
	peeked  []byte
	joinBuf []byte
	first   int64

	vllmSrc []byte // the source location of the vLLM record being read ("loggers.py:123")
	genSeen string // the first vLLM generation a line's shape showed
}

// Generation returns the vLLM generation ("V0", "V1") the first line that
// showed one had, events or not (traceback frames of a V1 engine core show
// it too); "" when none did.
func (s *Scanner) Generation() string { return s.genSeen }

// mayWrap reports whether raw may be the first part of a record that a
// terminal or a copy hard-wrapped: a long Python-engine line (vLLM,
// SGLang) that ends inside a word. Such wraps cut stats records and
// traceback frames at a fixed width, the next line going on without any
// prefix.
func (s *Scanner) mayWrap(raw []byte) bool {
	if (s.engine != EngineVLLM && s.engine != EngineSGLang) || len(raw) < 80 {
		return false
	}
	c := raw[len(raw)-1]
	return c == '_' || c == '/' || isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'z')
}

// isContinuation reports whether a line can be the rest of a hard-wrapped
// one: it starts inside a word (a lower-case letter or '_') and carries no
// wrapper (a compose service name, a journald host) and no record of its
// own (a level word, an NCCL line: "host:pid:tid [0] NCCL INFO ...").
func isContinuation(next []byte, u *unwrapper) bool {
	if len(next) == 0 || !(next[0] == '_' || (next[0] >= 'a' && next[0] <= 'z')) {
		return false
	}
	if _, _, kinds := u.unwrap(next); kinds&^(wrapANSI|wrapCR) != 0 {
		return false
	}
	return !contains(next, " INFO ") && !contains(next, " WARNING ") && !contains(next, " ERROR ") && !contains(next, "NCCL")
}

// rejoin reads the line after raw and, when it continues raw (it starts
// inside a word: a lower-case letter or '_', where no record of these
// engines starts), returns the two joined; otherwise it returns raw and
// keeps the line read for the next Scan.
func (s *Scanner) rejoin(raw []byte) []byte {
	s.joinBuf = append(s.joinBuf[:0], raw...)
	next, ok := s.nextLine()
	if !ok {
		return s.joinBuf
	}
	if !isContinuation(next, &s.u) {
		s.peeked = next
		return s.joinBuf
	}
	s.joinBuf = append(s.joinBuf, next...)
	s.line++
	s.counts.Lines++
	s.counts.Rejoined++
	return s.joinBuf
}

// intern returns b as a string, allocating once per distinct value.
func (s *Scanner) intern(b []byte) string {
	if v, ok := s.ranks[bstr(b)]; ok {
		return v
	}
	v := string(b)
	if s.ranks == nil {
		s.ranks = map[string]string{}
	}
	if len(s.ranks) < 1024 {
		s.ranks[v] = v
	}
	return v
}

// rankedEvent is an event a parallel rank printed: its content, when and
// which ranks printed it.
type rankedEvent struct {
	key   string
	time  time.Time
	line  int64
	ranks []string
}

// Ranks print the same message within this long of each other, and an
// event is compared with the ones at most this many lines before it.
const (
	rankSkew      = 2 * time.Second
	rankLookBack  = 256
	maxRankedKept = 64
)

// duplicate reports whether the event just read is another rank's copy of
// an event already returned: the same kind and content, from a rank not
// yet seen for it, within rankSkew (or, without times, rankLookBack lines).
func (s *Scanner) duplicate() bool {
	ev := &s.ev
	if ev.Rank == "" {
		return false
	}
	key := rankKey(ev)
	if key == "" {
		return false
	}
	// forget what is too old to be copied
	keep := s.recent[:0]
	for _, r := range s.recent {
		if ev.Line-r.line <= rankLookBack {
			keep = append(keep, r)
		}
	}
	s.recent = keep
	for i := range s.recent {
		r := &s.recent[i]
		if r.key != key || slices.Contains(r.ranks, ev.Rank) {
			continue
		}
		near := ev.Time.IsZero() || r.time.IsZero()
		if !near {
			d := ev.Time.Sub(r.time)
			near = d >= -rankSkew && d <= rankSkew
		}
		if near {
			r.ranks = append(r.ranks, ev.Rank)
			return true
		}
	}
	if len(s.recent) == maxRankedKept {
		s.recent = s.recent[1:]
	}
	s.recent = append(s.recent, rankedEvent{key: key, time: ev.Time, line: ev.Line, ranks: []string{ev.Rank}})
	return false
}

// rankKey is what two ranks' copies of an event have in common: its kind,
// its data-parallel group and its content; "" for events that ranks do
// not copy (statistics: each data-parallel scheduler prints its own).
func rankKey(ev *Event) string {
	group := ""
	if i := strings.Index(ev.Rank, "DP"); i >= 0 {
		group, _, _ = strings.Cut(ev.Rank[i:], " ")
	}
	switch ev.Kind {
	case KindPreemption:
		p := &ev.Preemption
		return fmt.Sprintf("p|%s|%s|%d|%s|%g|%g", group, p.Mode, p.Count, p.RequestID, p.NewTokenRatioBefore, p.NewTokenRatioAfter)
	case KindError, KindWarning, KindKVFull:
		return fmt.Sprintf("%d|%s|%s|%s", ev.Kind, group, ev.Problem.Class, ev.Problem.Message)
	}
	return ""
}

// NewScanner returns a Scanner reading r.
func NewScanner(r io.Reader, opts Options) *Scanner {
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = DefaultMaxLineBytes
	}
	if opts.DetectLines <= 0 {
		opts.DetectLines = DefaultDetectLines
	}
	if opts.MaxSyntaxErrors <= 0 {
		opts.MaxSyntaxErrors = DefaultMaxSyntaxErrors
	}
	if opts.Location == nil {
		opts.Location = time.UTC
	}
	return &Scanner{
		r:          bufio.NewReaderSize(r, readBufferBytes),
		opts:       opts,
		engine:     opts.Engine,
		timingSlot: -1,
		timingTask: -1,
	}
}

// Scan advances to the next recognised line. It returns false at the end
// of the input or on a read error (see Err).
func (s *Scanner) Scan() bool {
	if !s.detected {
		s.detect()
	}
	for {
		raw, ok := s.nextLine()
		if !ok {
			return false
		}
		s.line++
		s.counts.Lines++
		s.first = s.line
		if s.mayWrap(raw) {
			raw = s.rejoin(raw)
		}
		switch s.parse(raw) {
		case stEvent:
			if s.genSeen == "" {
				s.genSeen = s.ev.Generation
			}
			s.finishEvent(raw)
			if s.ev.Kind == KindKVFull && s.engine == EngineLlamaCpp && s.purgeFollows() {
				// the allocation the server answers by dropping an idle
				// slot's prompt: the purge line is the event (kvEvict)
				s.counts.Ignored++
				continue
			}
			if s.duplicate() {
				s.counts.Duplicates++
				continue
			}
			s.counts.Events++
			return true
		case stIgnored:
			s.counts.Ignored++
			if s.genSeen == "" {
				s.genSeen = s.ev.Generation
			}
		case stBad:
			s.counts.Bad++
			if len(s.synErrs) < s.opts.MaxSyntaxErrors {
				s.synErrs = append(s.synErrs, &SyntaxError{File: s.opts.File, Line: s.line, Msg: s.badMsg})
			}
		default:
			s.counts.Unknown++
		}
	}
}

// purgeFollows peeks at the next line (kept for the next Scan): does
// llama-server drop an idle slot's prompt there? raw must not be used
// after this call.
func (s *Scanner) purgeFollows() bool {
	next, ok := s.nextLine()
	if !ok {
		return false
	}
	s.peeked = next
	return contains(next, "purging slot ")
}

// Event returns the event found by the last call to Scan. The Event is
// overwritten by the next call to Scan; copy it (ev := *s.Event()) to keep
// it.
func (s *Scanner) Event() *Event { return &s.ev }

// Err returns the first read error, if any. A clean end of input is not an
// error.
func (s *Scanner) Err() error { return s.err }

// Engine returns the engine given in Options or detected from the log;
// EngineUnknown if detection found nothing.
func (s *Scanner) Engine() Engine {
	if !s.detected {
		s.detect()
	}
	return s.engine
}

// Counts returns the line counts so far.
func (s *Scanner) Counts() Counts { return s.counts }

// SyntaxErrors returns the first Options.MaxSyntaxErrors syntax errors.
func (s *Scanner) SyntaxErrors() []*SyntaxError { return s.synErrs }

// detect reads ahead until a line names the engine, keeping the lines read
// so that Scan replays them.
func (s *Scanner) detect() {
	s.detected = true
	if s.engine != EngineUnknown {
		return
	}
	size := 0
	// Request lines (admit, preempt, finish) are common to the test engine
	// and transformers-cb: they decide only if no other line does. So do
	// paths in tracebacks and module-qualified exception names.
	weak := false
	weakEngine := EngineUnknown
	defer func() {
		switch {
		case s.engine != EngineUnknown:
		case weak:
			s.engine = EngineNodeLlamaCpp
		case weakEngine != EngineUnknown:
			s.engine = weakEngine
		}
	}()
	for len(s.pending) < s.opts.DetectLines && size < detectBytes {
		line, ok := s.readLine()
		if !ok {
			return
		}
		cp := append([]byte(nil), line...)
		s.pending = append(s.pending, cp)
		size += len(cp)
		msg, _, _ := s.u.unwrap(cp)
		if e := loggerEngine(s.u.logger); e != EngineUnknown {
			s.engine = e
			return
		}
		switch e := detectLine(msg); e {
		case EngineUnknown:
			if weakEngine == EngineUnknown {
				weakEngine = detectWeak(msg)
			}
		case engineEventLog:
			weak = true
		default:
			s.engine = e
			return
		}
	}
}

func (s *Scanner) nextLine() ([]byte, bool) {
	if s.peeked != nil {
		l := s.peeked
		s.peeked = nil
		return l, true
	}
	if s.pendingPos < len(s.pending) {
		l := s.pending[s.pendingPos]
		s.pending[s.pendingPos] = nil
		s.pendingPos++
		if s.pendingPos == len(s.pending) {
			s.pending, s.pendingPos = nil, 0
		}
		return l, true
	}
	return s.readLine()
}

// readLine returns the next line without its line break. Lines longer than
// MaxLineBytes are cut; the rest of such a line is skipped.
func (s *Scanner) readLine() ([]byte, bool) {
	if s.eof {
		return nil, false
	}
	line, err := s.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		s.long = append(s.long[:0], line...)
		cut := false
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = s.r.ReadSlice('\n')
			if room := s.opts.MaxLineBytes - len(s.long); room > 0 {
				if len(line) > room {
					s.long = append(s.long, line[:room]...)
					cut = true
				} else {
					s.long = append(s.long, line...)
				}
			} else if len(line) > 0 && !(len(line) == 1 && line[0] == '\n') {
				cut = true
			}
		}
		if len(s.long) > s.opts.MaxLineBytes {
			s.long = s.long[:s.opts.MaxLineBytes]
			cut = true
		}
		if cut {
			s.counts.Long++
		}
		line = s.long
	}
	if err != nil {
		s.eof = true
		if !errors.Is(err, io.EOF) {
			s.err = fmt.Errorf("serverlog: reading %s after line %d: %w", s.fileName(), s.line+int64(len(s.pending)), err)
		}
		if len(line) == 0 {
			return nil, false
		}
	}
	for len(line) > 0 && (line[len(line)-1] == '\n' || line[len(line)-1] == '\r') {
		line = line[:len(line)-1]
	}
	return line, true
}

func (s *Scanner) fileName() string {
	if s.opts.File == "" {
		return "input"
	}
	return s.opts.File
}

// parse unwraps one line and hands it to the engine's parser.
func (s *Scanner) parse(raw []byte) status {
	s.ev = Event{}
	s.lineStamp = stamp{}
	s.badMsg = ""
	msg, wst, kinds := s.u.unwrap(raw)
	if kinds&^(wrapANSI|wrapCR) != 0 && !(isEventLog(s.engine) && kinds&^(wrapANSI|wrapCR) == wrapISO) {
		s.counts.Wrapped++
	}
	if wst.better(s.lineStamp) {
		s.lineStamp = wst
	}
	wrapperStamp := s.lineStamp
	st, known := s.parseAs(s.engine, msg, wrapperStamp)
	if !known {
		st = s.parseAny(msg, wrapperStamp)
	}
	if st == stEvent && wrapperStamp.q != TimeNone && !s.lineStamp.better(wrapperStamp) {
		// A wrapper time beats the engine's own stamp unless the engine's
		// is more complete: the wrapper's is the capture time, usually
		// zoned and sub-second, where vLLM prints whole seconds without a
		// year or zone.
		s.lineStamp = wrapperStamp
	}
	return st
}

// parseAny tries every engine's parser; used when detection found nothing.
func (s *Scanner) parseAny(msg []byte, wst stamp) status {
	best := stUnknown
	for _, e := range Engines {
		s.ev = Event{}
		if e == EngineTransformersCB {
			continue // same parser as the test engine, tried just above
		}
		s.lineStamp = wst
		st, _ := s.parseAs(e, msg, wst)
		if st == stEvent {
			s.ev.Engine = e
			return st
		}
		if st > best {
			best = st
		}
	}
	s.ev = Event{}
	return best
}

// parseAs hands msg to engine e's parser (wst: the wrapper's stamp);
// false when e has none (not detected yet).
func (s *Scanner) parseAs(e Engine, msg []byte, wst stamp) (status, bool) {
	switch e {
	case EngineVLLM:
		return s.parseVLLM(msg), true
	case EngineSGLang:
		return s.parseSGLang(msg), true
	case EngineLlamaCpp:
		return s.parseLlama(msg), true
	case EngineNodeLlamaCpp, EngineTransformersCB:
		return s.parseNode(msg, wst), true
	}
	return stUnknown, false
}

// bad marks the line as a syntax error.
func (s *Scanner) bad(format string, args ...any) status {
	s.badMsg = fmt.Sprintf(format, args...)
	return stBad
}

// finishEvent fills the fields every event has.
func (s *Scanner) finishEvent(raw []byte) {
	ev := &s.ev
	ev.Line = s.first
	if len(raw) > maxRawBytes {
		raw = raw[:maxRawBytes]
	}
	ev.Raw = s.raws.str(raw)
	if ev.Engine == EngineUnknown {
		ev.Engine = s.engine
	}
	ev.Time, ev.TimeQuality, ev.Elapsed = s.resolve(s.lineStamp)
	if s.opts.Clock != nil {
		if ns, ok := s.opts.Clock.RecvTimeNS(s.first); ok {
			ev.RecvTime = time.Unix(0, ns)
		}
	}
}

// resolve turns a stamp into a time, supplying the year and zone from
// Options where the line lacks them.
func (s *Scanner) resolve(st stamp) (time.Time, TimeQuality, time.Duration) {
	switch st.q {
	case TimeComplete:
		return st.t, TimeComplete, 0
	case TimeNoZone:
		return time.Date(st.year, time.Month(st.mon), st.day, st.h, st.m, st.s, st.n, s.opts.Location), TimeNoZone, 0
	case TimeNoYear:
		y := s.inferYear(st.mon)
		return time.Date(y, time.Month(st.mon), st.day, st.h, st.m, st.s, st.n, s.opts.Location), TimeNoYear, 0
	case TimeClock:
		y, mon, day := 0, time.January, 1
		if !s.opts.Reference.IsZero() {
			r := s.opts.Reference.In(s.opts.Location)
			y, mon, day = r.Date()
		}
		return time.Date(y, mon, day, st.h, st.m, st.s, st.n, s.opts.Location), TimeClock, 0
	case TimeRelative:
		if s.opts.Reference.IsZero() {
			return time.Time{}, TimeRelative, st.elapsed
		}
		return s.opts.Reference.Add(st.elapsed), TimeRelative, st.elapsed
	}
	return time.Time{}, TimeNone, 0
}

// newYear reports whether a stamp in month next following one in month prev
// crossed a new year. Only November/December to January/February counts:
// other backward jumps (a log concatenated from several runs, clock resets)
// keep the year rather than inventing years.
func newYear(prev, next int) bool {
	return prev >= 11 && next <= 2
}

// inferYear gives the year of a month-day stamp: Options.Year, else the
// year of Options.Reference, moved on by one each time the log runs from
// December into January.
func (s *Scanner) inferYear(mon int) int {
	base := s.opts.Year
	if base == 0 && !s.opts.Reference.IsZero() {
		base = s.opts.Reference.Year()
		if s.lastMon == 0 && newYear(int(s.opts.Reference.Month()), mon) {
			// The run started in December and the first line is January.
			s.yearShift = 1
		}
	}
	if s.lastMon != 0 && newYear(s.lastMon, mon) {
		s.yearShift++
	}
	s.lastMon = mon
	if base == 0 {
		return 0
	}
	return base + s.yearShift
}

// rawArena copies Event.Raw strings into shared chunks: one allocation per
// 256 KiB of events instead of one per event, which matters when most
// lines are events. Bytes handed out are never written again, so the
// strings stay valid; a chunk lives as long as any string into it.
type rawArena struct{ buf []byte }

const rawChunk = 256 << 10

func (a *rawArena) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > rawChunk/16 {
		return string(b)
	}
	if cap(a.buf)-len(a.buf) < len(b) {
		a.buf = make([]byte, 0, rawChunk)
	}
	start := len(a.buf)
	a.buf = append(a.buf, b...)
	return unsafe.String(&a.buf[start], len(b))
}
