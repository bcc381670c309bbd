package probe

import "time"

// Result is everything one probe run measured.
type Result struct {
	Started, Finished time.Time
	// Complete is false when the run was cancelled or failed part way; the
	// devices and points measured until then are kept.
	Complete bool

	CUDADriverVersion int    // e.g. 13000 for CUDA 13.0, from cuDriverGetVersion
	DriverVersion     string // the NVIDIA driver, e.g. "580.159.04", from NVML ("" without NVML)
	CUBLASVersion     string // e.g. "13.1.0"
	CUBLASPath        string
	CUBLASLtVersion   string // "" unless FP8 was measured
	CUBLASLtPath      string
	// Model names the model whose decode GEMMs were timed ("" for none),
	// ModelConfig the config.json it was read from.
	Model, ModelConfig string

	K, N int // the GEMM's inner and output dimensions
	// KneeFraction of the peak defines each device's knee.
	KneeFraction float64

	// Devices holds one result per GPU probed on its own.
	Devices []DeviceResult
	// Concurrent holds one result per GPU from the run with every GPU at
	// once; empty unless more than one GPU was probed.
	Concurrent []DeviceResult
	// Disagreements lists GPUs whose peak or bandwidth differs from the
	// others' median (or from their own solo run) by more than the tolerance.
	Disagreements []Disagreement
	// Warnings are things a reader of the numbers must know (no NVML,
	// throttling, a buffer size skipped for lack of memory, ...).
	Warnings []string
}

// Mode says whether a device ran alone or with every other probed GPU busy too.
type Mode string

// Modes of a DeviceResult.
const (
	ModeSolo       Mode = "solo"
	ModeConcurrent Mode = "concurrent"
)

// GPU identifies one device.
type GPU struct {
	Ordinal           int // CUDA ordinal in this process
	Name              string
	UUID              string // from NVML, "" without it
	PCIBusID          string
	TotalMemoryBytes  uint64
	Multiprocessors   int
	ComputeCapability string
	PowerLimitW       float64 // enforced power limit from NVML; 0 if unknown
	MaxSMClockMHz     int
	MaxMemClockMHz    int
	BaseSMClockMHz    int // the default applications clock from NVML; 0 if unknown
}

// DeviceResult is the roofline of one GPU.
type DeviceResult struct {
	GPU  GPU
	Mode Mode

	Bandwidth []BandwidthPoint
	GEMM      []GEMMPoint

	// BandwidthGBps is the best copy bandwidth (bytes read plus written)
	// over the copy methods and buffer sizes; BandwidthMethod and
	// BandwidthBufferBytes say where it was reached.
	BandwidthGBps        float64
	BandwidthMethod      string
	BandwidthBufferBytes uint64
	// ReadBandwidthGBps is the best read-only bandwidth (the sum kernel); it
	// does not enter the ridge, which the seed defines from a copy.
	ReadBandwidthGBps float64

	PeakTFLOPS        float64 // highest median TFLOP/s over the batch sizes
	PeakBatch         int
	RidgeFLOPsPerByte float64 // PeakTFLOPS / BandwidthGBps, in FLOP per byte
	KneeBatch         int     // smallest batch reaching KneeFraction of the peak; 0 if none

	// GEMMFP8 is the same sweep in FP8 (E4M3 inputs, bf16 output) through
	// cuBLASLt, and the FP8 roofline numbers derived from it as above (the
	// ridge against the same copy bandwidth); empty without WithFP8.
	GEMMFP8              []GEMMPoint
	PeakFP8TFLOPS        float64
	PeakFP8Batch         int
	RidgeFP8FLOPsPerByte float64
	KneeFP8Batch         int

	// ModelGEMM is the model's own decode GEMMs (WithModelGEMMs), one point
	// per (decode batch, operation, dtype).
	ModelGEMM []ModelGEMMPoint

	// Telemetry is the NVML samples taken while this device was probed.
	Telemetry []TelemetrySample
	// Throttled is true if any sample showed a thermal or hardware slowdown
	// (nvml.ThrottleReasons); ThrottleReasons names what was seen.
	Throttled       bool
	ThrottleReasons []string
	// PowerCapped is true if any sample showed the software power cap,
	// which heavy GEMMs reach on most data-centre GPUs.
	PowerCapped bool
	// Busy is true if NVML listed compute processes other than headroom on
	// the GPU while it was probed; OtherPIDs are their PIDs.
	Busy      bool
	OtherPIDs []uint32
	// ClocksBelowBase is true if a GEMM ran with its median SM clock below
	// the base clock without a power-cap or thermal reason;
	// LowestSMClockMHz is the lowest such median.
	ClocksBelowBase  bool
	LowestSMClockMHz float64

	Started, Finished time.Time
}

