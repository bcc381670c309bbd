package compare

import (
	"bytes"
	"crypto/md5"
	"encoding/gob"
	"fmt"
	"path/filepath"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/rundir"
)

// A run's own summary (rundir.SummaryFile) is the entry a SummaryCache
// would hold for it, written into the run when it closes, so that compare
// and index of an archive they have never seen read one small file per
// run instead of its tables and server log. It is made by summarize, the
// function the full path uses, and trusted only while everything it was
// made from is unchanged: the manifest's bytes, the headroom version and
// summary format, and the analysis settings (summaryKey, with no name or
// label, since it is the run's own). Anything else, and every older run,
// takes the full path.
type runSummaryFile struct {
	Key     string
	Run     Run
	Samples []analyze.LevelSamples
	// Manifest is the bytes of the manifest the summary was made from (Key
	// covers them), so that a reader whose store vouches for the
	// manifest's bytes without a read (an S3 listing's ETag,
	// rundir.Dir.ContentMD5) reads the summary alone: one request a run
	// instead of two. Empty in summaries written before it was kept.
	Manifest []byte
	// Levels are the run's levels rows as its analysis read them, for the
	// index, which then reads only the run's requests table; LevelsKept
	// tells "no levels" from a summary written before they were kept.
	Levels     []rundir.LevelRow
	LevelsKept bool
}

// WriteRunSummary writes the summary of the closed local run dir into it,
// made with the analysis settings set (the writer gives those of a compare
// or index without flags), for a later compare or index with the same
// settings to read.
// An incomplete run gets none. A run whose summary would name its own
// directory (a warning quoting a path) gets none either: the name would be
// wrong once the run moves, so those runs are always analysed afresh.
// written says whether a summary was written.
func WriteRunSummary(dir string, set analyze.Settings) (written bool, err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false, err
	}
	d := rundir.LocalDir(abs)
	raw, m, err := readManifest(d)
	if err != nil {
		return false, err
	}
	if !m.Complete {
		return false, nil
	}
	set.BootstrapResamples = 0 // as compare's and index's per-run analysis
	run, err := analyze.LoadFrom(d, loadOptions)
	if err != nil {
		return false, err
	}
	s, err := summarize(run, set)
	if err != nil {
		return false, fmt.Errorf("%s: %w", dir, err)
	}
	enc, err := settingsJSON(set)
	if err != nil {
		return false, err
	}
	key := summaryKey("", "", raw, enc)
	s.Dir = ""
	var buf bytes.Buffer
	file := runSummaryFile{Key: key, Run: s, Samples: s.samples, Manifest: raw, Levels: run.Levels, LevelsKept: true}
	if err := gob.NewEncoder(&buf).Encode(file); err != nil {
		return false, fmt.Errorf("%s: summary: %w", dir, err)
	}
	// The manifest's own bytes may name the directory (a server command's
	// paths): those stay true wherever the run goes; the summary's do not.
	if bytes.Count(buf.Bytes(), []byte(abs)) > bytes.Count(raw, []byte(abs)) {
		return false, nil
	}
	if err := rundir.WriteSummaryFile(abs, buf.Bytes()); err != nil {
		return false, err
	}
	return true, nil
}

// runSummaryHead is a runSummaryFile read without its samples.
type runSummaryHead struct {
	Key        string
	Run        Run
	Manifest   []byte
	Levels     []rundir.LevelRow
	LevelsKept bool
}

// readOwnSummary reads and decodes run d's own summary file, without the
// request samples (which only a comparison's tests use) when samples is
// false; ok false when the run has none or it cannot be read. It is not
// yet checked against the run (holds).
func readOwnSummary(d rundir.Dir, samples bool) (e runSummaryFile, ok bool) {
	defer func() {
		// A damaged or hostile file is no summary: the run is analysed.
		if recover() != nil {
			e, ok = runSummaryFile{}, false
		}
	}()
	data, err := d.ReadFile(rundir.SummaryFile, maxSummaryBytes)
	if err != nil {
		return e, false
	}
	if samples {
		err = decodeGob(data, &e)
	} else {
		var h runSummaryHead
		err = decodeGobAs[runSummaryFile](data, &h)
		e = runSummaryFile{Key: h.Key, Run: h.Run, Manifest: h.Manifest, Levels: h.Levels, LevelsKept: h.LevelsKept}
	}
	return e, err == nil
}

// holds reports whether the summary was made from manifest bytes raw with
// settings set (settingsJSON) by this headroom.
func (e *runSummaryFile) holds(raw, set []byte) bool {
	return e.Key == summaryKey("", "", raw, set)
}

// run is the summary as run d's, whose manifest is m.
func (e *runSummaryFile) run(d rundir.Dir, m *rundir.Manifest) Run {
	s := e.Run
	s.samples = e.Samples
	s.Dir = d.Name
	// gob keeps no difference between an empty list and none.
	s.Kinds, s.Tags = m.Kinds, m.Tags
	return s
}

// readRun reads run d's manifest (bytes raw, decoded m) and, when own is
// set, its own summary when one holds for it and the settings set
// (ownSum, nil when none does). Where d's store vouches for the
// manifest's bytes (Dir.ContentMD5), the summary is read first and its copy
// of the manifest stands for the file when the two MD5s agree: one read a
// run, whether or not the summary holds for these settings. Otherwise the
// manifest is read as well.
func readRun(d rundir.Dir, own bool, set []byte, samples bool) (raw []byte, m *rundir.Manifest, ownSum *runSummaryFile, err error) {
	var e runSummaryFile
	read := false
	if sum, vouched := d.ContentMD5(rundir.ManifestFile); own && vouched {
		if e, read = readOwnSummary(d, samples); read && len(e.Manifest) > 0 && md5.Sum(e.Manifest) == sum {
			// A copy that does not decode is read from the file, for the
			// error in the file's name.
			if m, err = rundir.DecodeManifest(e.Manifest); err == nil {
				raw = e.Manifest
			}
		}
	}
	if raw == nil {
		if raw, m, err = readManifest(d); err != nil {
			return raw, m, nil, err
		}
	}
	if !own || !m.Complete {
		return raw, m, nil, nil
	}
	if !read {
		e, read = readOwnSummary(d, samples)
	}
	if read && e.holds(raw, set) {
		return raw, m, &e, nil
	}
	return raw, m, nil, nil
}

// maxSummaryBytes bounds what is read of a summary file: a run's is tens of
// KiB (its per-level request latencies); a larger one is not headroom's.
const maxSummaryBytes = 64 << 20
