package cuda

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

// DevicePtr is an address in device memory (CUdeviceptr).
type DevicePtr uint64

// Add offsets p by n bytes.
func (p DevicePtr) Add(n uint64) DevicePtr { return p + DevicePtr(n) }

// Context is a device's primary context made current on one OS thread.
//
// CUDA's "current context" belongs to an OS thread, while Go moves
// goroutines between threads. OpenContext therefore locks the calling
// goroutine to its thread (runtime.LockOSThread) and Close unlocks it: every
// method of a Context, and of the BLAS handle and Kernels made from it, must
// be called from the goroutine that opened it. To use several GPUs at once,
// open one Context per goroutine.
type Context struct {
	drv    *Driver
	dev    int32
	ctx    uintptr
	info   DeviceInfo
	closed bool
}

// OpenContext retains the primary context of the device with the given
// ordinal and makes it current on the calling goroutine's (now locked) thread.
func (d *Driver) OpenContext(ordinal int) (*Context, error) {
	info, err := d.Device(ordinal)
	if err != nil {
		return nil, err
	}
	runtime.LockOSThread()
	c := &Context{drv: d, info: info}
	if err := check("cuDeviceGet", d.api.cuDeviceGet(&c.dev, int32(ordinal))); err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	if err := check("cuDevicePrimaryCtxRetain", d.api.cuDevicePrimaryCtxRetain(&c.ctx, c.dev)); err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	if err := check("cuCtxSetCurrent", d.api.cuCtxSetCurrent(c.ctx)); err != nil {
		d.api.cuDevicePrimaryCtxRelease(c.dev)
		runtime.UnlockOSThread()
		return nil, err
	}
	return c, nil
}

// Info describes the context's device.
func (c *Context) Info() DeviceInfo { return c.info }

// Driver is the driver the context was opened with.
func (c *Context) Driver() *Driver { return c.drv }

// Close synchronizes, releases the primary context and unlocks the thread.
// Buffers not yet freed are reclaimed with the context. Close is idempotent.
func (c *Context) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	errSync := check("cuCtxSynchronize", c.drv.api.cuCtxSynchronize())
	c.drv.api.cuCtxSetCurrent(0)
	errRelease := check("cuDevicePrimaryCtxRelease_v2", c.drv.api.cuDevicePrimaryCtxRelease(c.dev))
	runtime.UnlockOSThread()
	return errors.Join(errSync, errRelease)
}

// Synchronize waits for all work queued on the context.
func (c *Context) Synchronize() error {
	return check("cuCtxSynchronize", c.drv.api.cuCtxSynchronize())
}

// MemInfo returns free and total device memory in bytes.
func (c *Context) MemInfo() (freeBytes, totalBytes uint64, err error) {
	err = check("cuMemGetInfo_v2", c.drv.api.cuMemGetInfo(&freeBytes, &totalBytes))
	return freeBytes, totalBytes, err
}

// Alloc allocates bytes of device memory (plain cuMemAlloc, never managed memory).
func (c *Context) Alloc(bytes uint64) (DevicePtr, error) {
	var p uint64
	if err := check(fmt.Sprintf("cuMemAlloc_v2(%d bytes)", bytes), c.drv.api.cuMemAlloc(&p, bytes)); err != nil {
		return 0, err
	}
	return DevicePtr(p), nil
}

// Free releases memory from Alloc; freeing 0 does nothing.
func (c *Context) Free(p DevicePtr) error {
	if p == 0 {
		return nil
	}
	return check("cuMemFree_v2", c.drv.api.cuMemFree(uint64(p)))
}

// CopyToDevice copies src from host memory to dst.
func (c *Context) CopyToDevice(dst DevicePtr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	err := check("cuMemcpyHtoD_v2", c.drv.api.cuMemcpyHtoD(uint64(dst), unsafe.Pointer(&src[0]), uint64(len(src))))
	runtime.KeepAlive(src)
	return err
}

// CopyToHost copies len(dst) bytes from src to host memory.
func (c *Context) CopyToHost(dst []byte, src DevicePtr) error {
	if len(dst) == 0 {
		return nil
	}
	err := check("cuMemcpyDtoH_v2", c.drv.api.cuMemcpyDtoH(unsafe.Pointer(&dst[0]), uint64(src), uint64(len(dst))))
	runtime.KeepAlive(dst)
	return err
}

// CopyDeviceToDevice queues a copy of bytes from src to dst with
// cuMemcpyDtoD_v2 (no host synchronization for device-to-device copies).
func (c *Context) CopyDeviceToDevice(dst, src DevicePtr, bytes uint64) error {
	return check("cuMemcpyDtoD_v2", c.drv.api.cuMemcpyDtoD(uint64(dst), uint64(src), bytes))
}

// Memset8 sets bytes bytes at dst to value.
func (c *Context) Memset8(dst DevicePtr, value uint8, bytes uint64) error {
	return check("cuMemsetD8_v2", c.drv.api.cuMemsetD8(uint64(dst), value, bytes))
}

// Event is a CUDA event used for timing on the default stream.
type Event struct {
	c  *Context
	ev uintptr
}

// NewEvent creates a timing event.
func (c *Context) NewEvent() (*Event, error) {
	e := &Event{c: c}
	if err := check("cuEventCreate", c.drv.api.cuEventCreate(&e.ev, 0)); err != nil {
		return nil, err
	}
	return e, nil
}

// Record queues the event on the default stream.
func (e *Event) Record() error { return check("cuEventRecord", e.c.drv.api.cuEventRecord(e.ev, 0)) }

// Synchronize waits until the event has happened.
func (e *Event) Synchronize() error {
	return check("cuEventSynchronize", e.c.drv.api.cuEventSynchronize(e.ev))
}

// Destroy releases the event.
func (e *Event) Destroy() error {
	return check("cuEventDestroy_v2", e.c.drv.api.cuEventDestroy(e.ev))
}

// ElapsedMS is the device time in milliseconds from start to end; both must
// have been recorded and end must have completed.
func ElapsedMS(start, end *Event) (float64, error) {
	var ms float32
	if err := check("cuEventElapsedTime", start.c.drv.api.cuEventElapsedTime(&ms, start.ev, end.ev)); err != nil {
		return 0, err
	}
	return float64(ms), nil
}

// Timer times a region of queued device work with one pair of events.
type Timer struct{ start, end *Event }

// NewTimer creates the two events of a Timer.
func (c *Context) NewTimer() (*Timer, error) {
	start, err := c.NewEvent()
	if err != nil {
		return nil, err
	}
	end, err := c.NewEvent()
	if err != nil {
		_ = start.Destroy()
		return nil, err
	}
	return &Timer{start: start, end: end}, nil
}

// Time records the start event, runs queue (which should only queue work,
// not wait for it), records the end event, waits for it and returns the
// device time between the two events in milliseconds.
func (t *Timer) Time(queue func() error) (float64, error) {
	if err := t.start.Record(); err != nil {
		return 0, err
	}
	if err := queue(); err != nil {
		return 0, err
	}
	if err := t.end.Record(); err != nil {
		return 0, err
	}
	if err := t.end.Synchronize(); err != nil {
		return 0, err
	}
	return ElapsedMS(t.start, t.end)
}

// Destroy releases the timer's events.
func (t *Timer) Destroy() error { return errors.Join(t.start.Destroy(), t.end.Destroy()) }
