package merge

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/headroom-llm/headroom/rundir"
)

// writeTables writes the requests, tokens and levels level by level (one
// part each, as a sweep does), then the client samples.
func (mg *merged) writeTables(dir string) error {
	reqW, err := rundir.NewTableWriter[rundir.RequestRow](dir, rundir.TableRequests, 0)
	if err != nil {
		return err
	}
	tokW, err := rundir.NewTableWriter[rundir.TokenRow](dir, rundir.TableTokens, 0)
	if err != nil {
		return err
	}
	lvlW, err := rundir.NewTableWriter[rundir.LevelRow](dir, rundir.TableLevels, 0)
	if err != nil {
		return err
	}
	tokensOf := make([]map[string][]rundir.TokenRow, len(mg.ss))
	for i, s := range mg.ss {
		tokensOf[i] = map[string][]rundir.TokenRow{}
		for _, t := range s.tokens {
			tokensOf[i][t.RequestID] = append(tokensOf[i][t.RequestID], t)
		}
	}
	partial := map[int]bool{}
	for _, l := range mg.m.Merged.PartialLevels {
		partial[l] = true
	}
	var errs []error
	for _, pl := range mg.levelsRun() {
		reqs, toks, err := mg.levelRows(pl, tokensOf)
		if err != nil {
			return err
		}
		reqW.Add(reqs...)
		tokW.Add(toks...)
		lvlW.Add(mg.levelRow(pl, !partial[pl.index]))
		errs = append(errs, reqW.Flush(), tokW.Flush(), lvlW.Flush())
	}
	errs = append(errs, reqW.Stop(), tokW.Stop(), lvlW.Stop())
	if samples := mg.clientSamples(); len(samples) > 0 {
		errs = append(errs, rundir.WriteTable(dir, rundir.TableClientSamples, samples))
	}
	return errors.Join(errs...)
}

// levelsRun are the planned levels some shard has rows of, in order.
func (mg *merged) levelsRun() []plannedLevel {
	var out []plannedLevel
	for _, pl := range mg.planned {
		for _, s := range mg.ss {
			if hasLevel(s, pl.index) {
				out = append(out, pl)
				break
			}
		}
	}
	return out
}

func hasLevel(s *shard, li int) bool {
	for _, l := range s.levels {
		if int(l.LevelIndex) == li {
			return true
		}
	}
	for _, r := range s.requests {
		if int(r.LevelIndex) == li {
			return true
		}
	}
	return false
}

// levelRows are the level's requests from every shard, on the reference
// clock, with the plan's concurrency and the merged run's request ids,
// ordered by seq, and their chunks in the same order.
func (mg *merged) levelRows(pl plannedLevel, tokensOf []map[string][]rundir.TokenRow) ([]rundir.RequestRow, []rundir.TokenRow, error) {
	type req struct {
		row   rundir.RequestRow
		shard int
		oldID string
	}
	var reqs []req
	for i, s := range mg.ss {
		for _, r := range s.requests {
			if int(r.LevelIndex) != pl.index {
				continue
			}
			old := r.RequestID
			r.RequestID = rundir.RequestID(mg.m.RunID, pl.index, int(r.Seq))
			r.Concurrency = int64(pl.concurrency)
			r.IntendedSendNS, r.SendNS, r.EndNS = s.refNS(r.IntendedSendNS), s.refNS(r.SendNS), s.refNS(r.EndNS)
			if r.FirstTokenNS != nil {
				t := s.refNS(*r.FirstTokenNS)
				r.FirstTokenNS = &t
			}
			reqs = append(reqs, req{r, i, old})
		}
	}
	sort.SliceStable(reqs, func(a, b int) bool { return reqs[a].row.Seq < reqs[b].row.Seq })
	for k := 1; k < len(reqs); k++ {
		if reqs[k].row.Seq == reqs[k-1].row.Seq {
			return nil, nil, fmt.Errorf("level %d: %s and %s both sent request %d: the shards overlap (not shards of one plan?)",
				pl.index, mg.ss[reqs[k-1].shard].name(), mg.ss[reqs[k].shard].name(), reqs[k].row.Seq)
		}
	}
	rows := make([]rundir.RequestRow, len(reqs))
	var toks []rundir.TokenRow
	for k, r := range reqs {
		rows[k] = r.row
		s := mg.ss[r.shard]
		ts := append([]rundir.TokenRow(nil), tokensOf[r.shard][r.oldID]...)
		sort.Slice(ts, func(a, b int) bool { return ts[a].Index < ts[b].Index })
		for _, t := range ts {
			t.RequestID = r.row.RequestID
			t.RecvNS = s.refNS(t.RecvNS)
			toks = append(toks, t)
		}
	}
	return rows, toks, nil
}

