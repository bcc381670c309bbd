package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// Limits that keep a corrupt or hostile header from allocating without bound.
const (
	maxStringBytes = 1 << 20
	maxArrayLen    = 1 << 24
	maxKVs         = 1 << 16
	maxTensors     = 1 << 16
	maxDims        = 4
)

// Header is everything in a GGUF file before the tensor data.
type Header struct {
	Version   uint32
	KVs       []KV
	Tensors   []TensorInfo
	Alignment uint32
	// DataOffset is the file offset of the data section: tensor i's data is
	// at DataOffset + Tensors[i].Offset.
	DataOffset int64
}

// Get returns the value of a metadata key.
func (h *Header) Get(key string) (any, bool) {
	for _, kv := range h.KVs {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return nil, false
}

// ReadHeader reads and checks a GGUF v3 header: magic, version, metadata,
// tensor infos, and that every tensor's data offset is aligned.
func ReadHeader(r io.Reader) (*Header, error) {
	d := decoder{r: bufio.NewReaderSize(r, 1<<16)}
	h, err := d.header()
	if err != nil {
		return nil, fmt.Errorf("gguf: at byte %d: %w", d.n, err)
	}
	return h, nil
}

type decoder struct {
	r   *bufio.Reader
	n   int64
	buf [8]byte
}

func (d *decoder) header() (*Header, error) {
	magic, err := d.bytes(4)
	if err != nil {
		return nil, err
	}
	if string(magic) != Magic {
		return nil, fmt.Errorf("not a GGUF file: magic %q, want %q", magic, Magic)
	}
	h := &Header{Alignment: DefaultAlignment}
	if h.Version, err = d.u32(); err != nil {
		return nil, err
	}
	if h.Version != Version {
		return nil, fmt.Errorf("GGUF version %d, this reader supports %d", h.Version, Version)
	}
	nTensors, err := d.u64()
	if err != nil {
		return nil, err
	}
	nKVs, err := d.u64()
	if err != nil {
		return nil, err
	}
	if nTensors > maxTensors || nKVs > maxKVs {
		return nil, fmt.Errorf("%d tensors and %d keys: more than this reader accepts (%d, %d)", nTensors, nKVs, maxTensors, maxKVs)
	}
	for i := uint64(0); i < nKVs; i++ {
		kv, err := d.kv()
		if err != nil {
			return nil, fmt.Errorf("key %d: %w", i, err)
		}
		if kv.Key == "general.alignment" {
			a, ok := kv.Value.(uint32)
			if !ok || a == 0 || a%8 != 0 {
				return nil, fmt.Errorf("general.alignment %v (%T): want a non-zero uint32 multiple of 8", kv.Value, kv.Value)
			}
			h.Alignment = a
		}
		h.KVs = append(h.KVs, kv)
	}
	for i := uint64(0); i < nTensors; i++ {
		ti, err := d.tensorInfo()
		if err != nil {
			return nil, fmt.Errorf("tensor %d: %w", i, err)
		}
		h.Tensors = append(h.Tensors, ti)
	}
	for _, ti := range h.Tensors {
		if ti.Offset%uint64(h.Alignment) != 0 {
			return nil, fmt.Errorf("tensor %q: data offset %d is not a multiple of the alignment %d", ti.Name, ti.Offset, h.Alignment)
		}
	}
	h.DataOffset = int64(alignUp(uint64(d.n), uint64(h.Alignment)))
	return h, nil
}

func (d *decoder) kv() (KV, error) {
	key, err := d.str()
	if err != nil {
		return KV{}, err
	}
	t, err := d.u32()
	if err != nil {
		return KV{}, fmt.Errorf("%q: %w", key, err)
	}
	v, err := d.value(ValueType(t))
	if err != nil {
		return KV{}, fmt.Errorf("%q: %w", key, err)
	}
	return KV{Key: key, Value: v}, nil
}

func (d *decoder) tensorInfo() (TensorInfo, error) {
	var ti TensorInfo
	var err error
	if ti.Name, err = d.str(); err != nil {
		return ti, err
	}
	nDims, err := d.u32()
	if err != nil {
		return ti, err
	}
	if nDims == 0 || nDims > maxDims {
		return ti, fmt.Errorf("%q: %d dimensions, want 1 to %d", ti.Name, nDims, maxDims)
	}
	for range nDims {
		dim, err := d.u64()
		if err != nil {
			return ti, err
		}
		if dim == 0 || dim > math.MaxInt32 {
			return ti, fmt.Errorf("%q: dimension %d out of range", ti.Name, dim)
		}
		ti.Dims = append(ti.Dims, dim)
	}
	t, err := d.u32()
	if err != nil {
		return ti, err
	}
	ti.Type = TensorType(t)
	ti.Offset, err = d.u64()
	return ti, err
}

func (d *decoder) value(t ValueType) (any, error) {
	switch t {
	case TypeString:
		return d.str()
	case TypeArray:
		return d.array()
	}
	return d.scalar(t)
}

func (d *decoder) scalar(t ValueType) (any, error) {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		b, err := d.bytes(1)
		if err != nil {
			return nil, err
		}
		switch t {
		case TypeUint8:
			return b[0], nil
		case TypeInt8:
			return int8(b[0]), nil
		}
		if b[0] > 1 {
			return nil, fmt.Errorf("bool value %d, want 0 or 1", b[0])
		}
		return b[0] == 1, nil
	case TypeUint16, TypeInt16:
		b, err := d.bytes(2)
		if err != nil {
			return nil, err
		}
		v := binary.LittleEndian.Uint16(b)
		if t == TypeInt16 {
			return int16(v), nil
		}
		return v, nil
	case TypeUint32, TypeInt32, TypeFloat32:
		v, err := d.u32()
		if err != nil {
			return nil, err
		}
		switch t {
		case TypeInt32:
			return int32(v), nil
		case TypeFloat32:
			return math.Float32frombits(v), nil
		}
		return v, nil
	case TypeUint64, TypeInt64, TypeFloat64:
		v, err := d.u64()
		if err != nil {
			return nil, err
		}
		switch t {
		case TypeInt64:
			return int64(v), nil
		case TypeFloat64:
			return math.Float64frombits(v), nil
		}
		return v, nil
	}
	return nil, fmt.Errorf("unknown value type %d", uint32(t))
}

