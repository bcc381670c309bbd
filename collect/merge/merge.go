// Package merge joins the runs of a sweep's shards (headroom sweep --shard
// I/N, one per client host) into one run that report and compare read like
// any other: every request and chunk row is kept, its times moved onto the
// shards' common reference clock, request ids and sequence numbers are the
// plan's, and each level's row is the union of the shards' windows. A shard
// that is missing or stopped early is named in the manifest, and the
// levels it had a share of are marked partial (not complete).
//
// Merging is deterministic: the same shards give byte-identical output (no
// clock is read, the run id is derived from the shards' ids, rows are
// sorted).
package merge

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/headroom-llm/headroom/internal/buildinfo"
	"github.com/headroom-llm/headroom/internal/uniq"
	"github.com/headroom-llm/headroom/rundir"
)

// DefaultClockBound is the clock uncertainty above which a shard is flagged:
// a tenth of the server's one-second /metrics scrape, and well below the
// TTFT of any real server, so that cutting the log and metrics by the merged
// windows, and ordering requests across shards, are not changed by it.
const DefaultClockBound = 10 * time.Millisecond

// Options of a merge.
type Options struct {
	// ClockBound flags shards whose clock offset is less certain than this
	// (0: DefaultClockBound).
	ClockBound time.Duration
	// Count is the plan's shard count, when the caller knows it and no
	// given shard can say (0: from the shards' manifests).
	Count int
}

// shard is one shard's run, read.
type shard struct {
	dir      rundir.Dir
	m        *rundir.Manifest
	offsetNS int64
	unc      float64
	flagged  bool
	levels   []rundir.LevelRow
	requests []rundir.RequestRow
	tokens   []rundir.TokenRow
	samples  []rundir.ClientSampleRow
}

// Merge reads the shards and writes the merged run to out (a directory that
// must not exist or be empty). On error nothing is left at out.
func Merge(shards []rundir.Dir, out string, o Options) (*rundir.Run, error) {
	if o.ClockBound <= 0 {
		o.ClockBound = DefaultClockBound
	}
	ss, err := readShards(shards)
	if err != nil {
		return nil, err
	}
	mg, err := plan(ss, o)
	if err != nil {
		return nil, err
	}
	run, err := mg.write(out)
	if err != nil {
		return nil, errors.Join(err, mg.cleanup(out))
	}
	return run, nil
}

// readShards opens every shard and checks that they are shards of one plan.
func readShards(dirs []rundir.Dir) ([]*shard, error) {
	if len(dirs) == 0 {
		return nil, errors.New("merge: no shards given")
	}
	var ss []*shard
	seen := map[int]string{}
	for _, d := range dirs {
		m, err := d.Manifest()
		if err != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
		if m.Shard == nil {
			return nil, fmt.Errorf("merge: %s: not a shard of a sweep from several hosts (its manifest has no shard; record shards with headroom sweep --shard I/N)", d.Name)
		}
		if m.Workload == nil {
			return nil, fmt.Errorf("merge: %s: the manifest has no workload", d.Name)
		}
		if prev, dup := seen[m.Shard.Index]; dup {
			return nil, fmt.Errorf("merge: %s and %s are both shard %d", prev, d.Name, m.Shard.Index)
		}
		seen[m.Shard.Index] = d.Name
		if len(ss) > 0 {
			first := ss[0].m.Shard
			if m.Shard.PlanID != first.PlanID || m.Shard.Count != first.Count {
				return nil, fmt.Errorf("merge: %s is shard %d of %d of plan %s, but %s is of plan %s with %d shards: shards of different sweeps do not merge",
					d.Name, m.Shard.Index, m.Shard.Count, m.Shard.PlanID, ss[0].dir.Name, first.PlanID, first.Count)
			}
		}
		s := &shard{dir: d, m: m}
		if err := s.read(); err != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
		ss = append(ss, s)
	}
	sort.Slice(ss, func(i, j int) bool { return ss[i].m.Shard.Index < ss[j].m.Shard.Index })
	return ss, nil
}

