package gguf

import (
	"encoding/binary"
	"math"
)

// quantizeQ8_0 writes one Q8_0 block (34 bytes) of x into dst as ggml's
// quantize_row_q8_0_ref does: scale d = max|x| / 127 stored as f16, quants
// round(x / d) (halves away from zero) as int8.
func quantizeQ8_0(dst []byte, x *[QuantBlock]float32) {
	var amax float32
	for _, v := range x {
		amax = max(amax, float32(math.Abs(float64(v))))
	}
	d := amax / 127
	var id float32
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(dst, Float16Bits(d))
	for j, v := range x {
		dst[2+j] = byte(int8(math.Round(float64(v * id))))
	}
}

// quantizeQ4_0 writes one Q4_0 block (18 bytes) of x into dst as ggml's
// quantize_row_q4_0_ref does: d = (the element of largest magnitude) / -8
// stored as f16, quants min(15, trunc(x/d + 8.5)) in 4 bits, element j in the
// low nibble of byte j and element j+16 in its high nibble.
func quantizeQ4_0(dst []byte, x *[QuantBlock]float32) {
	var amax, maxv float32
	for _, v := range x {
		if a := float32(math.Abs(float64(v))); amax < a {
			amax, maxv = a, v
		}
	}
	d := maxv / -8
	var id float32
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(dst, Float16Bits(d))
	q := func(v float32) byte { return byte(min(15, int8(v*id+8.5))) }
	for j := range QuantBlock / 2 {
		dst[2+j] = q(x[j]) | q(x[j+QuantBlock/2])<<4
	}
}
