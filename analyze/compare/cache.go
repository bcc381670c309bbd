package compare

import (
	"bytes"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/internal/buildinfo"
	"github.com/headroom-llm/headroom/rundir"
)

// SummaryCache keeps each run's comparison summary (what summarize
// computes: the headline numbers, wall, levels and per-level request
// samples) in a local directory, one file per run, so a second compare of
// an archive reads one small file per run instead of its Parquet tables,
// server log and analysis. An entry is found by a key over everything the
// summary depends on: the run's name (directory or URL), its manifest's
// bytes, a --label given to it, the analysis settings and the headroom
// version. Runs that are
// not complete (still being written, or interrupted) are never cached.
//
// What the key does not see: a run whose tables are rewritten without its
// manifest changing (headroom never does this; a hand edit could) is
// served from the cache until the cache directory is deleted.
type SummaryCache string

// cacheFormat changes whenever cachedSummary or what summarize keeps does.
const cacheFormat = "headroom-compare-summary-3" // 2: loads as analyze.LoadKey, codes for reasons (issue 17); 3: the sweep summary carries its Pareto view

type cachedSummary struct {
	Run     Run
	Samples []analyze.LevelSamples
}

// key is the entry's name for a run with manifest bytes raw, analysed
// with the settings encoded as set (settingsJSON).
func (c SummaryCache) key(name, label string, raw, set []byte) string {
	return summaryKey(name, label, raw, set)
}

// settingsJSON encodes analysis settings for summaryKey, once per compare
// or index: the built-in price table makes it several KiB.
func settingsJSON(set analyze.Settings) ([]byte, error) {
	return json.Marshal(set) // Settings.Now is not encoded
}

// summaryKey names a summary by everything it depends on: the summary's
// format, the headroom version, the run's name and label, the analysis
// settings (settingsJSON) and the manifest's bytes (the cache's entries and
// the summary a run keeps, runsummary.go).
func summaryKey(name, label string, raw, set []byte) string {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(cacheFormat), []byte(buildinfo.Version()), []byte(name), []byte(label), set, raw} {
		fmt.Fprintf(h, "%d:", len(part))
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (c SummaryCache) path(key string) string {
	return filepath.Join(string(c), key[:2], key+".gob")
}

// get returns the cached summary, or ok false when there is none (or the
// entry cannot be read: it is then recomputed and replaced).
// Without samples, the entry's request samples are not read.
func (c SummaryCache) get(key string, samples bool) (s Run, ok bool) {
	data, err := os.ReadFile(c.path(key))
	if err != nil {
		return Run{}, false
	}
	var e cachedSummary
	if samples {
		err = decodeGob(data, &e)
	} else {
		var h struct{ Run Run }
		err = decodeGobAs[cachedSummary](data, &h)
		e.Run = h.Run
	}
	if err != nil {
		return Run{}, false
	}
	e.Run.samples = e.Samples
	return e.Run, true
}

func (c SummaryCache) put(key string, s Run) error {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(cachedSummary{Run: s, Samples: s.samples}); err != nil {
		return fmt.Errorf("summary cache: %w", err)
	}
	p := c.path(key)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("summary cache: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return fmt.Errorf("summary cache: %w", err)
	}
	_, err = tmp.Write(buf.Bytes())
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("summary cache %s: %w", c, err)
	}
	return nil
}

// readManifest reads a run's manifest bytes and decodes them.
func readManifest(d rundir.Dir) ([]byte, *rundir.Manifest, error) {
	raw, err := d.ReadFile(rundir.ManifestFile, rundir.MaxManifestBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("%s: %w", d.Name, rundir.ErrNotRun)
	}
	if err != nil {
		return nil, nil, err
	}
	m, err := rundir.DecodeManifest(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", d.Path(rundir.ManifestFile), err)
	}
	return raw, m, nil
}

// lookupSummary finds run d's summary (ok), with its manifest: the run's
// own (runsummary.go) when own is set and it holds, else the cache's when
// a cache is given; label is the name the comparison gives the run ("" for
// its own); set is the analysis settings, settingsJSON. When neither holds
// it, key is the name to store the fresh summary under in the cache, ""
// for no cache or a run that is not to be cached (incomplete, or a
// manifest the full load will report on in its own words).
func lookupSummary(d rundir.Dir, label string, own bool, set []byte, c SummaryCache) (m *rundir.Manifest, s Run, key string, ok bool, err error) {
	raw, m, ownSum, err := readRun(d, own, set, true)
	if err != nil || !m.Complete {
		// The full load reports a bad manifest with its own words.
		return nil, Run{}, "", false, nil
	}
	s, key, ok = summaryOf(d, raw, m, ownSum, label, set, c, true)
	return m, s, key, ok, nil
}

// summaryOf is lookupSummary for a complete run whose manifest (bytes raw,
// decoded m) and own summary (ownSum, nil when none holds: readRun) the
// caller has read; without samples, the summary lacks the request samples
// (the index needs none).
func summaryOf(d rundir.Dir, raw []byte, m *rundir.Manifest, ownSum *runSummaryFile, label string, set []byte, c SummaryCache, samples bool) (s Run, key string, ok bool) {
	if ownSum != nil {
		return ownSum.run(d, m), "", true
	}
	if c == "" {
		return Run{}, "", false
	}
	key = c.key(d.Name, label, raw, set)
	if s, ok = c.get(key, samples); ok {
		// gob keeps no difference between an empty list and none.
		s.Kinds, s.Tags = m.Kinds, m.Tags
	}
	return s, key, ok
}
