package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// Tensor is a tensor to write: its description (Offset is computed by the
// writer) and its little-endian data, given as Data or made by Generate.
type Tensor struct {
	Name string
	Dims []uint64 // contiguous dimension first
	Type TensorType
	Data []byte
	// Generate, when Data is nil, makes the data as the writer reaches the
	// tensor: tensors are generated one at a time, in file order, so a
	// multi-gigabyte model never has to be in memory at once.
	Generate func() []byte
}

// File is a GGUF file to write. Tensor data is aligned to the value of the
// general.alignment key when KVs has one (it must be a uint32), else to
// DefaultAlignment.
type File struct {
	KVs     []KV
	Tensors []Tensor
}

// Alignment returns the alignment the file's tensor data will have.
func (f *File) Alignment() (uint32, error) {
	for _, kv := range f.KVs {
		if kv.Key != "general.alignment" {
			continue
		}
		a, ok := kv.Value.(uint32)
		if !ok || a == 0 || a%8 != 0 {
			return 0, fmt.Errorf("gguf: general.alignment must be a non-zero uint32 multiple of 8, got %T %v", kv.Value, kv.Value)
		}
		return a, nil
	}
	return DefaultAlignment, nil
}

// WriteTo writes the file in GGUF v3 format.
func (f *File) WriteTo(w io.Writer) (int64, error) {
	alignment, err := f.Alignment()
	if err != nil {
		return 0, err
	}
	infos, err := f.tensorInfos(uint64(alignment))
	if err != nil {
		return 0, err
	}
	cw := &countingWriter{w: bufio.NewWriterSize(w, 1<<16)}
	e := encoder{w: cw}
	e.raw([]byte(Magic))
	e.u32(Version)
	e.u64(uint64(len(infos)))
	e.u64(uint64(len(f.KVs)))
	for _, kv := range f.KVs {
		e.str(kv.Key)
		if err := e.value(kv.Value); err != nil {
			return cw.n, fmt.Errorf("gguf: key %q: %w", kv.Key, err)
		}
	}
	for _, ti := range infos {
		e.str(ti.Name)
		e.u32(uint32(len(ti.Dims)))
		for _, d := range ti.Dims {
			e.u64(d)
		}
		e.u32(uint32(ti.Type))
		e.u64(ti.Offset)
	}
	e.pad(uint64(alignment))
	for i, t := range f.Tensors {
		data := t.Data
		if data == nil && t.Generate != nil {
			data = t.Generate()
			if uint64(len(data)) != infos[i].Size() {
				return cw.n, fmt.Errorf("gguf: tensor %q: generated %d bytes of data, want %d for %v %v", t.Name, len(data), infos[i].Size(), t.Dims, t.Type)
			}
		}
		e.raw(data)
		e.pad(uint64(alignment))
	}
	if e.err == nil {
		e.err = cw.w.(*bufio.Writer).Flush()
	}
	if e.err != nil {
		return cw.n, fmt.Errorf("gguf: write: %w", e.err)
	}
	return cw.n, nil
}

// tensorInfos checks every tensor and lays out their data offsets.
func (f *File) tensorInfos(alignment uint64) ([]TensorInfo, error) {
	infos := make([]TensorInfo, 0, len(f.Tensors))
	seen := make(map[string]bool, len(f.Tensors))
	var offset uint64
	for _, t := range f.Tensors {
		if seen[t.Name] {
			return nil, fmt.Errorf("gguf: tensor %q appears twice", t.Name)
		}
		seen[t.Name] = true
		if len(t.Dims) == 0 || len(t.Dims) > 4 {
			return nil, fmt.Errorf("gguf: tensor %q: %d dimensions, want 1 to 4", t.Name, len(t.Dims))
		}
		if t.Type.BlockElements() == 0 {
			return nil, fmt.Errorf("gguf: tensor %q: unsupported type %v", t.Name, t.Type)
		}
		if t.Dims[0]%uint64(t.Type.BlockElements()) != 0 {
			return nil, fmt.Errorf("gguf: tensor %q: rows of %d elements do not divide into %v blocks of %d", t.Name, t.Dims[0], t.Type, t.Type.BlockElements())
		}
		ti := TensorInfo{Name: t.Name, Dims: t.Dims, Type: t.Type, Offset: offset}
		lazy := t.Data == nil && t.Generate != nil // its size is checked when generated
		if !lazy && ti.Size() != uint64(len(t.Data)) {
			return nil, fmt.Errorf("gguf: tensor %q: %d bytes of data, want %d for %v %v", t.Name, len(t.Data), ti.Size(), t.Dims, t.Type)
		}
		infos = append(infos, ti)
		offset = alignUp(offset+ti.Size(), alignment)
	}
	return infos, nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// encoder writes little-endian GGUF primitives and keeps the first error.
type encoder struct {
	w   *countingWriter
	err error
	buf [8]byte
}

func (e *encoder) raw(p []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(p)
	}
}

