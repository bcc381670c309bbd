package merge

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/internal/runtest"
	"github.com/headroom-llm/headroom/rundir"
)

// shardRun is a synthetic shard: level li has the given requests (plan
// seq numbers), each sent at base + seq ms on the shard's own clock, which
// runs offset ahead of the reference.
type shardRun struct {
	index, count int
	offset       time.Duration
	unc          float64
	levels       map[int][]int // level → plan seqs sent
	complete     bool
	plan         string
}

const base = int64(1_800_000_000) * 1e9

func writeShard(t *testing.T, dir string, s shardRun) rundir.Dir {
	t.Helper()
	if s.plan == "" {
		s.plan = "plan-a"
	}
	m := &rundir.Manifest{
		Kinds: []string{rundir.KindSweep}, Label: "sharded", Host: rundir.Host{Hostname: "client-" + string(rune('a'+s.index))},
		StartTime: time.Unix(0, base).UTC(),
		Workload:  &rundir.Workload{Endpoint: "completions", Mode: "closed", Levels: []int{2, 8}, Seed: 1, FixedOutput: true},
		Shard: &rundir.Shard{Index: s.index, Count: s.count, PlanID: s.plan, StartAt: time.Unix(0, base).UTC(), LevelEveryS: 10,
			Clock: &rundir.ClockOffset{Reference: rundir.ClockServerDate, Known: true, OffsetS: s.offset.Seconds(), UncertaintyS: s.unc}},
	}
	run, err := rundir.Create(dir, m)
	if err != nil {
		t.Fatal(err)
	}
	var levels []rundir.LevelRow
	var reqs []rundir.RequestRow
	var toks []rundir.TokenRow
	for li := 0; li < 2; li++ {
		seqs, ok := s.levels[li]
		if !ok {
			continue
		}
		conc := []int{2, 8}[li] / s.count
		l0 := base + int64(li)*10e9 + int64(s.offset)
		levels = append(levels, rundir.LevelRow{LevelIndex: int32(li), Concurrency: int64(max(conc, 1)), StartNS: l0, WarmupEndNS: l0 + 1e9,
			EndNS: l0 + 5e9 + int64(s.index)*1e9, Requests: int64(len(seqs)), Complete: true})
		for _, q := range seqs {
			send := l0 + int64(q)*1e6
			first := send + 50e6
			id := rundir.RequestID(m.RunID, li, q)
			n := int64(3)
			reqs = append(reqs, rundir.RequestRow{RequestID: id, LevelIndex: int32(li), Concurrency: int64(conc), Seq: int64(q), Endpoint: "completions",
				IntendedSendNS: send, SendNS: send, FirstTokenNS: &first, EndNS: first + 20e6, ClientChunks: 3, ServerCompletionTokens: &n, Status: rundir.StatusOK})
			for k := range 3 {
				toks = append(toks, rundir.TokenRow{RequestID: id, Index: int32(k), RecvNS: first + int64(k)*10e6, Tokens: 1, Bytes: 4})
			}
		}
	}
	for _, tb := range []error{
		rundir.WriteTable(dir, rundir.TableLevels, levels), rundir.WriteTable(dir, rundir.TableRequests, reqs), rundir.WriteTable(dir, rundir.TableTokens, toks),
		rundir.WriteTable(dir, rundir.TableClientSamples, []rundir.ClientSampleRow{{TimeNS: base + int64(s.offset), CPUUserS: 1, CPUs: 2}, {TimeNS: base + int64(s.offset) + 1e9, CPUUserS: 1.5, CPUs: 2, OpenStreams: 1}}),
	} {
		if tb != nil {
			t.Fatal(tb)
		}
	}
	if s.complete {
		if err := run.Finish(nil); err != nil {
			t.Fatal(err)
		}
	}
	return rundir.LocalDir(dir)
}

func twoShards(t *testing.T, root string) []rundir.Dir {
	return []rundir.Dir{
		writeShard(t, filepath.Join(root, "s0"), shardRun{index: 0, count: 2, offset: 2 * time.Second, unc: 0.001, complete: true,
			levels: map[int][]int{0: {0, 2, 4}, 1: {0, 2, 4, 6}}}),
		writeShard(t, filepath.Join(root, "s1"), shardRun{index: 1, count: 2, offset: -time.Second, unc: 0.002, complete: true,
			levels: map[int][]int{0: {1, 3, 5}, 1: {1, 3, 5, 7}}}),
	}
}

