package analyze

import (
	"math"
	"reflect"
	"strings"
	"sync"

	"github.com/headroom-llm/headroom/rundir"
)

// maxRequestS is the longest a request can take and still be a request:
// longer times are corrupt or an overflow (an imported 1e308).
const maxRequestS = 1e6

// bufferedShare: when at least this share of the multi-chunk successful
// requests arrived in one read, the run's stream was buffered.
const bufferedShare = 0.5

// sanitize leaves out the values of run's rows that no analysis can use,
// at the boundary where they are read, and records what it did and what
// the data says about itself in run.Notes.
func (run *Run) sanitize() {
	if run.sanitized {
		return
	}
	run.sanitized = true
	finiteRowsOf(run, &run.GEMM, rundir.TableProbeGEMM)
	finiteRowsOf(run, &run.Bandwidth, rundir.TableProbeBandwidth)
	finiteRowsOf(run, &run.Levels, rundir.TableLevels)
	finiteRowsOf(run, &run.Requests, rundir.TableRequests)
	finiteRowsOf(run, &run.Metrics, rundir.TableServerMetrics)
	finiteRowsOf(run, &run.GPU, rundir.TableGPUTelemetry)
	finiteRowsOf(run, &run.Client, rundir.TableClientSamples)
	finiteRowsOf(run, &run.LevelStat, rundir.TableLevelStats)
	finiteRowsOf(run, &run.ServerCPU, rundir.TableServerCPU)

	of := len(run.Requests)
	run.Requests = keep(run.Requests, goodTimes)
	run.note(NoteBadTimes, rundir.TableRequests, of-len(run.Requests), of)
	of = len(run.LevelStat)
	run.LevelStat = keep(run.LevelStat, goodStats)
	run.note(NoteBadTimes, rundir.TableLevelStats, of-len(run.LevelStat), of)

	if buffered, multi := bufferedRequests(run.Requests, run.Tokens); multi > 0 && float64(buffered) >= bufferedShare*float64(multi) {
		run.note(NoteBufferedStream, rundir.TableTokens, buffered, multi)
	}
}

// note records that n of the of rows of table were of kind.
func (run *Run) note(kind, table string, n, of int) {
	if n > 0 {
		run.Notes = append(run.Notes, Note{Kind: kind, Table: table, Count: n, Of: of})
	}
}

// finiteRowsOf applies finiteRows to one of run's tables and notes what it
// left out.
func finiteRowsOf[T any](run *Run, rows *[]T, table string) {
	kept, n, of := finiteRows(*rows)
	*rows = kept
	run.note(NoteNonFinite, table, n, of)
}

// goodTimes reports a request whose times are in order and in range.
func goodTimes(r rundir.RequestRow) bool {
	maxNS := int64(maxRequestS * 1e9)
	if r.EndNS < r.SendNS || r.EndNS-r.SendNS > maxNS {
		return false
	}
	if f := r.FirstTokenNS; f != nil && (*f < r.SendNS || *f > r.EndNS) {
		return false
	}
	return true
}

// goodStats reports imported statistics that can be times and rates: none
// negative, and no time (a field in seconds) longer than any request.
func goodStats(s rundir.LevelStatsRow) bool {
	v := reflect.ValueOf(s)
	for _, i := range fieldsOf(v.Type()).plain {
		x, name := v.Field(i).Float(), v.Type().Field(i).Name
		seconds := strings.HasSuffix(name, "S") && !strings.HasSuffix(name, "PerS")
		if x < 0 || seconds && x > maxRequestS {
			return false
		}
	}
	return s.RequestsOK >= 0 && s.Errors >= 0 && s.Incomplete >= 0
}

// bufferedRequests counts the successful requests with two or more text
// chunks (multi), and those of them whose chunks all arrived at one time.
func bufferedRequests(reqs []rundir.RequestRow, tokens []rundir.TokenRow) (buffered, multi int) {
	if len(tokens) == 0 {
		return 0, 0
	}
	type span struct {
		first, last int64
		n           int
	}
	spans := make(map[string]span, len(reqs))
	for _, t := range tokens {
		s, ok := spans[t.RequestID]
		if !ok {
			s.first, s.last = t.RecvNS, t.RecvNS
		}
		s.first, s.last, s.n = min(s.first, t.RecvNS), max(s.last, t.RecvNS), s.n+1
		spans[t.RequestID] = s
	}
	for _, r := range reqs {
		s := spans[r.RequestID]
		if r.Status != rundir.StatusOK || s.n < 2 {
			continue
		}
		multi++
		if s.first == s.last {
			buffered++
		}
	}
	return buffered, multi
}