func (s *shard) read() (err error) {
	if s.levels, err = rundir.ReadDirTable[rundir.LevelRow](s.dir, rundir.TableLevels); err != nil {
		return err
	}
	if s.requests, err = rundir.ReadDirTable[rundir.RequestRow](s.dir, rundir.TableRequests); err != nil {
		return err
	}
	if s.tokens, err = rundir.ReadDirTable[rundir.TokenRow](s.dir, rundir.TableTokens); err != nil {
		return err
	}
	s.samples, err = rundir.ReadDirTable[rundir.ClientSampleRow](s.dir, rundir.TableClientSamples)
	return err
}

// merged is a merge planned: the shards with their clock corrections, and
// the manifest of the result.
type merged struct {
	ss      []*shard
	count   int
	m       *rundir.Manifest
	planned []plannedLevel
	created bool // out was made by this merge
}

// plannedLevel is one level of the plan: its total concurrency and rate,
// and how many shards had a share of it.
type plannedLevel struct {
	index       int
	concurrency int
	rateRPS     float64
	active      int
}

// plan decides the clock reference and the manifest.
func plan(ss []*shard, o Options) (*merged, error) {
	count := ss[0].m.Shard.Count
	if o.Count > 0 && o.Count != count {
		return nil, fmt.Errorf("merge: the shards say the plan has %d shards, not %d", count, o.Count)
	}
	mg := &merged{ss: ss, count: count}
	w := ss[0].m.Workload
	if w.Mode == "open" {
		for i, r := range w.RatesRPS {
			mg.planned = append(mg.planned, plannedLevel{i, w.MaxConcurrency, r, activeShards(count, w.MaxConcurrency)})
		}
	} else {
		for i, c := range w.Levels {
			mg.planned = append(mg.planned, plannedLevel{i, c, 0, activeShards(count, c)})
		}
	}
	ref := chooseReference(ss, o.ClockBound)
	for _, s := range ss {
		s.correct(ref, o.ClockBound)
	}
	mg.manifest(ref, o.ClockBound)
	return mg, nil
}

// activeShards is how many shards had a share of a level (collect/sweep's
// rule: at most one per stream).
func activeShards(count, concurrency int) int { return max(min(count, concurrency), 1) }

// chooseReference picks the clock every time is corrected to: UTC itself
// when every shard's kernel clock was synchronized by NTP within the bound
// (then no correction is needed and a server behind a load balancer, which
// is several clocks, does not matter), else the server's Date header that
// every shard measured itself against.
func chooseReference(ss []*shard, bound time.Duration) string {
	for _, s := range ss {
		c := s.m.Shard.Clock
		if c == nil || c.NTP == nil || !c.NTP.Synchronized || c.NTP.MaxErrorS > bound.Seconds() {
			return rundir.ClockServerDate
		}
	}
	return rundir.ClockNTP
}

// correct sets the shard's clock correction for the reference.
func (s *shard) correct(ref string, bound time.Duration) {
	c := s.m.Shard.Clock
	switch {
	case ref == rundir.ClockNTP:
		s.offsetNS, s.unc = 0, c.NTP.MaxErrorS
	case c != nil && c.Known:
		s.offsetNS, s.unc = int64(c.OffsetS*1e9), c.UncertaintyS
	default:
		s.offsetNS, s.unc, s.flagged = 0, 0, true
	}
	if s.unc > bound.Seconds() {
		s.flagged = true
	}
}

// refNS moves a time of the shard onto the reference clock.
func (s *shard) refNS(t int64) int64 {
	if t == 0 {
		return 0
	}
	return t - s.offsetNS
}

// name is how a shard is named in messages: its index and directory.
func (s *shard) name() string {
	return fmt.Sprintf("shard %d (%s)", s.m.Shard.Index, s.dir.Name)
}

