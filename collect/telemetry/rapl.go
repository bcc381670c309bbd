package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/headroom-llm/headroom/rundir"
)

// Powercap is where Linux exposes the CPU's RAPL energy counters.
const Powercap = "/sys/class/powercap"

// RAPL reads the host's RAPL energy counters (package, DRAM and the other
// zones the kernel lists) from a powercap folder.
type RAPL struct {
	zones []raplZone
}

type raplZone struct {
	dir, zone, name string
	maxUJ           int64
}

// ErrNoRAPL says the host exposes no RAPL counter at all (no powercap
// folder, or no intel-rapl zone in it: most VMs, non-x86 hosts).
var ErrNoRAPL = errors.New("CPU energy: no RAPL counters on this host")

// OpenRAPL finds the readable RAPL zones under root (Powercap on a real
// host). It returns ErrNoRAPL when there are none, and an error naming the
// first file when the zones exist but cannot be read (since Linux 5.10
// energy_uj is readable by root only).
func OpenRAPL(root string) (*RAPL, error) {
	dirs, _ := filepath.Glob(filepath.Join(root, "intel-rapl:*"))
	if len(dirs) == 0 {
		return nil, ErrNoRAPL
	}
	sort.Strings(dirs)
	r := &RAPL{}
	var first error
	for _, d := range dirs {
		z := raplZone{dir: d, zone: filepath.Base(d)}
		name, err := os.ReadFile(filepath.Join(d, "name"))
		if err == nil {
			z.name = strings.TrimSpace(string(name))
			z.maxUJ, err = readUJ(filepath.Join(d, "max_energy_range_uj"))
		}
		if err == nil {
			_, err = readUJ(filepath.Join(d, "energy_uj"))
		}
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		r.zones = append(r.zones, z)
	}
	if len(r.zones) == 0 {
		return nil, fmt.Errorf("CPU energy: RAPL counters exist but none is readable (%w); run as root to record them", first)
	}
	return r, nil
}

// Zones names the zones read ("intel-rapl:0 package-0", …).
func (r *RAPL) Zones() []string {
	out := make([]string, len(r.zones))
	for i, z := range r.zones {
		out[i] = z.zone + " " + z.name
	}
	return out
}

// Sample reads every zone once, stamped with timeNS; a zone that fails is
// left out of this sample.
func (r *RAPL) Sample(timeNS int64) []rundir.CPUEnergyRow {
	rows := make([]rundir.CPUEnergyRow, 0, len(r.zones))
	for _, z := range r.zones {
		uj, err := readUJ(filepath.Join(z.dir, "energy_uj"))
		if err != nil {
			continue
		}
		rows = append(rows, rundir.CPUEnergyRow{TimeNS: timeNS, Zone: z.zone, Name: z.name, EnergyUJ: uj, MaxEnergyRangeUJ: z.maxUJ})
	}
	return rows
}

// SampleRAPL samples r every interval until ctx ends, and once more then,
// handing the rows to sink.
func SampleRAPL(ctx context.Context, r *RAPL, interval time.Duration, now func() int64, sink func([]rundir.CPUEnergyRow)) {
	if interval <= 0 {
		interval = DefaultGPUInterval
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		if rows := r.Sample(now()); len(rows) > 0 {
			sink(rows)
		}
		select {
		case <-ctx.Done():
			if rows := r.Sample(now()); len(rows) > 0 {
				sink(rows)
			}
			return
		case <-tick.C:
		}
	}
}

func readUJ(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%s: not a counter: %q", path, strings.TrimSpace(string(b)))
	}
	return v, nil
}