func keep[T any](rows []T, ok func(T) bool) []T {
	out := rows[:0]
	for _, r := range rows {
		if ok(r) {
			out = append(out, r)
		}
	}
	return out
}

// floatFields are the float64 and *float64 fields of a row type.
type floatFields struct{ plain, pointer []int }

var floatFieldsOf sync.Map // reflect.Type -> floatFields

func fieldsOf(t reflect.Type) floatFields {
	if f, ok := floatFieldsOf.Load(t); ok {
		return f.(floatFields)
	}
	var f floatFields
	for i := range t.NumField() {
		switch ft := t.Field(i).Type; {
		case ft.Kind() == reflect.Float64:
			f.plain = append(f.plain, i)
		case ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Float64:
			f.pointer = append(f.pointer, i)
		}
	}
	floatFieldsOf.Store(t, f)
	return f
}

// finiteRows leaves out the rows with a non-finite float value and clears
// a non-finite nullable one (unknown, which it is). It returns the rows
// kept, how many rows were affected, and how many there were.
func finiteRows[T any](rows []T) (kept []T, affected, of int) {
	f := fieldsOf(reflect.TypeFor[T]())
	if len(f.plain)+len(f.pointer) == 0 {
		return rows, 0, len(rows)
	}
	of = len(rows)
	out := rows[:0]
	for i := range rows {
		v := reflect.ValueOf(&rows[i]).Elem()
		bad, cleared := false, false
		for _, j := range f.plain {
			if x := v.Field(j).Float(); math.IsNaN(x) || math.IsInf(x, 0) {
				bad = true
			}
		}
		for _, j := range f.pointer {
			if p := v.Field(j); !p.IsNil() {
				if x := p.Elem().Float(); math.IsNaN(x) || math.IsInf(x, 0) {
					p.Set(reflect.Zero(p.Type()))
					cleared = true
				}
			}
		}
		if bad || cleared {
			affected++
		}
		if !bad {
			out = append(out, rows[i])
		}
	}
	return out, affected, of
}

// ClearNonFinite clears every NaN or ±Inf float reachable from ptr, a
// pointer to a result about to be written as JSON (a comparison), as
// clearNonFinite does, and returns how many it found.
func ClearNonFinite(ptr any) int { return clearNonFinite(reflect.ValueOf(ptr).Elem()) }

// clearNonFinite sets every NaN or ±Inf float reachable from v to 0 (to nil
// behind a pointer) and returns how many it found: JSON cannot hold them,
// and one would fail analysis.json whole.
func clearNonFinite(v reflect.Value) int {
	n := 0
	switch v.Kind() {
	case reflect.Float64, reflect.Float32:
		if x := v.Float(); (math.IsNaN(x) || math.IsInf(x, 0)) && v.CanSet() {
			v.SetFloat(0)
			n++
		}
	case reflect.Pointer:
		if v.IsNil() {
			return 0
		}
		if e := v.Elem(); e.Kind() == reflect.Float64 {
			if x := e.Float(); math.IsNaN(x) || math.IsInf(x, 0) {
				if v.CanSet() {
					v.Set(reflect.Zero(v.Type()))
				} else {
					e.SetFloat(0)
				}
				return 1
			}
			return 0
		}
		n += clearNonFinite(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				n += clearNonFinite(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			n += clearNonFinite(v.Index(i))
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			e := v.MapIndex(k)
			if e.Kind() == reflect.Float64 {
				if x := e.Float(); math.IsNaN(x) || math.IsInf(x, 0) {
					v.SetMapIndex(k, reflect.Zero(e.Type()))
					n++
				}
				continue
			}
			// other map values are copies: walk one and put it back
			c := reflect.New(e.Type()).Elem()
			c.Set(e)
			if m := clearNonFinite(c); m > 0 {
				v.SetMapIndex(k, c)
				n += m
			}
		}
	case reflect.Interface:
		if !v.IsNil() {
			c := reflect.New(v.Elem().Type()).Elem()
			c.Set(v.Elem())
			if m := clearNonFinite(c); m > 0 && v.CanSet() {
				v.Set(c)
				n += m
			}
		}
	}
	return n
}
