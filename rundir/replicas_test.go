package rundir

import (
	"path/filepath"
	"testing"
)

// Runs recorded before the replica columns existed read them as null, and
// a manifest without replicas or GPU links reads as one server.
func TestReplicaColumnsReadNullInOldRuns(t *testing.T) {
	dir := "../testdata/runs/testengine-sequences/seq1-a"
	reqs, err := ReadTable[RequestRow](dir, TableRequests)
	if err != nil || len(reqs) == 0 {
		t.Fatalf("%d requests, %v", len(reqs), err)
	}
	for _, r := range reqs {
		if r.Replica != nil {
			t.Fatalf("request %s of an old run has replica %d", r.RequestID, *r.Replica)
		}
	}
	for _, table := range []string{TableServerMetrics, TableServerLogLines} {
		switch table {
		case TableServerMetrics:
			rows, err := ReadTable[ServerMetricRow](dir, table)
			if err != nil || len(rows) == 0 || rows[0].Replica != nil {
				t.Errorf("%s: %d rows, %v", table, len(rows), err)
			}
		case TableServerLogLines:
			rows, err := ReadTable[ServerLogLineRow](dir, table)
			if err != nil || len(rows) == 0 || rows[0].Replica != nil {
				t.Errorf("%s: %d rows, %v", table, len(rows), err)
			}
		}
	}
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Replicas) != 0 || m.Interconnect() != "" {
		t.Errorf("old manifest: replicas %v, interconnect %q", m.Replicas, m.Interconnect())
	}
}

// A replica column round-trips: set on a replica's rows, null on others.
func TestReplicaColumnRoundTrip(t *testing.T) {
	dir := t.TempDir()
	one := int32(1)
	w, err := NewTableWriter[RequestRow](dir, TableRequests, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.Add(RequestRow{RequestID: "a", Replica: &one}, RequestRow{RequestID: "b"})
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	rows, err := ReadTable[RequestRow](filepath.Clean(dir), TableRequests)
	if err != nil || len(rows) != 2 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	if rows[0].Replica == nil || *rows[0].Replica != 1 || rows[1].Replica != nil {
		t.Errorf("replicas read back: %v, %v", rows[0].Replica, rows[1].Replica)
	}
}

// The interconnect is the slowest pair's path; NVLink only when every pair
// has it.
func TestInterconnect(t *testing.T) {
	for _, tc := range []struct {
		links []GPULink
		want  string
	}{
		{nil, ""},
		{[]GPULink{{A: 0, B: 1, Path: "nvlink", NVLinks: 18}}, "NVLink (18 links per GPU)"},
		{[]GPULink{{A: 0, B: 1, Path: "nvlink"}}, "NVLink"},
		{[]GPULink{{A: 0, B: 1, Path: "nvlink", NVLinks: 18}, {A: 0, B: 2, Path: "pcie_host_bridge"}}, "PCIe host bridge"},
		{[]GPULink{{A: 0, B: 1, Path: "cpu_interconnect"}, {A: 0, B: 2, Path: "pcie_switch"}}, "CPU interconnect"},
		{[]GPULink{{A: 0, B: 1, Path: "unknown"}}, ""},
	} {
		m := &Manifest{GPULinks: tc.links}
		if got := m.Interconnect(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.links, got, tc.want)
		}
	}
}
