package telemetry

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/rundir"
)

// fakePowercap writes a powercap folder as Linux lays it out on a
// two-socket server: package zones, a DRAM subzone, and the control type
// folder "intel-rapl" (not a zone).
func fakePowercap(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, z := range []struct{ dir, name, uj, max string }{
		{"intel-rapl:0", "package-0", "262143000000", "262143328850"},
		{"intel-rapl:0:0", "dram", "1000", "65712999613"},
		{"intel-rapl:1", "package-1", "5", "262143328850"},
	} {
		d := filepath.Join(root, z.dir)
		write(t, filepath.Join(d, "name"), z.name+"\n")
		write(t, filepath.Join(d, "energy_uj"), z.uj+"\n")
		write(t, filepath.Join(d, "max_energy_range_uj"), z.max+"\n")
	}
	write(t, filepath.Join(root, "intel-rapl", "enabled"), "1\n")
	return root
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRAPLReadsZones(t *testing.T) {
	root := fakePowercap(t)
	r, err := OpenRAPL(root)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.Zones(), ","); got != "intel-rapl:0 package-0,intel-rapl:0:0 dram,intel-rapl:1 package-1" {
		t.Errorf("zones %s", got)
	}
	rows := r.Sample(7)
	want := []rundir.CPUEnergyRow{
		{TimeNS: 7, Zone: "intel-rapl:0", Name: "package-0", EnergyUJ: 262143000000, MaxEnergyRangeUJ: 262143328850},
		{TimeNS: 7, Zone: "intel-rapl:0:0", Name: "dram", EnergyUJ: 1000, MaxEnergyRangeUJ: 65712999613},
		{TimeNS: 7, Zone: "intel-rapl:1", Name: "package-1", EnergyUJ: 5, MaxEnergyRangeUJ: 262143328850},
	}
	if len(rows) != len(want) {
		t.Fatalf("rows %+v", rows)
	}
	for i := range want {
		if rows[i] != want[i] {
			t.Errorf("row %d: %+v, want %+v", i, rows[i], want[i])
		}
	}
	// The package counter wraps past its range: the raw reading is kept
	// with the range, for the analyzer to take the difference.
	write(t, filepath.Join(root, "intel-rapl:0", "energy_uj"), strconv.Itoa(400000)+"\n")
	if rows := r.Sample(8); rows[0].EnergyUJ != 400000 || rows[0].MaxEnergyRangeUJ != 262143328850 {
		t.Errorf("after the wrap %+v", rows[0])
	}
	// A zone that fails to read is left out of that sample only.
	write(t, filepath.Join(root, "intel-rapl:1", "energy_uj"), "garbage\n")
	if rows := r.Sample(9); len(rows) != 2 {
		t.Errorf("a bad zone: %+v", rows)
	}
}

func TestRAPLAbsentOrUnreadable(t *testing.T) {
	if _, err := OpenRAPL(t.TempDir()); !errors.Is(err, ErrNoRAPL) {
		t.Errorf("no zones: %v", err)
	}
	root := t.TempDir()
	write(t, filepath.Join(root, "intel-rapl:0", "name"), "package-0\n")
	write(t, filepath.Join(root, "intel-rapl:0", "max_energy_range_uj"), "262143328850\n")
	// energy_uj missing, as it reads to a non-root user: an error that
	// says what to do, not ErrNoRAPL.
	_, err := OpenRAPL(root)
	if err == nil || errors.Is(err, ErrNoRAPL) || !strings.Contains(err.Error(), "run as root") || !strings.Contains(err.Error(), "energy_uj") {
		t.Errorf("unreadable: %v", err)
	}
}

func TestSampleRAPLStops(t *testing.T) {
	r, err := OpenRAPL(fakePowercap(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	var n int
	var now int64
	SampleRAPL(ctx, r, 5*time.Millisecond, func() int64 { now++; return now }, func(rows []rundir.CPUEnergyRow) { n += len(rows) })
	if n < 6 || n%3 != 0 { // at least the first and the last sample, three zones each
		t.Errorf("%d rows", n)
	}
}
