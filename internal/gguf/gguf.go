// Package gguf writes (and reads back) GGUF v3 files, the model format of
// llama.cpp, and builds a tiny Llama-architecture model with random weights
// and a byte-level vocabulary for the test engine (test/engine).
//
// Only what those models need is supported: scalar and array metadata of every
// GGUF value type, and F32, F16, Q8_0 and Q4_0 tensors (the quantized types in
// ggml's reference layout, so that llama.cpp serves the same model at three bit
// widths). The format is documented in
// https://github.com/ggml-org/ggml/blob/master/docs/gguf.md.
package gguf

import (
	"fmt"
	"strings"
)

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
	TensorF32  TensorType = 0
	TensorF16  TensorType = 1
	TensorQ4_0 TensorType = 2 // blocks of 32: an f16 scale and 32 4-bit quants (18 bytes)
	TensorQ8_0 TensorType = 8 // blocks of 32: an f16 scale and 32 int8 quants (34 bytes)
)

// QuantBlock is the number of elements of one Q8_0 or Q4_0 block (ggml's QK8_0, QK4_0).
const QuantBlock = 32

func (t TensorType) String() string {
	switch t {
	case TensorF32:
		return "F32"
	case TensorF16:
		return "F16"
	case TensorQ4_0:
		return "Q4_0"
	case TensorQ8_0:
		return "Q8_0"
	}
	return fmt.Sprintf("TensorType(%d)", uint32(t))
}

// ParseTensorType reads a type name as String writes it, in either case
// ("f16", "Q8_0").
func ParseTensorType(s string) (TensorType, error) {
	for _, t := range []TensorType{TensorF32, TensorF16, TensorQ8_0, TensorQ4_0} {
		if strings.EqualFold(s, t.String()) {
			return t, nil
		}
	}
	return 0, fmt.Errorf("gguf: tensor type %q: want f32, f16, q8_0 or q4_0", s)
}

// BlockElements is the number of elements stored together in one block (1
// for the float types), or 0 for a type this package does not support.
func (t TensorType) BlockElements() int {
	switch t {
	case TensorF32, TensorF16:
		return 1
	case TensorQ4_0, TensorQ8_0:
		return QuantBlock
	}
	return 0
}

// BlockBytes is the size of one block in bytes, or 0 for a type this
// package does not support.
func (t TensorType) BlockBytes() int {
	switch t {
	case TensorF32:
		return 4
	case TensorF16:
		return 2
	case TensorQ4_0:
		return 2 + QuantBlock/2
	case TensorQ8_0:
		return 2 + QuantBlock
	}
	return 0
}

// BitsPerWeight is the stored size of one element in bits, scales included
// (16 for F16, 8.5 for Q8_0, 4.5 for Q4_0).
func (t TensorType) BitsPerWeight() float64 {
	if t.BlockElements() == 0 {
		return 0
	}
	return 8 * float64(t.BlockBytes()) / float64(t.BlockElements())
}

// Quantized says whether the type stores blocks of quants with a scale.
func (t TensorType) Quantized() bool { return t.BlockElements() > 1 }

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

// Size is the tensor's data size in bytes (0 for an unsupported type).
func (ti TensorInfo) Size() uint64 {
	be := uint64(ti.Type.BlockElements())
	if be == 0 {
		return 0
	}
	return ti.Elements() / be * uint64(ti.Type.BlockBytes())
}

func alignUp(n, alignment uint64) uint64 {
	return (n + alignment - 1) / alignment * alignment
}