func (e *encoder) u8(v uint8) { e.buf[0] = v; e.raw(e.buf[:1]) }
func (e *encoder) u16(v uint16) {
	binary.LittleEndian.PutUint16(e.buf[:], v)
	e.raw(e.buf[:2])
}
func (e *encoder) u32(v uint32) {
	binary.LittleEndian.PutUint32(e.buf[:], v)
	e.raw(e.buf[:4])
}
func (e *encoder) u64(v uint64) {
	binary.LittleEndian.PutUint64(e.buf[:], v)
	e.raw(e.buf[:8])
}
func (e *encoder) str(s string) { e.u64(uint64(len(s))); e.raw([]byte(s)) }

func (e *encoder) pad(alignment uint64) {
	n := alignUp(uint64(e.w.n), alignment) - uint64(e.w.n)
	e.raw(make([]byte, n))
}

// value writes a type tag and a value.
func (e *encoder) value(v any) error {
	t, isArray, err := typeOf(v)
	if err != nil {
		return err
	}
	if !isArray {
		e.u32(uint32(t))
		e.scalar(v)
		return nil
	}
	e.u32(uint32(TypeArray))
	e.u32(uint32(t))
	switch a := v.(type) {
	case []uint8:
		e.u64(uint64(len(a)))
		e.raw(a)
	case []string:
		e.u64(uint64(len(a)))
		for _, s := range a {
			e.str(s)
		}
	default:
		writeSlice(e, v)
	}
	return nil
}

func writeSlice(e *encoder, v any) {
	switch a := v.(type) {
	case []int8:
		writeEach(e, a)
	case []uint16:
		writeEach(e, a)
	case []int16:
		writeEach(e, a)
	case []uint32:
		writeEach(e, a)
	case []int32:
		writeEach(e, a)
	case []float32:
		writeEach(e, a)
	case []bool:
		writeEach(e, a)
	case []uint64:
		writeEach(e, a)
	case []int64:
		writeEach(e, a)
	case []float64:
		writeEach(e, a)
	}
}

func writeEach[T any](e *encoder, a []T) {
	e.u64(uint64(len(a)))
	for _, x := range a {
		e.scalar(x)
	}
}

func (e *encoder) scalar(v any) {
	switch x := v.(type) {
	case uint8:
		e.u8(x)
	case int8:
		e.u8(uint8(x))
	case uint16:
		e.u16(x)
	case int16:
		e.u16(uint16(x))
	case uint32:
		e.u32(x)
	case int32:
		e.u32(uint32(x))
	case float32:
		e.u32(math.Float32bits(x))
	case bool:
		if x {
			e.u8(1)
		} else {
			e.u8(0)
		}
	case string:
		e.str(x)
	case uint64:
		e.u64(x)
	case int64:
		e.u64(uint64(x))
	case float64:
		e.u64(math.Float64bits(x))
	}
}

var errUnsupportedValue = errors.New("unsupported value type")

// typeOf maps a Go value to its GGUF type (the element type for a slice).
func typeOf(v any) (t ValueType, isArray bool, err error) {
	switch v.(type) {
	case uint8:
		return TypeUint8, false, nil
	case int8:
		return TypeInt8, false, nil
	case uint16:
		return TypeUint16, false, nil
	case int16:
		return TypeInt16, false, nil
	case uint32:
		return TypeUint32, false, nil
	case int32:
		return TypeInt32, false, nil
	case float32:
		return TypeFloat32, false, nil
	case bool:
		return TypeBool, false, nil
	case string:
		return TypeString, false, nil
	case uint64:
		return TypeUint64, false, nil
	case int64:
		return TypeInt64, false, nil
	case float64:
		return TypeFloat64, false, nil
	case []uint8:
		return TypeUint8, true, nil
	case []int8:
		return TypeInt8, true, nil
	case []uint16:
		return TypeUint16, true, nil
	case []int16:
		return TypeInt16, true, nil
	case []uint32:
		return TypeUint32, true, nil
	case []int32:
		return TypeInt32, true, nil
	case []float32:
		return TypeFloat32, true, nil
	case []bool:
		return TypeBool, true, nil
	case []string:
		return TypeString, true, nil
	case []uint64:
		return TypeUint64, true, nil
	case []int64:
		return TypeInt64, true, nil
	case []float64:
		return TypeFloat64, true, nil
	}
	return 0, false, fmt.Errorf("%w %T", errUnsupportedValue, v)
}