// runID is the merged run's id: a UUID version 5 of the plan and the
// shards' run ids, so merging the same shards again gives the same id.
func (mg *merged) runID() string {
	var b strings.Builder
	b.WriteString(mg.ss[0].m.Shard.PlanID)
	for _, s := range mg.ss {
		b.WriteString("\x00" + s.m.RunID)
	}
	return uuid.NewSHA1(mergeNamespace, []byte(b.String())).String()
}

// mergeNamespace is the UUID namespace of merged runs' ids.
var mergeNamespace = uuid.MustParse("0b6f3c1e-8d2a-4f4e-9c3b-5a7d2e91f4c8")

// manifest builds the merged run's manifest from the shards': the first
// shard's description of the workload and engine, every shard's caveats
// (named), and what merge itself found.
func (mg *merged) manifest(ref string, bound time.Duration) {
	first := mg.ss[0].m
	m := &rundir.Manifest{
		FormatVersion:   rundir.FormatVersion,
		RunID:           mg.runID(),
		HeadroomVersion: buildinfo.Version(),
		Kinds:           slices.Clone(first.Kinds),
		Label:           first.Label,
		Tags:            slices.Clone(first.Tags),
		Host:            first.Host,
		GPUs:            first.GPUs,
		GPULinks:        first.GPULinks,
		Replicas:        first.Replicas,
		Engine:          first.Engine,
		Workload:        first.Workload,
	}
	wl := *first.Workload
	m.Workload = &wl
	mr := &rundir.Merged{PlanID: first.Shard.PlanID, Count: mg.count, Reference: ref, BoundS: bound.Seconds()}
	given := map[int]bool{}
	var hosts []string
	var stops []string
	for _, s := range mg.ss {
		sm := s.m
		given[sm.Shard.Index] = true
		hosts = uniq.AppendNonZero(hosts, sm.Host.Hostname)
		start, end := sm.StartTime.Add(-time.Duration(s.offsetNS)), sm.EndTime
		if !end.IsZero() {
			end = end.Add(-time.Duration(s.offsetNS))
		}
		if m.StartTime.IsZero() || start.Before(m.StartTime) {
			m.StartTime = start
		}
		if end.After(m.EndTime) {
			m.EndTime = end
		}
		ms := rundir.MergedShard{Index: sm.Shard.Index, RunID: sm.RunID, Dir: path.Base(strings.TrimSuffix(s.dir.Name, "/")), Host: sm.Host.Hostname,
			Complete: sm.Complete, Stopped: sm.Stopped, OffsetS: float64(s.offsetNS) / 1e9, UncertaintyS: s.unc, ClockFlagged: s.flagged}
		for _, l := range s.levels {
			if l.Complete {
				ms.Levels = append(ms.Levels, int(l.LevelIndex))
				ms.Requests += l.Requests
			}
		}
		mr.Shards = append(mr.Shards, ms)
		if !wl.FixedOutput || !sm.Workload.FixedOutput {
			wl.FixedOutput = false
			if wl.FixedOutputNote == first.Workload.FixedOutputNote && sm.Workload.FixedOutputNote != "" {
				wl.FixedOutputNote = sm.Workload.FixedOutputNote
			}
		}
		for _, w := range sm.Warnings {
			m.Warnings = uniq.Append(m.Warnings, fmt.Sprintf("shard %d: %s", sm.Shard.Index, w))
		}
		m.Notes = uniq.Append(m.Notes, sm.Notes...)
		if !sm.Complete {
			why := "was killed (its manifest was never finished)"
			if st := sm.Stopped; st != nil {
				why = "stopped (" + st.Reason
				if st.Level != nil {
					why += fmt.Sprintf(" at level %d", *st.Level)
				}
				why += ")"
			}
			stops = append(stops, fmt.Sprintf("shard %d %s", sm.Shard.Index, why))
		}
		switch c := sm.Shard.Clock; {
		case ref == rundir.ClockServerDate && (c == nil || !c.Known):
			m.Warnings = append(m.Warnings, fmt.Sprintf("shard %d's clock was not measured against the server: its times are uncorrected and may be off against the other shards' by any amount", sm.Shard.Index))
		case s.flagged:
			m.Warnings = append(m.Warnings, fmt.Sprintf("shard %d's clock offset is known only to ±%.1f ms (bound %.0f ms): its times may be that far off against the other shards'", sm.Shard.Index, s.unc*1e3, bound.Seconds()*1e3))
		}
	}
	if len(hosts) > 1 {
		m.Host.Hostname = strings.Join(hosts, ",")
	}
	for i := range mg.count {
		if !given[i] {
			mr.Missing = append(mr.Missing, i)
			stops = append(stops, fmt.Sprintf("shard %d is missing", i))
		}
	}
	mr.PartialLevels = mg.partialLevels()
	if len(mr.PartialLevels) > 0 {
		what := fmt.Sprintf("levels %s are partial", joinInts(mr.PartialLevels))
		if len(mr.PartialLevels) == 1 {
			what = fmt.Sprintf("level %d is partial", mr.PartialLevels[0])
		}
		m.Warnings = append(m.Warnings, fmt.Sprintf("%s: %s; the partial levels hold less load than the plan says", what, strings.Join(stops, "; ")))
	} else if len(stops) > 0 {
		m.Notes = append(m.Notes, strings.Join(stops, "; ")+", after finishing every level it had a share of")
	}
	m.Notes = append(m.Notes, fmt.Sprintf("merged from %d of %d shards (one client host each): times corrected to the %s; request ids and seq are the plan's", len(mg.ss), mg.count, ref))
	m.Complete = len(mr.Missing) == 0 && len(mr.PartialLevels) == 0 && len(stops) == 0
	if !m.Complete {
		st := &rundir.Stopped{Reason: "partial", Phase: "merge", Error: strings.Join(stops, "; "), Time: m.EndTime}
		if len(mr.PartialLevels) > 0 {
			l := mr.PartialLevels[0]
			st.Level = &l
		}
		m.Stopped = st
	}
	m.Merged = mr
	mg.m = m
}