// levelRow is the level's row: the union of the windows of the shards that
// had a share of it (their level rows with streams), its requests and
// errors summed, and the plan's concurrency and rate.
func (mg *merged) levelRow(pl plannedLevel, complete bool) rundir.LevelRow {
	row := rundir.LevelRow{LevelIndex: int32(pl.index), Concurrency: int64(pl.concurrency), RateRPS: pl.rateRPS, Complete: complete}
	first := true
	for _, s := range mg.ss {
		for _, l := range s.levels {
			if int(l.LevelIndex) != pl.index || l.Concurrency == 0 {
				continue
			}
			start, warm, end := s.refNS(l.StartNS), s.refNS(l.WarmupEndNS), s.refNS(l.EndNS)
			if first {
				row.StartNS, row.WarmupEndNS, row.EndNS = start, warm, end
				first = false
			}
			row.StartNS, row.WarmupEndNS, row.EndNS = min(row.StartNS, start), min(row.WarmupEndNS, warm), max(row.EndNS, end)
			row.Requests += l.Requests
			row.Errors += l.Errors
		}
	}
	return row
}

// copyServerSide copies what was recorded of the server (its /metrics, GPU
// telemetry, process CPU, log) from the first shard that has it, on the
// reference clock: every shard scraped the same server, so one copy is
// kept, not N. The samples start a moment before the first level, as a
// single host's do (preStartNS); the log is kept whole.
func (mg *merged) copyServerSide(dir string) error {
	var notes []string
	pick := func(table string) *shard {
		for _, s := range mg.ss {
			if parts, err := s.dir.Parts(table); err == nil && len(parts) > 0 {
				return s
			}
		}
		return nil
	}
	from := mg.startNS() - preStartNS
	var errs []error
	if s := pick(rundir.TableServerMetrics); s != nil {
		errs = append(errs, copyTable(s, dir, rundir.TableServerMetrics, from, func(r *rundir.ServerMetricRow) *int64 { return &r.TimeNS }))
		notes = append(notes, fmt.Sprintf("server_metrics from shard %d", s.m.Shard.Index))
	}
	if s := pick(rundir.TableGPUTelemetry); s != nil {
		errs = append(errs, copyTable(s, dir, rundir.TableGPUTelemetry, from, func(r *rundir.GPUTelemetryRow) *int64 { return &r.TimeNS }))
		notes = append(notes, fmt.Sprintf("gpu_telemetry from shard %d", s.m.Shard.Index))
	}
	if s := pick(rundir.TableServerCPU); s != nil {
		errs = append(errs, copyTable(s, dir, rundir.TableServerCPU, from, func(r *rundir.ServerCPURow) *int64 { return &r.TimeNS }))
		notes = append(notes, fmt.Sprintf("server_cpu from shard %d", s.m.Shard.Index))
	}
	for _, s := range mg.ss {
		logs := serverLogs(s.dir)
		if len(logs) == 0 {
			continue
		}
		for _, name := range logs {
			errs = append(errs, copyFile(s.dir, name, filepath.Join(dir, name)))
		}
		errs = append(errs, copyTable(s, dir, rundir.TableServerLogLines, 0, func(r *rundir.ServerLogLineRow) *int64 { return &r.RecvNS }))
		notes = append(notes, fmt.Sprintf("%s from shard %d", strings.Join(logs, ", "), s.m.Shard.Index))
		break
	}
	if len(notes) > 0 && len(mg.ss) > 1 {
		mg.m.Notes = append(mg.m.Notes, "what was recorded of the server comes from one shard, on the reference clock (every shard watched the same server): "+strings.Join(notes, ", "))
	}
	return errors.Join(errs...)
}

// serverLogs are the captured server logs of a run: server.log, and
// server-<i>.log of each replica of a sweep over several servers.
func serverLogs(d rundir.Dir) []string {
	names, _ := d.Entries()
	var out []string
	for _, n := range names {
		if serverLogName.MatchString(n) && d.IsRegular(n) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

var serverLogName = regexp.MustCompile(`^server(-[0-9]+)?\.log$`)

// copyTable copies a table of the shard into the merged run with the time
// column that at points to moved onto the reference clock, leaving out the
// rows before from on it.
func copyTable[T any](s *shard, dir, table string, from int64, at func(*T) *int64) error {
	rows, err := rundir.ReadDirTable[T](s.dir, table)
	if err != nil || len(rows) == 0 {
		return err
	}
	kept := rows[:0]
	for i := range rows {
		t := at(&rows[i])
		if *t = s.refNS(*t); *t >= from {
			kept = append(kept, rows[i])
		}
	}
	if len(kept) == 0 {
		return nil
	}
	return rundir.WriteTable(dir, table, kept)
}
