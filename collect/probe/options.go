package probe

import (
	"fmt"
	"time"

	"github.com/headroom-llm/headroom/cuda"
	"github.com/headroom-llm/headroom/modelspec"
	"github.com/headroom-llm/headroom/roofline"
)

// Defaults of the probe; each has an Option to change it.
const (
	// DefaultK and DefaultN make the seed's shape (B,8192)@(8192,8192), a
	// square transformer projection with d_model 8192.
	DefaultK = 8192
	DefaultN = 8192
	// DefaultRepeats timed windows per point; the median is reported.
	DefaultRepeats = 5
	// DefaultWindow is the device time aimed at per timed window: enough
	// back-to-back calls that the events' overhead vanishes (per-call
	// synchronisation inflates small-B times: B=1 gets ~140 calls), short
	// enough to measure bursts as the seed's script does (10 calls). On an
	// H200, 25 ms windows of large-B GEMMs ran into the 700 W power cap and
	// lost ~10% with a 12% spread between repeats; 5 ms windows did not
	// (docs/probe-validation.md). Per-point telemetry records the power cap.
	DefaultWindow = 5 * time.Millisecond
	// DefaultWarmupCalls run untimed before calibrating each point.
	DefaultWarmupCalls = 3
	// DefaultMaxCallsPerRepeat bounds the calls in one window.
	DefaultMaxCallsPerRepeat = 20000
	// DefaultKneeFraction is the seed's knee: the smallest B reaching 90% of peak.
	DefaultKneeFraction = roofline.KneeFraction
	// DefaultDisagreementFraction is the seed's hygiene rule: identical
	// cards that differ by more than a few percent have a power or thermal
	// problem.
	DefaultDisagreementFraction = 0.03
	// DefaultSampleInterval between NVML samples.
	DefaultSampleInterval = 50 * time.Millisecond
	// DefaultValidationSamples output elements checked per batch size.
	DefaultValidationSamples = 256
	// DefaultSeed makes the random inputs reproducible.
	DefaultSeed = 20261129
	// DefaultCopyThreads and DefaultCopyBlocksPerSM set the copy and sum
	// kernels' launch: blocks of 512 threads, 4 per multiprocessor (2048
	// threads, the most an SM holds since Volta), each thread looping over
	// the buffer with four 16-byte loads in flight.
	DefaultCopyThreads     = 512
	DefaultCopyBlocksPerSM = 4
)

// DefaultBatches are the seed's 17 batch sizes plus 4096.
var DefaultBatches = []int{1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 1024, 2048, 4096}

// DefaultBufferSizes for the bandwidth measurement: 256 MiB to 4 GiB, far
// beyond any L2 cache. The seed's script copies one 512 MiB buffer.
var DefaultBufferSizes = []uint64{256 << 20, 512 << 20, 1 << 30, 2 << 30, 4 << 30}

// Progress reports what the probe is measuring; see WithProgress.
type Progress struct {
	Ordinal int
	Mode    Mode
	// Phase is "bandwidth", "gemm", "gemm_fp8" or "model_gemm".
	Phase string
	// Op and DType name the model GEMM being timed (model_gemm).
	Op, DType string
	// Batch is the batch size being measured (gemm), BufferBytes and
	// Method the buffer size and method (bandwidth).
	Batch       int
	BufferBytes uint64
	Method      string
	// Step counts points of this device's run from 1 to Steps.
	Step, Steps int
}

type config struct {
	batches          []int
	k, n             int
	repeats          int
	window           time.Duration
	warmupCalls      int
	maxCalls         int
	bufferSizes      []uint64
	devices          []int // nil: all
	libs             cuda.LibraryPaths
	nvmlPath         string
	noNVML           bool
	sampleInterval   time.Duration
	validSamples     int
	seed             uint64
	copyThreads      int
	copyBlocksPerSM  int
	kneeFraction     float64
	disagreeFraction float64
	progress         func(Progress)
	now              func() time.Time
	// fp8 adds the FP8 (E4M3) sweep of the standard shape through cuBLASLt.
	fp8 bool
	// model, when set, adds the model's own decode GEMMs at modelBatches,
	// in bf16 and (with fp8) FP8.
	model        *modelspec.Spec
	modelName    string
	modelBatches []int
}