func TestMergeCorrectsClocksAndKeepsEveryRow(t *testing.T) {
	root := t.TempDir()
	out := filepath.Join(root, "merged")
	run, err := Merge(twoShards(t, root), out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := run.Manifest
	if !m.Complete || m.Merged == nil || len(m.Merged.Missing) > 0 || len(m.Merged.PartialLevels) > 0 {
		t.Fatalf("manifest: complete %v merged %+v", m.Complete, m.Merged)
	}
	reqs := runtest.Table[rundir.RequestRow](t, out, rundir.TableRequests)
	if len(reqs) != 14 {
		t.Fatalf("%d requests, want all 14", len(reqs))
	}
	for _, r := range reqs {
		// On the reference clock a request of seq q of level li was sent
		// at base + li × 10 s + q ms, whichever shard sent it.
		want := base + int64(r.LevelIndex)*10e9 + r.Seq*1e6
		if r.SendNS != want || *r.FirstTokenNS != want+50e6 {
			t.Errorf("level %d seq %d: send %d, want %d (corrected by its shard's offset)", r.LevelIndex, r.Seq, r.SendNS-base, want-base)
		}
		if r.RequestID != rundir.RequestID(m.RunID, int(r.LevelIndex), int(r.Seq)) {
			t.Errorf("request id %s is not the merged run's", r.RequestID)
		}
		if want := []int64{2, 8}[r.LevelIndex]; r.Concurrency != want {
			t.Errorf("level %d: request concurrency %d, want the plan's %d", r.LevelIndex, r.Concurrency, want)
		}
	}
	if !slices.IsSortedFunc(reqs, func(a, b rundir.RequestRow) int { return int(a.LevelIndex-b.LevelIndex)*1000 + int(a.Seq-b.Seq) }) {
		t.Error("requests not in (level, seq) order")
	}
	toks, _ := rundir.ReadTable[rundir.TokenRow](out, rundir.TableTokens)
	ids := map[string]int64{}
	for _, r := range reqs {
		ids[r.RequestID] = *r.FirstTokenNS
	}
	for _, tk := range toks {
		first, ok := ids[tk.RequestID]
		if !ok || tk.RecvNS != first+int64(tk.Index)*10e6 {
			t.Errorf("token %s/%d at %d: not its request's (corrected) chunk", tk.RequestID, tk.Index, tk.RecvNS)
		}
	}
	if len(toks) != 42 {
		t.Errorf("%d tokens, want 42", len(toks))
	}
	levels, _ := rundir.ReadTable[rundir.LevelRow](out, rundir.TableLevels)
	if len(levels) != 2 {
		t.Fatalf("%d levels", len(levels))
	}
	l := levels[1]
	// windows: shard 0 [l0+1 s, l0+5 s], shard 1 [l0+1 s, l0+6 s] on the reference clock
	l0 := base + 10e9
	if l.Concurrency != 8 || l.Requests != 8 || !l.Complete || l.StartNS != l0 || l.WarmupEndNS != l0+1e9 || l.EndNS != l0+6e9 {
		t.Errorf("level 1 row %+v: want the plan's 8 streams, 8 requests, the union window", l)
	}
	sum := Summarize(reqs)
	if len(sum) != 2 || sum[0].Requests != 6 || sum[1].TTFTP50S != 0.05 || sum[1].TPOTP50S != 0.01 {
		t.Errorf("summary %+v", sum)
	}
}

func TestMergeIsDeterministic(t *testing.T) {
	root := t.TempDir()
	shards := twoShards(t, root)
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	if _, err := Merge(shards, a, Options{}); err != nil {
		t.Fatal(err)
	}
	// the other order of arguments too
	if _, err := Merge([]rundir.Dir{shards[1], shards[0]}, b, Options{}); err != nil {
		t.Fatal(err)
	}
	var files []string
	filepath.WalkDir(a, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, strings.TrimPrefix(p, a))
		}
		return nil
	})
	if len(files) < 5 {
		t.Fatalf("only %v written", files)
	}
	for _, f := range files {
		x, _ := os.ReadFile(a + f)
		y, err := os.ReadFile(b + f)
		if err != nil || !bytes.Equal(x, y) {
			t.Errorf("%s differs between two merges of the same shards", f)
		}
	}
}

