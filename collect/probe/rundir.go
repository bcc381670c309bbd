package probe

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/headroom-llm/headroom/cuda/nvml"
	"github.com/headroom-llm/headroom/internal/uniq"
	"github.com/headroom-llm/headroom/rundir"
)

// DType is the element type of every probe measurement.
const DType = "bf16"

// allDevices lists the solo results, then the concurrent ones.
func (r *Result) allDevices() []DeviceResult {
	return append(append([]DeviceResult(nil), r.Devices...), r.Concurrent...)
}

// GEMMRows converts the GEMM points to rows of the probe_gemm table.
func (r *Result) GEMMRows() []rundir.ProbeGEMMRow {
	var rows []rundir.ProbeGEMMRow
	for _, d := range r.allDevices() {
		rows = append(rows, d.gemmRows()...)
		rows = append(rows, d.fp8Rows()...)
	}
	return rows
}

// gemmRows are the bf16 sweep's rows, fp8Rows the FP8 sweep's.
func (d *DeviceResult) gemmRows() []rundir.ProbeGEMMRow { return d.rowsOf(d.GEMM, DType) }
func (d *DeviceResult) fp8Rows() []rundir.ProbeGEMMRow  { return d.rowsOf(d.GEMMFP8, DTypeFP8) }

func (d *DeviceResult) rowsOf(points []GEMMPoint, dtype string) []rundir.ProbeGEMMRow {
	var rows []rundir.ProbeGEMMRow
	for _, p := range points {
		if len(p.RepeatTimesMS) == 0 {
			continue // validated but not timed (the probe stopped there)
		}
		batch := p.Batch
		if p.RunBatch > 0 {
			batch = p.RunBatch // the product timed; FLOP and bytes are its
		}
		rows = append(rows, rundir.ProbeGEMMRow{
			Device: int32(d.GPU.Ordinal), Mode: string(d.Mode),
			Batch: int64(batch), K: int64(p.K), N: int64(p.N), DType: dtype,
			FLOP: p.FLOPs, Bytes: p.Bytes, Intensity: p.Intensity,
			Repeats: int64(len(p.RepeatTimesMS)), CallsPerRepeat: int64(p.CallsPerRepeat),
			TimeMedianS: p.TimeMS.Median / 1e3, TimeMinS: p.TimeMS.Min / 1e3, TimeMaxS: p.TimeMS.Max / 1e3,
			FLOPPerS:  p.TFLOPS * 1e12,
			MaxRelErr: p.Validation.MaxRelError,
		})
	}
	return rows
}

// ModelGEMMRows converts the model GEMM points to rows of the probe_model_gemm table.
func (r *Result) ModelGEMMRows() []rundir.ProbeModelGEMMRow {
	var rows []rundir.ProbeModelGEMMRow
	for _, d := range r.allDevices() {
		for _, p := range d.ModelGEMM {
			if len(p.RepeatTimesMS) == 0 {
				continue
			}
			rows = append(rows, rundir.ProbeModelGEMMRow{
				Device: int32(d.GPU.Ordinal), Mode: string(d.Mode), Model: r.Model,
				Batch: int64(p.Batch), Op: p.Op, DType: p.DType, Tokens: int64(p.Tokens), RunTokens: int64(p.RunTokens),
				K: int64(p.K), N: int64(p.N), CallsPerStep: p.Count, FLOP: p.FLOPs, Bytes: p.Bytes,
				Repeats: int64(len(p.RepeatTimesMS)), CallsPerRepeat: int64(p.CallsPerRepeat),
				TimeMedianS: p.TimeMS.Median / 1e3, TimeMinS: p.TimeMS.Min / 1e3, TimeMaxS: p.TimeMS.Max / 1e3,
				MaxRelErr: p.Validation.MaxRelError,
			})
		}
	}
	return rows
}

// BandwidthRows converts the bandwidth points to rows of the probe_bandwidth table.
func (r *Result) BandwidthRows() []rundir.ProbeBandwidthRow {
	var rows []rundir.ProbeBandwidthRow
	for _, d := range r.allDevices() {
		rows = append(rows, d.bandwidthRows()...)
	}
	return rows
}

func (d *DeviceResult) bandwidthRows() []rundir.ProbeBandwidthRow {
	var rows []rundir.ProbeBandwidthRow
	for _, p := range d.Bandwidth {
		rows = append(rows, rundir.ProbeBandwidthRow{
			Device: int32(d.GPU.Ordinal), Mode: string(d.Mode), Method: p.Method,
			BufferBytes: int64(p.BufferBytes), BytesPerCall: float64(p.BytesPerCall),
			Repeats: int64(len(p.RepeatTimesMS)), CallsPerRepeat: int64(p.CallsPerRepeat),
			TimeMedianS: p.TimeMS.Median / 1e3, TimeMinS: p.TimeMS.Min / 1e3, TimeMaxS: p.TimeMS.Max / 1e3,
			BytesPerS: p.GBps * 1e9,
		})
	}
	return rows
}

// TelemetryRows converts every NVML sample to rows of the gpu_telemetry table.
func (r *Result) TelemetryRows() []rundir.GPUTelemetryRow {
	var rows []rundir.GPUTelemetryRow
	for _, d := range r.allDevices() {
		for _, s := range d.Telemetry {
			rows = append(rows, rundir.GPUTelemetryRow{
				TimeNS: s.Time.UnixNano(), Device: int32(s.Ordinal),
				SMClockMHz: float64(s.SMClockMHz), MemClockMHz: float64(s.MemClockMHz),
				PowerW: s.PowerW, TemperatureC: float64(s.TemperatureC),
				GPUUtilPct: float64(s.UtilGPUPct), MemUtilPct: float64(s.UtilMemPct),
				MemUsedBytes:    int64(s.MemUsedBytes),
				ThrottleReasons: int64(s.ClockEventReasons),
				Throttle:        strings.Join(nvml.ReasonNames(s.ClockEventReasons), ","),
				Processes:       int32(s.Processes),
				EnergyMJ:        s.EnergyMJ,
			})
		}
	}
	return rows
}

