// Package gguf writes (and reads back) GGUF v3 files, the model format of
// llama.cpp, and builds a tiny Llama-architecture model with random weights
// and a byte-level vocabulary for the test engine (test/engine).
//
// Only what that model needs is supported: scalar and array metadata of every
// GGUF value type, and F32/F16 tensors. The format is documented in
// https://github.com/ggml-org/ggml/blob/master/docs/gguf.md.
package gguf

import "fmt"

// Magic is the first four bytes of every GGUF file.
const Magic = "GGUF"

// Version is the GGUF version this package writes and reads.
const Version uint32 = 3

// DefaultAlignment is the tensor data alignment in bytes when a file has no
// general.alignment key.
const DefaultAlignment = 32

// ValueType is the type tag of a metadata value.
type ValueType uint32

// Metadata value types, numbered as in the GGUF specification.
const (
	TypeUint8 ValueType = iota
	TypeInt8
	TypeUint16
	TypeInt16
	TypeUint32
	TypeInt32
	TypeFloat32
	TypeBool
	TypeString
	TypeArray
	TypeUint64
	TypeInt64
	TypeFloat64
)

var valueTypeNames = [...]string{"uint8", "int8", "uint16", "int16", "uint32", "int32",
	"float32", "bool", "string", "array", "uint64", "int64", "float64"}

func (t ValueType) String() string {
	if int(t) < len(valueTypeNames) {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("ValueType(%d)", uint32(t))
}

// TensorType is the ggml element type of a tensor.
type TensorType uint32

// Tensor element types this package writes (ggml_type numbering).
const (
	TensorF32 TensorType = 0
	TensorF16 TensorType = 1
)

func (t TensorType) String() string {
	switch t {
	case TensorF32:
		return "F32"
	case TensorF16:
		return "F16"
	}
	return fmt.Sprintf("TensorType(%d)", uint32(t))
}

// ElementSize is the size of one element in bytes, or 0 for a type this
// package does not support.
func (t TensorType) ElementSize() int {
	switch t {
	case TensorF32:
		return 4
	case TensorF16:
		return 2
	}
	return 0
}

// KV is one metadata key/value pair. Value holds a Go value whose type maps
// one to one to a GGUF type: uint8, int8, uint16, int16, uint32, int32,
// float32, bool, string, uint64, int64, float64, or a slice of one of those
// (a GGUF array).
type KV struct {
	Key   string
	Value any
}

// TensorInfo describes one tensor: its name, its dimensions with the
// contiguous one first (ggml's ne[0]), its element type, and the offset of
// its data from the start of the data section.
type TensorInfo struct {
	Name   string
	Dims   []uint64
	Type   TensorType
	Offset uint64
}

// Elements is the number of elements of the tensor.
func (ti TensorInfo) Elements() uint64 {
	n := uint64(1)
	for _, d := range ti.Dims {
		n *= d
	}
	return n
}

// Size is the tensor's data size in bytes.
func (ti TensorInfo) Size() uint64 {
	return ti.Elements() * uint64(ti.Type.ElementSize())
}

func alignUp(n, alignment uint64) uint64 {
	return (n + alignment - 1) / alignment * alignment
}
