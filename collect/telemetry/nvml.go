package telemetry

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/headroom-llm/headroom/cuda/nvml"
	"github.com/headroom-llm/headroom/rundir"
)

// nvidiaProcGPUs lists the host's NVIDIA GPUs by PCI bus id (one folder
// each), without CUDA: the sweep must not touch the GPUs the server uses.
const nvidiaProcGPUs = "/proc/driver/nvidia/gpus"

// OpenGPU returns a GPUSource for every NVIDIA GPU of this host, read
// through NVML (cuda/nvml, loaded at run time). Without a GPU or driver it
// returns NoGPU and an error saying why; the sweep records it as a note.
func OpenGPU() (GPUSource, error) {
	entries, err := os.ReadDir(nvidiaProcGPUs)
	if err != nil {
		return NoGPU{}, errors.New("GPU telemetry: no NVIDIA GPU on this host (no " + nvidiaProcGPUs + ")")
	}
	var busIDs []string
	for _, e := range entries {
		busIDs = append(busIDs, e.Name())
	}
	return openNVML("", busIDs)
}

// NVMLSource samples GPUs through NVML.
type NVMLSource struct {
	lib     *nvml.Library
	devs    []*nvml.Device
	info    []rundir.GPU
	indexes []int32
}

// openNVML opens NVML (from libPath, or the loader's default) and the
// GPUs with the given PCI bus ids, numbered in bus-id order.
func openNVML(libPath string, busIDs []string) (GPUSource, error) {
	if len(busIDs) == 0 {
		return NoGPU{}, errors.New("GPU telemetry: no NVIDIA GPU on this host")
	}
	lib, err := nvml.Open(libPath)
	if err != nil {
		return NoGPU{}, fmt.Errorf("GPU telemetry: %w", err)
	}
	sort.Strings(busIDs)
	driver, _ := lib.DriverVersion()
	s := &NVMLSource{lib: lib}
	for i, id := range busIDs {
		d, err := lib.DeviceByPCIBusID(id)
		if err != nil {
			continue
		}
		s.devs = append(s.devs, d)
		s.indexes = append(s.indexes, int32(i))
		s.info = append(s.info, rundir.GPU{
			Index: i, Name: d.Name, UUID: d.UUID, BusID: strings.ToUpper(id), Driver: driver,
			SMClockMaxMHz: d.MaxSMClockMHz, MemClockMaxMHz: d.MaxMemClockMHz, PowerLimitW: d.PowerLimitW,
		})
	}
	if len(s.devs) == 0 {
		lib.Close()
		return NoGPU{}, fmt.Errorf("GPU telemetry: NVML knows none of the GPUs %v", busIDs)
	}
	return s, nil
}

// Devices describes the GPUs for the manifest.
func (s *NVMLSource) Devices() []rundir.GPU { return s.info }

// Links says how every pair of the GPUs is connected (NVML's topology),
// for the manifest's gpu_links.
func (s *NVMLSource) Links() []rundir.GPULink {
	var out []rundir.GPULink
	for i := range s.devs {
		for j := i + 1; j < len(s.devs); j++ {
			l := s.devs[i].LinkTo(s.devs[j])
			out = append(out, rundir.GPULink{A: int(s.indexes[i]), B: int(s.indexes[j]), Path: l.Path, NVLinks: l.NVLinks})
		}
	}
	return out
}

// Sample reads every GPU once. A GPU that fails is skipped; the first
// failure is returned.
func (s *NVMLSource) Sample(timeNS int64) ([]rundir.GPUTelemetryRow, error) {
	rows := make([]rundir.GPUTelemetryRow, 0, len(s.devs))
	var first error
	for i, d := range s.devs {
		r, err := d.Sample()
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		procs := int32(-1)
		if ps, err := d.ComputeProcesses(); err == nil {
			procs = int32(len(ps))
		}
		row := rundir.GPUTelemetryRow{
			TimeNS: timeNS, Device: s.indexes[i], SMClockMHz: float64(r.SMClockMHz), MemClockMHz: float64(r.MemClockMHz),
			PowerW: r.PowerW, TemperatureC: float64(r.TemperatureC), GPUUtilPct: float64(r.UtilGPUPct),
			MemUtilPct: float64(r.UtilMemPct), MemUsedBytes: int64(r.MemUsedBytes),
			ThrottleReasons: int64(r.ClockEventReasons), Throttle: strings.Join(nvml.ReasonNames(r.ClockEventReasons), ","),
			Processes: procs, // the server's own included
		}
		if r.EnergyKnown {
			mj := int64(r.EnergyMJ)
			row.EnergyMJ = &mj
		}
		rows = append(rows, row)
	}
	return rows, first
}

// Close shuts NVML down.
func (s *NVMLSource) Close() error { return s.lib.Close() }