// ManifestGPUs describes the probed GPUs for the manifest.
func (r *Result) ManifestGPUs() []rundir.GPU {
	var gpus []rundir.GPU
	for _, d := range r.Devices {
		g := d.GPU
		gpus = append(gpus, rundir.GPU{
			Index: g.Ordinal, Name: g.Name, UUID: g.UUID, BusID: g.PCIBusID, MemoryBytes: int64(g.TotalMemoryBytes),
			Driver: r.DriverVersion, CUDAVersion: CUDAVersionString(r.CUDADriverVersion),
			ComputeCapability: g.ComputeCapability, SMClockMaxMHz: g.MaxSMClockMHz, MemClockMaxMHz: g.MaxMemClockMHz,
			PowerLimitW: g.PowerLimitW,
		})
	}
	return gpus
}

// CUDAVersionString formats cuDriverGetVersion's number: 13000 → "13.0".
func CUDAVersionString(v int) string {
	if v <= 0 {
		return ""
	}
	return fmt.Sprintf("%d.%d", v/1000, v%1000/10)
}

// ManifestProbe holds the headline numbers for the manifest: those of the
// first GPU probed on its own (the tables hold every GPU's).
func (r *Result) ManifestProbe() *rundir.Probe {
	p := &rundir.Probe{ProbeRoofline: rundir.ProbeRoofline{DType: DType, K: r.K, N: r.N}}
	validated := len(r.Devices) > 0
	for _, d := range r.allDevices() {
		p.Devices = uniq.Append(p.Devices, d.GPU.Ordinal)
		p.Throttled = p.Throttled || d.Throttled
		p.Busy = p.Busy || d.Busy
		p.ClocksBelowBase = p.ClocksBelowBase || d.ClocksBelowBase
		if len(d.GEMM) == 0 {
			validated = false
		}
		for _, g := range slices.Concat(d.GEMM, d.GEMMFP8) {
			validated = validated && g.Validation.Passed
		}
		for _, g := range d.ModelGEMM {
			validated = validated && g.Validation.Passed
		}
		for _, b := range d.Bandwidth {
			validated = validated && b.Verified
		}
	}
	p.Validated = validated
	if len(r.Devices) > 0 {
		rl := r.Devices[0].roofline(r.KneeFraction)
		p.PeakFLOPPerS, p.PeakBatch = rl.PeakFLOPPerS, int(rl.PeakBatch)
		p.BandwidthBytesPerS, p.BandwidthMethod = rl.BandwidthBytesPerS, rl.BandwidthMethod
		p.RidgeFLOPPerByte, p.KneeBatch = rl.RidgeFLOPPerByte, int(rl.KneeBatch)
		if d := r.Devices[0]; d.PeakFP8TFLOPS > 0 {
			p.FP8 = &rundir.ProbeCeiling{DType: DTypeFP8, PeakFLOPPerS: d.PeakFP8TFLOPS * 1e12, PeakBatch: d.PeakFP8Batch,
				RidgeFLOPPerByte: d.RidgeFP8FLOPsPerByte, KneeBatch: d.KneeFP8Batch}
		}
	}
	p.Model, p.ModelConfig = r.Model, r.ModelConfig
	return p
}

// WriteTo writes the probe tables into run and fills the manifest's
// GPUs, probe summary and warnings; the caller saves or finishes the run.
func (r *Result) WriteTo(run *rundir.Run) error {
	var errs []error
	if rows := r.GEMMRows(); len(rows) > 0 {
		errs = append(errs, rundir.WriteTable(run.Dir, rundir.TableProbeGEMM, rows))
	}
	if rows := r.BandwidthRows(); len(rows) > 0 {
		errs = append(errs, rundir.WriteTable(run.Dir, rundir.TableProbeBandwidth, rows))
	}
	if rows := r.ModelGEMMRows(); len(rows) > 0 {
		errs = append(errs, rundir.WriteTable(run.Dir, rundir.TableProbeModelGEMM, rows))
	}
	if rows := r.TelemetryRows(); len(rows) > 0 {
		errs = append(errs, rundir.WriteTable(run.Dir, rundir.TableGPUTelemetry, rows))
	}
	m := run.Manifest
	m.AddKind(rundir.KindProbe)
	m.GPUs = r.ManifestGPUs()
	m.Probe = r.ManifestProbe()
	m.Warnings = append(m.Warnings, r.Warnings...)
	if r.CUBLASVersion != "" {
		m.Notes = append(m.Notes, fmt.Sprintf("probe: cuBLAS %s (%s), CUDA driver API %s", r.CUBLASVersion, r.CUBLASPath, CUDAVersionString(r.CUDADriverVersion)))
	}
	if r.CUBLASLtVersion != "" {
		m.Notes = append(m.Notes, fmt.Sprintf("probe: FP8 through cuBLASLt %s (%s): E4M3 inputs, per-tensor scales, fast FP8 accumulation, bf16 output", r.CUBLASLtVersion, r.CUBLASLtPath))
	}
	return errors.Join(errs...)
}