// DefaultModelBatches are the decode batches at which --model-config times
// the model's GEMMs: the sweep's default levels and 256.
var DefaultModelBatches = []int{1, 2, 4, 8, 16, 32, 64, 128, 256}

// Option changes a probe setting.
type Option func(*config)

// WithBatches sets the batch sizes B of the GEMM sweep.
func WithBatches(b ...int) Option { return func(c *config) { c.batches = append([]int(nil), b...) } }

// WithShape sets K (inner) and N (output) of the (B,K)@(K,N) GEMM.
func WithShape(k, n int) Option { return func(c *config) { c.k, c.n = k, n } }

// WithRepeats sets how many timed windows each point gets.
func WithRepeats(n int) Option { return func(c *config) { c.repeats = n } }

// WithWindow sets the device time aimed at per timed window.
func WithWindow(d time.Duration) Option { return func(c *config) { c.window = d } }

// WithWarmupCalls sets the untimed calls before each point.
func WithWarmupCalls(n int) Option { return func(c *config) { c.warmupCalls = n } }

// WithMaxCallsPerRepeat bounds the calls in one timed window.
func WithMaxCallsPerRepeat(n int) Option { return func(c *config) { c.maxCalls = n } }

// WithBufferSizes sets the bandwidth buffers' sizes in bytes (multiples of 16).
func WithBufferSizes(sizes ...uint64) Option {
	return func(c *config) { c.bufferSizes = append([]uint64(nil), sizes...) }
}

// WithDevices sets the CUDA ordinals to probe; none means every visible GPU.
func WithDevices(ordinals ...int) Option {
	return func(c *config) { c.devices = append([]int(nil), ordinals...) }
}

// WithLibraryPaths sets where libcuda and cuBLAS are loaded from.
func WithLibraryPaths(p cuda.LibraryPaths) Option { return func(c *config) { c.libs = p } }

// WithNVMLPath sets where libnvidia-ml is loaded from.
func WithNVMLPath(path string) Option { return func(c *config) { c.nvmlPath = path } }

// WithoutNVML turns GPU telemetry off.
func WithoutNVML() Option { return func(c *config) { c.noNVML = true } }

// WithSampleInterval sets the time between NVML samples.
func WithSampleInterval(d time.Duration) Option { return func(c *config) { c.sampleInterval = d } }

// WithValidationSamples sets how many output elements are checked per batch size.
func WithValidationSamples(n int) Option { return func(c *config) { c.validSamples = n } }

// WithSeed sets the seed of the random inputs.
func WithSeed(seed uint64) Option { return func(c *config) { c.seed = seed } }

// WithCopyLaunch sets the copy and sum kernels' threads per block and blocks per multiprocessor.
func WithCopyLaunch(threads, blocksPerSM int) Option {
	return func(c *config) { c.copyThreads, c.copyBlocksPerSM = threads, blocksPerSM }
}

// WithKneeFraction sets the fraction of peak that defines the knee.
func WithKneeFraction(f float64) Option { return func(c *config) { c.kneeFraction = f } }

// WithDisagreementFraction sets the relative difference between GPUs that is flagged.
func WithDisagreementFraction(f float64) Option { return func(c *config) { c.disagreeFraction = f } }

// WithFP8 adds the FP8 (E4M3 through cuBLASLt) sweep of the standard shape,
// whose peak is the compute ceiling of models served with FP8 weights; with
// WithModelGEMMs the model's GEMMs are timed in FP8 too.
func WithFP8() Option { return func(c *config) { c.fp8 = true } }

