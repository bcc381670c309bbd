package rundir

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// RunIDColumn is the column every table part of a run carries (format 2 on):
// the manifest's run_id, so that rows read from many runs at once (DuckDB's
// read_parquet('archive/**/requests/*.parquet')) say which run they belong
// to without the file name.
const RunIDColumn = "run_id"

// NewRunID returns a new run identifier: a UUID version 7 (RFC 9562), which
// is unique without coordination and sorts by creation time.
func NewRunID() string {
	id, err := uuid.NewV7()
	if err != nil {
		// NewV7 fails only when the system's random source does; a v4
		// from the same source would fail too, so this cannot be reached
		// in practice, but a run must never be left without an id.
		return uuid.NewSHA1(uuid.NameSpaceOID, []byte(time.Now().String())).String()
	}
	return id.String()
}

// runIDNamespace is the UUID namespace of ids derived for runs written
// before run_id existed (format 1).
var runIDNamespace = uuid.MustParse("6c1f8a52-4c2e-4d7a-9a55-2f1a3b9e7d10")

// derivedRunID is the id of a format-1 run, which has none recorded: a UUID
// version 5 of what identifies the measurement (start time to the
// nanosecond, host, kinds, label, engine address and model, imported file's
// hash). It is the same every time the run is read, wherever it is copied,
// so an index built from it stays valid; a rewrite of the manifest
// (a resume) records it.
func derivedRunID(m *Manifest) string {
	var b strings.Builder
	b.WriteString(m.StartTime.UTC().Format(time.RFC3339Nano))
	for _, s := range []string{m.Host.Hostname, strings.Join(m.Kinds, ","), m.Label} {
		b.WriteString("\x00" + s)
	}
	if e := m.Engine; e != nil {
		b.WriteString("\x00" + e.BaseURL + "\x00" + e.Model)
	}
	if s := m.Source; s != nil {
		b.WriteString("\x00" + s.SHA256 + "\x00" + s.File)
	}
	return uuid.NewSHA1(runIDNamespace, []byte(b.String())).String()
}

// RequestID is the request_id of request seq of level li in the run with
// the given id: unique across runs, so requests of many runs join without
// colliding. Without a run id it is "li-seq", the format-1 form.
func RequestID(runID string, li, seq int) string {
	s := strconv.Itoa(li) + "-" + strconv.Itoa(seq)
	if runID == "" {
		return s
	}
	return runID + "-" + s
}

// runIDOf reads the run id from dir's manifest for the table writers; ""
// when dir holds no readable manifest (a table written outside a run).
func runIDOf(dir string) string {
	data, err := readRegular(filepath.Join(dir, ManifestFile), MaxManifestBytes)
	if err != nil || !bytes.Contains(data, []byte(`"format_version"`)) {
		return ""
	}
	var probe struct {
		RunID string `json:"run_id"`
	}
	if json.Unmarshal(data, &probe) == nil && probe.RunID != "" {
		return probe.RunID
	}
	m, err := DecodeManifest(data)
	if err != nil {
		return ""
	}
	return m.RunID
}