func (d *decoder) array() (any, error) {
	et, err := d.u32()
	if err != nil {
		return nil, err
	}
	n, err := d.u64()
	if err != nil {
		return nil, err
	}
	if n > maxArrayLen {
		return nil, fmt.Errorf("array of %d elements: more than this reader accepts (%d)", n, maxArrayLen)
	}
	switch ValueType(et) {
	case TypeUint8:
		return readEach[uint8](d, TypeUint8, n)
	case TypeInt8:
		return readEach[int8](d, TypeInt8, n)
	case TypeUint16:
		return readEach[uint16](d, TypeUint16, n)
	case TypeInt16:
		return readEach[int16](d, TypeInt16, n)
	case TypeUint32:
		return readEach[uint32](d, TypeUint32, n)
	case TypeInt32:
		return readEach[int32](d, TypeInt32, n)
	case TypeFloat32:
		return readEach[float32](d, TypeFloat32, n)
	case TypeBool:
		return readEach[bool](d, TypeBool, n)
	case TypeString:
		return readEach[string](d, TypeString, n)
	case TypeUint64:
		return readEach[uint64](d, TypeUint64, n)
	case TypeInt64:
		return readEach[int64](d, TypeInt64, n)
	case TypeFloat64:
		return readEach[float64](d, TypeFloat64, n)
	}
	return nil, fmt.Errorf("array of unsupported element type %v", ValueType(et))
}

// readEach reads n elements, growing the slice as it goes so that a forged
// count cannot allocate more than the input holds.
func readEach[T any](d *decoder, t ValueType, n uint64) ([]T, error) {
	out := make([]T, 0, min(n, 4096))
	for i := uint64(0); i < n; i++ {
		v, err := d.value(t)
		if err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
		out = append(out, v.(T))
	}
	return out, nil
}

func (d *decoder) bytes(n int) ([]byte, error) {
	var p []byte
	if n <= len(d.buf) {
		p = d.buf[:n]
	} else {
		p = make([]byte, n)
	}
	k, err := io.ReadFull(d.r, p)
	d.n += int64(k)
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return p, err
}

func (d *decoder) u32() (uint32, error) {
	b, err := d.bytes(4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (d *decoder) u64() (uint64, error) {
	b, err := d.bytes(8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

func (d *decoder) str() (string, error) {
	n, err := d.u64()
	if err != nil {
		return "", err
	}
	if n > maxStringBytes {
		return "", fmt.Errorf("string of %d bytes: more than this reader accepts (%d)", n, maxStringBytes)
	}
	b, err := d.bytes(int(n))
	if err != nil {
		return "", err
	}
	return string(b), nil
}