// WithModelGEMMs times the decode GEMMs of the model (modelspec.DecodeGEMMs)
// at each batch (DefaultModelBatches when none), named name in the results.
func WithModelGEMMs(model *modelspec.Spec, name string, batches ...int) Option {
	return func(c *config) {
		c.model, c.modelName = model, name
		c.modelBatches = append([]int(nil), batches...)
		if len(c.modelBatches) == 0 {
			c.modelBatches = append([]int(nil), DefaultModelBatches...)
		}
	}
}

// WithProgress sets a function called before each point is measured. With
// several GPUs at once it is called from several goroutines.
func WithProgress(fn func(Progress)) Option { return func(c *config) { c.progress = fn } }

// WithClock replaces time.Now, for tests.
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

func defaultConfig() config {
	return config{
		batches:          append([]int(nil), DefaultBatches...),
		k:                DefaultK,
		n:                DefaultN,
		repeats:          DefaultRepeats,
		window:           DefaultWindow,
		warmupCalls:      DefaultWarmupCalls,
		maxCalls:         DefaultMaxCallsPerRepeat,
		bufferSizes:      append([]uint64(nil), DefaultBufferSizes...),
		sampleInterval:   DefaultSampleInterval,
		validSamples:     DefaultValidationSamples,
		seed:             DefaultSeed,
		copyThreads:      DefaultCopyThreads,
		copyBlocksPerSM:  DefaultCopyBlocksPerSM,
		kneeFraction:     DefaultKneeFraction,
		disagreeFraction: DefaultDisagreementFraction,
		now:              time.Now,
	}
}

func (c *config) validate() error {
	if len(c.batches) == 0 {
		return fmt.Errorf("probe: no batch sizes")
	}
	for _, b := range c.batches {
		if b <= 0 {
			return fmt.Errorf("probe: batch size %d must be positive", b)
		}
	}
	if c.k <= 0 || c.n <= 0 {
		return fmt.Errorf("probe: K=%d and N=%d must be positive", c.k, c.n)
	}
	if c.repeats < 1 {
		return fmt.Errorf("probe: repeats %d must be at least 1", c.repeats)
	}
	if c.window <= 0 {
		return fmt.Errorf("probe: window %v must be positive", c.window)
	}
	if c.warmupCalls < 0 || c.maxCalls < 1 {
		return fmt.Errorf("probe: warm-up calls %d must be ≥ 0 and max calls %d ≥ 1", c.warmupCalls, c.maxCalls)
	}
	for _, s := range c.bufferSizes {
		if s == 0 || s%cuda.VectorBytes != 0 {
			return fmt.Errorf("probe: buffer size %d must be a positive multiple of %d bytes", s, cuda.VectorBytes)
		}
	}
	if c.copyThreads <= 0 || c.copyThreads%32 != 0 || c.copyThreads > 1024 || c.copyBlocksPerSM <= 0 {
		return fmt.Errorf("probe: copy launch of %d threads × %d blocks per SM: threads must be a multiple of 32 up to 1024", c.copyThreads, c.copyBlocksPerSM)
	}
	if c.kneeFraction <= 0 || c.kneeFraction > 1 {
		return fmt.Errorf("probe: knee fraction %v must be in (0, 1]", c.kneeFraction)
	}
	if c.disagreeFraction <= 0 {
		return fmt.Errorf("probe: disagreement fraction %v must be positive", c.disagreeFraction)
	}
	if c.validSamples < 1 {
		return fmt.Errorf("probe: validation samples %d must be at least 1", c.validSamples)
	}
	if c.sampleInterval <= 0 {
		return fmt.Errorf("probe: sample interval %v must be positive", c.sampleInterval)
	}
	for _, b := range c.modelBatches {
		if b <= 0 {
			return fmt.Errorf("probe: model batch %d must be positive", b)
		}
	}
	for i, d := range c.devices {
		if d < 0 {
			return fmt.Errorf("probe: device %d must be ≥ 0", d)
		}
		for _, e := range c.devices[:i] {
			if e == d {
				return fmt.Errorf("probe: device %d listed twice", d)
			}
		}
	}
	return nil
}