// GEMMPoint is one batch size of the (B,K)@(K,N) sweep.
type GEMMPoint struct {
	Batch, K, N int
	// DType is DType (bf16) or DTypeFP8.
	DType string
	// RunBatch is the batch actually multiplied: Batch, or Batch rounded up
	// to the next multiple of FP8Alignment when cuBLASLt has no FP8 kernel
	// for Batch itself (engines pad the same way). FLOPs, Bytes and the time
	// are those of RunBatch.
	RunBatch  int
	FLOPs     float64
	Bytes     float64 // 2(BK + KN + BN)
	Intensity float64 // FLOPs / Bytes

	// CallsPerRepeat back-to-back GEMMs were timed between two events,
	// Repeats times; TimeMS summarises the time per call over the repeats.
	CallsPerRepeat int
	RepeatTimesMS  []float64
	TimeMS         Summary
	// TFLOPS is at the median time; TFLOPSMin/Max at the slowest/fastest repeat.
	TFLOPS, TFLOPSMin, TFLOPSMax float64

	Validation Validation
	Telemetry  PointTelemetry
	Started    time.Time
	Finished   time.Time
}

// ModelGEMMPoint is one weight GEMM of the model's decode step at one
// batch: Tokens rows of activations times a K×N weight, Count times per step.
type ModelGEMMPoint struct {
	Batch int    // the decode batch (concurrent sequences) this GEMM belongs to
	Op    string // modelspec.OpQKV, OpO, …
	DType string // DType or DTypeFP8
	// Tokens is the product's rows (the batch, or one expert's share of it);
	// RunTokens the rows multiplied (Tokens padded for FP8, as in GEMMPoint).
	Tokens, RunTokens int
	K, N              int
	Count             float64 // products per decode step
	FLOPs, Bytes      float64 // of one product at RunTokens

	CallsPerRepeat int
	RepeatTimesMS  []float64
	TimeMS         Summary
	Validation     Validation
	Telemetry      PointTelemetry
	Started        time.Time
	Finished       time.Time
}

// Validation is the check of one GEMM's output against a float64 reference
// on the CPU from the same bf16 inputs.
type Validation struct {
	Samples     int     // output elements compared
	MaxAbsError float64 // largest |GPU − reference|
	// MaxRelError is the largest |GPU − reference| / |reference|; bf16
	// rounding of the output alone gives up to 2⁻⁸ ≈ 0.0039.
	MaxRelError float64
	// MaxToleranceRatio is the largest |GPU − reference| / tolerance (see
	// validate.go); at most 1 to pass.
	MaxToleranceRatio float64
	RelFrobenius      float64 // ‖GPU − reference‖ / ‖reference‖ over the samples
	UnwrittenCount    int     // output elements still holding the poison value
	Passed            bool
}

// BandwidthPoint is one (method, buffer size) of the bandwidth measurement.
type BandwidthPoint struct {
	Method      string // MethodCopyKernel, MethodMemcpy or MethodSumKernel
	BufferBytes uint64
	// BytesPerCall counts bytes read plus bytes written: 2×BufferBytes for
	// a copy, BufferBytes for the read-only sum.
	BytesPerCall   uint64
	ReadOnly       bool
	CallsPerRepeat int
	RepeatTimesMS  []float64
	TimeMS         Summary
	// GBps is at the median time; GBpsMin/Max at the slowest/fastest repeat.
	GBps, GBpsMin, GBpsMax float64
	// Verified is true once the destination's checksum (for a copy) or the
	// accumulated sum (for the read) matched the host's.
	Verified  bool
	Telemetry PointTelemetry
	Started   time.Time
	Finished  time.Time
}

// Bandwidth methods.
const (
	MethodCopyKernel = "copy_kernel" // the embedded PTX kernel copy16: 16-byte vector loads and stores
	MethodMemcpy     = "memcpy_dtod" // the driver's cuMemcpyDtoD_v2
	MethodSumKernel  = "read_kernel" // the embedded PTX kernel sum16: reads only (a checksum)
)

// PointTelemetry summarises the NVML samples taken during one point.
type PointTelemetry struct {
	Samples           int
	SMClockMHzMedian  float64
	MemClockMHzMedian float64
	PowerWMax         float64
	TemperatureCMax   int
	// ClockEventReasons ORs the nvmlClocksEventReason bits over the samples.
	ClockEventReasons uint64
	Throttled         bool
}

// TelemetrySample is one NVML reading.
type TelemetrySample struct {
	Time              time.Time
	Ordinal           int
	SMClockMHz        int
	MemClockMHz       int
	PowerW            float64
	TemperatureC      int
	UtilGPUPct        int
	UtilMemPct        int
	MemUsedBytes      uint64
	ClockEventReasons uint64
	// EnergyMJ is NVML's total-energy counter; nil where the GPU has none.
	EnergyMJ *int64
	// Processes counts the compute processes on the GPU, headroom's own
	// included; -1 when NVML cannot tell. OtherPIDs are those not headroom's.
	Processes int
	OtherPIDs []uint32
}

// Disagreement flags a GPU whose result differs by more than the tolerance.
type Disagreement struct {
	Ordinal  int
	Mode     Mode
	Metric   string  // "peak_tflops" or "bandwidth_gbps"
	Value    float64 // this GPU's value
	Baseline float64 // what it was compared with
	// Against says what Baseline is: "median of N GPUs" or "solo run".
	Against string
	DiffPct float64 // (Value − Baseline) / Baseline in percent
	Message string
}