// partialLevels are the levels of the plan that some shard with a share of
// them did not finish, among the levels any shard ran.
func (mg *merged) partialLevels() []int {
	var out []int
	for _, pl := range mg.planned {
		done, ran := map[int]bool{}, false
		for _, s := range mg.ss {
			for _, l := range s.levels {
				if int(l.LevelIndex) != pl.index {
					continue
				}
				ran = true
				if l.Complete {
					done[s.m.Shard.Index] = true
				}
			}
		}
		if !ran {
			continue
		}
		for i := range pl.active {
			if !done[i] {
				out = append(out, pl.index)
				break
			}
		}
	}
	return out
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

// write creates the run at out and writes its tables, then the manifest.
func (mg *merged) write(out string) (*rundir.Run, error) {
	if _, err := os.Stat(out); errors.Is(err, os.ErrNotExist) {
		mg.created = true
	}
	m := *mg.m
	final := mg.m
	m.Complete = false
	run, err := rundir.Create(out, &m)
	if err != nil {
		mg.created = false // Create refused it: not ours to remove
		return nil, fmt.Errorf("merge: %w", err)
	}
	if err := mg.writeTables(out); err != nil {
		return nil, fmt.Errorf("merge: writing %s: %w", out, err)
	}
	if err := mg.copyServerSide(out); err != nil {
		return nil, fmt.Errorf("merge: writing %s: %w", out, err)
	}
	run.Manifest = final
	if err := run.SaveManifest(); err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	return run, nil
}

// cleanup removes what a failed merge wrote.
func (mg *merged) cleanup(out string) error {
	if !mg.created {
		return nil
	}
	return os.RemoveAll(out)
}

// copyFile copies a file of a shard's run into the merged run.
func copyFile(d rundir.Dir, name, dst string) error {
	r, err := d.OpenFile(name)
	if err != nil {
		return err
	}
	defer r.Close()
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
