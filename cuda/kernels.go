package cuda

import (
	_ "embed"
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

// kernelsPTX is kernels/kernels.cu compiled to PTX by kernels/gen.sh (the
// exact command is in the PTX's first lines). The driver compiles it for
// the GPU at hand in cuModuleLoadData.
//
//go:embed kernels/kernels.ptx
var kernelsPTX []byte

// KernelsPTX returns the embedded PTX text.
func KernelsPTX() []byte { return append([]byte(nil), kernelsPTX...) }

// Names of the entry points in kernels.ptx.
const (
	KernelCopy16 = "copy16" // dst[i] = src[i] for 16-byte vectors, grid-stride, 4 loads in flight
	KernelSum16  = "sum16"  // *out += sum of all 32-bit words of src, read-only
)

// VectorBytes is the access width of both kernels: buffers must be a multiple of it.
const VectorBytes = 16

// Module is a loaded PTX module.
type Module struct {
	c   *Context
	mod uintptr
}

// Function is a kernel entry point of a loaded module.
type Function struct {
	c    *Context
	fn   uintptr
	name string
}

// LoadModule JIT-compiles and loads PTX text with cuModuleLoadData.
func (c *Context) LoadModule(ptx []byte) (*Module, error) {
	image := make([]byte, len(ptx)+1) // cuModuleLoadData wants a NUL-terminated image
	copy(image, ptx)
	m := &Module{c: c}
	err := check("cuModuleLoadData", c.drv.api.cuModuleLoadData(&m.mod, unsafe.Pointer(&image[0])))
	runtime.KeepAlive(image)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Function looks up a kernel by name.
func (m *Module) Function(name string) (*Function, error) {
	f := &Function{c: m.c, name: name}
	if err := check("cuModuleGetFunction("+name+")", m.c.drv.api.cuModuleGetFunction(&f.fn, m.mod, name)); err != nil {
		return nil, err
	}
	return f, nil
}

// Unload releases the module.
func (m *Module) Unload() error { return check("cuModuleUnload", m.c.drv.api.cuModuleUnload(m.mod)) }

// Launch queues the kernel on the default stream with a 1-D grid; every
// kernel parameter is a 64-bit value (a device pointer or a count).
func (f *Function) Launch(gridX, blockX uint32, args ...uint64) error {
	// cuLaunchKernel reads an array of pointers to the parameter values.
	// Both live on the Go heap (which does not move) until the call returns;
	// the driver copies the values at launch.
	values := make([]uint64, len(args))
	copy(values, args)
	params := make([]unsafe.Pointer, len(args)+1)
	for i := range values {
		params[i] = unsafe.Pointer(&values[i])
	}
	code := f.c.drv.api.cuLaunchKernel(f.fn, gridX, 1, 1, blockX, 1, 1, 0, 0, unsafe.Pointer(&params[0]), nil)
	runtime.KeepAlive(values)
	runtime.KeepAlive(params)
	return check(fmt.Sprintf("cuLaunchKernel(%s, grid %d, block %d)", f.name, gridX, blockX), code)
}

// Kernels are the embedded bandwidth kernels, loaded on one context.
type Kernels struct {
	mod   *Module
	copy  *Function
	sum16 *Function
}

// LoadKernels loads the embedded PTX module and looks up its kernels.
func (c *Context) LoadKernels() (*Kernels, error) {
	mod, err := c.LoadModule(kernelsPTX)
	if err != nil {
		return nil, fmt.Errorf("cuda: loading embedded kernels: %w", err)
	}
	k := &Kernels{mod: mod}
	if k.copy, err = mod.Function(KernelCopy16); err != nil {
		return nil, errors.Join(err, mod.Unload())
	}
	if k.sum16, err = mod.Function(KernelSum16); err != nil {
		return nil, errors.Join(err, mod.Unload())
	}
	return k, nil
}

// Close unloads the module.
func (k *Kernels) Close() error { return k.mod.Unload() }

func checkVectorBytes(bytes uint64) error {
	if bytes == 0 || bytes%VectorBytes != 0 {
		return fmt.Errorf("cuda: buffer of %d bytes is not a positive multiple of %d", bytes, VectorBytes)
	}
	return nil
}

// Copy queues a copy of bytes from src to dst with the 16-byte vector kernel.
func (k *Kernels) Copy(dst, src DevicePtr, bytes uint64, grid, block uint32) error {
	if err := checkVectorBytes(bytes); err != nil {
		return err
	}
	return k.copy.Launch(grid, block, uint64(dst), uint64(src), bytes/VectorBytes)
}

// Sum queues a read of bytes at src that adds every 32-bit word, as an
// unsigned integer, to the uint64 at out (which the caller zeroes first).
// The sum is exact, so it doubles as a checksum of the buffer.
func (k *Kernels) Sum(out, src DevicePtr, bytes uint64, grid, block uint32) error {
	if err := checkVectorBytes(bytes); err != nil {
		return err
	}
	if block%32 != 0 {
		return fmt.Errorf("cuda: sum kernel needs a block size that is a multiple of 32, got %d", block)
	}
	return k.sum16.Launch(grid, block, uint64(out), uint64(src), bytes/VectorBytes)
}
