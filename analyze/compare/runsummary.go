package compare

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"io"
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
	if err := gob.NewEncoder(&buf).Encode(runSummaryFile{Key: key, Run: s, Samples: s.samples}); err != nil {
		return false, fmt.Errorf("%s: summary: %w", dir, err)
	}
	if bytes.Contains(buf.Bytes(), []byte(abs)) {
		return false, nil
	}
	if err := rundir.WriteSummaryFile(abs, buf.Bytes()); err != nil {
		return false, err
	}
	return true, nil
}

// ownSummary is run d's own summary, ok false when it has none that holds
// for manifest bytes raw and settings set (settingsJSON; then the run is
// analysed).
func ownSummary(d rundir.Dir, raw []byte, m *rundir.Manifest, set []byte) (s Run, ok bool) {
	return ownSummaryWith(d, raw, m, set, true)
}

// runSummaryHead is a runSummaryFile read without its samples.
type runSummaryHead struct {
	Key string
	Run Run
}

// ownSummaryWith is ownSummary, without the request samples (which only a
// comparison's tests use) when samples is false.
func ownSummaryWith(d rundir.Dir, raw []byte, m *rundir.Manifest, set []byte, samples bool) (s Run, ok bool) {
	defer func() {
		// A damaged or hostile file is no summary: the run is analysed.
		if recover() != nil {
			s, ok = Run{}, false
		}
	}()
	f, err := d.OpenFile(rundir.SummaryFile)
	if err != nil {
		return Run{}, false
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSummaryBytes))
	f.Close()
	if err != nil {
		return Run{}, false
	}
	var e runSummaryFile
	if samples {
		err = decodeGob(data, &e)
	} else {
		var h runSummaryHead
		err = decodeGobAs[runSummaryFile](data, &h)
		e.Key, e.Run = h.Key, h.Run
	}
	if err != nil {
		return Run{}, false
	}
	if e.Key != summaryKey("", "", raw, set) {
		return Run{}, false
	}
	s = e.Run
	s.samples = e.Samples
	s.Dir = d.Name
	// gob keeps no difference between an empty list and none.
	s.Kinds, s.Tags = m.Kinds, m.Tags
	return s, true
}

// maxSummaryBytes bounds what is read of a summary file: a run's is tens of
// KiB (its per-level request latencies); a larger one is not headroom's.
const maxSummaryBytes = 64 << 20