func TestMergeNamesAMissingShardAndMarksItsLevelsPartial(t *testing.T) {
	root := t.TempDir()
	// three shards planned; shard 2 missing; shard 1 killed during level 1
	// (its manifest never finished, level 1 never written).
	s0 := writeShard(t, filepath.Join(root, "s0"), shardRun{index: 0, count: 3, complete: true, levels: map[int][]int{0: {0}, 1: {0, 3, 6}}})
	s1 := writeShard(t, filepath.Join(root, "s1"), shardRun{index: 1, count: 3, levels: map[int][]int{0: {1}}})
	out := filepath.Join(root, "merged")
	run, err := Merge([]rundir.Dir{s0, s1}, out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := run.Manifest
	if m.Complete || m.Stopped == nil || m.Stopped.Reason != "partial" {
		t.Fatalf("complete %v stopped %+v: want partial", m.Complete, m.Stopped)
	}
	// level 0 (2 streams) had shards 0 and 1 only: both finished it; level
	// 1 (8 streams) had all three.
	if !slices.Equal(m.Merged.Missing, []int{2}) || !slices.Equal(m.Merged.PartialLevels, []int{1}) {
		t.Errorf("missing %v partial %v; want [2] and [1]", m.Merged.Missing, m.Merged.PartialLevels)
	}
	if !strings.Contains(strings.Join(m.Warnings, "\n"), "shard 2 is missing") || !strings.Contains(strings.Join(m.Warnings, "\n"), "shard 1 was killed") {
		t.Errorf("warnings do not name the shards: %q", m.Warnings)
	}
	levels, _ := rundir.ReadTable[rundir.LevelRow](out, rundir.TableLevels)
	if len(levels) != 2 || !levels[0].Complete || levels[1].Complete {
		t.Errorf("levels %+v: want level 0 complete, level 1 partial (not complete)", levels)
	}
	reqs, _ := rundir.ReadTable[rundir.RequestRow](out, rundir.TableRequests)
	if len(reqs) != 5 {
		t.Errorf("%d requests, want the 5 the shards have", len(reqs))
	}
}

func TestMergeFlagsAnUncertainClock(t *testing.T) {
	root := t.TempDir()
	s0 := writeShard(t, filepath.Join(root, "s0"), shardRun{index: 0, count: 2, unc: 0.0005, complete: true, levels: map[int][]int{0: {0}}})
	s1 := writeShard(t, filepath.Join(root, "s1"), shardRun{index: 1, count: 2, unc: 0.040, complete: true, levels: map[int][]int{0: {1}}})
	run, err := Merge([]rundir.Dir{s0, s1}, filepath.Join(root, "m"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	sh := run.Manifest.Merged.Shards
	if sh[0].ClockFlagged || !sh[1].ClockFlagged {
		t.Errorf("flags %v %v: want shard 1 only (40 ms > 10 ms)", sh[0].ClockFlagged, sh[1].ClockFlagged)
	}
	if !strings.Contains(strings.Join(run.Manifest.Warnings, "\n"), "shard 1's clock offset is known only to ±40.0 ms") {
		t.Errorf("warnings %q", run.Manifest.Warnings)
	}
}

func TestMergeRefuses(t *testing.T) {
	root := t.TempDir()
	s0 := writeShard(t, filepath.Join(root, "s0"), shardRun{index: 0, count: 2, complete: true, levels: map[int][]int{0: {0}}})
	other := writeShard(t, filepath.Join(root, "o1"), shardRun{index: 1, count: 2, plan: "plan-b", complete: true, levels: map[int][]int{0: {1}}})
	overlap := writeShard(t, filepath.Join(root, "x1"), shardRun{index: 1, count: 2, complete: true, levels: map[int][]int{0: {0}}})
	plain := filepath.Join(root, "plain")
	if _, err := rundir.Create(plain, &rundir.Manifest{Kinds: []string{rundir.KindSweep}}); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		dirs []rundir.Dir
		want string
	}{
		"other plan": {[]rundir.Dir{s0, other}, "different sweeps"},
		"same shard": {[]rundir.Dir{s0, s0}, "both shard 0"},
		"not shard":  {[]rundir.Dir{rundir.LocalDir(plain)}, "not a shard"},
		"overlap":    {[]rundir.Dir{s0, overlap}, "both sent request 0"},
	} {
		out := filepath.Join(root, "out-"+strings.ReplaceAll(name, " ", "-"))
		_, err := Merge(c.dirs, out, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", name, err, c.want)
		}
		if _, serr := os.Stat(out); serr == nil {
			t.Errorf("%s: %s left behind", name, out)
		}
	}
}

// What was recorded of the server comes over once, from the first shard
// that has it, on the reference clock.
func TestMergeKeepsTheServerLogOnce(t *testing.T) {
	root := t.TempDir()
	shards := twoShards(t, root)
	s1 := shards[1].Name // its clock runs 1 s behind
	if err := os.WriteFile(filepath.Join(s1, rundir.ServerLogFile), []byte("INFO started\nINFO step\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lines := []rundir.ServerLogLineRow{{Line: 1, RecvNS: base - 1e9}, {Line: 2, RecvNS: base}}
	if err := rundir.WriteTable(s1, rundir.TableServerLogLines, lines); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(root, "m")
	run, err := Merge(shards, out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(out, rundir.ServerLogFile)); err != nil || string(b) != "INFO started\nINFO step\n" {
		t.Fatalf("server.log %q, %v", b, err)
	}
	got, _ := rundir.ReadTable[rundir.ServerLogLineRow](out, rundir.TableServerLogLines)
	if len(got) != 2 || got[0].RecvNS != base || got[1].RecvNS != base+1e9 {
		t.Errorf("log lines %+v: want them moved 1 s on (shard 1's offset is −1 s)", got)
	}
	if !strings.Contains(strings.Join(run.Manifest.Notes, "\n"), "server.log from shard 1") {
		t.Errorf("notes %q do not say where the log came from", run.Manifest.Notes)
	}
}

// The merged client is sampled as one client is: at the shards' own
// interval, not at the union of their sample times, from a moment before
// the first level on (the shards' wait for --start-at is not part of the
// run), with the CPU time of all shards counted from its first row.
func TestMergedClientSamplesAreOneClientsSeries(t *testing.T) {
	const start = int64(1_000e9) // the first level's start, on the reference clock
	var ss []*shard
	for i, offset := range []int64{0, 97e6, -41e6} { // clock offsets, ns
		s := &shard{m: &rundir.Manifest{Shard: &rundir.Shard{Index: i}}, offsetNS: offset,
			levels: []rundir.LevelRow{{Concurrency: 2, StartNS: start + offset + int64(i)*3e6}}}
		// every 250 ms from 5 s before the start (the wait) to 10 s after,
		// at a phase of its own; 0.1 CPU-s per sample, one stream open
		for k := range 61 {
			t := start - 5e9 + int64(k)*250e6 + int64(i)*83e6
			s.samples = append(s.samples, rundir.ClientSampleRow{TimeNS: t + offset, CPUUserS: 0.1 * float64(k), CPUs: 2, OpenStreams: 1,
				SendLagMaxS: float64(k) / 1000})
		}
		ss = append(ss, s)
	}
	got := (&merged{ss: ss}).clientSamples()
	if len(got) < 40 || len(got) > 46 { // (10.166 s + 1 s) / 250 ms, and the last
		t.Fatalf("%d merged samples, want one every 250 ms over the run (about 45), not the shards' %d together", len(got), 3*61)
	}
	if got[0].TimeNS != start-int64(time.Second) {
		t.Errorf("first sample at %+.3f s of the start, want −1 s (the shards' wait before is not the run's)", float64(got[0].TimeNS-start)/1e9)
	}
	for k := 1; k < len(got)-1; k++ {
		if d := got[k].TimeNS - got[k-1].TimeNS; d != 250e6 {
			t.Fatalf("samples %d and %d are %d ns apart, want the shards' 250 ms", k-1, k, d)
		}
	}
	if got[0].CPUUserS != 0 || got[0].CPUs != 6 || got[0].OpenStreams != 3 {
		t.Errorf("first row %+v: want 0 CPU-s counted, 6 cores, 3 streams", got[0])
	}
	// The last row is the last sample of any shard; the others are held at
	// their last: all CPU since the first row is counted once.
	last := got[len(got)-1]
	want := 0.0
	for _, s := range ss {
		lastRow := s.samples[len(s.samples)-1]
		u, _, _, _ := at(refRows(s), start-int64(time.Second))
		want += lastRow.CPUUserS - u
	}
	if math.Abs(last.CPUUserS-want) > 1e-9 {
		t.Errorf("CPU at the last row %.4f s, want all shards' since the first row, %.4f s", last.CPUUserS, want)
	}
	if last.SendLagMaxS != 0.06 {
		t.Errorf("last send lag %v, want the largest since the row before, 0.06", last.SendLagMaxS)
	}
}

// refRows is a shard's samples on the reference clock.
func refRows(s *shard) []rundir.ClientSampleRow {
	rows := append([]rundir.ClientSampleRow(nil), s.samples...)
	for i := range rows {
		rows[i].TimeNS = s.refNS(rows[i].TimeNS)
	}
	return rows
}
