package gguf

import "math"

// Float16Bits converts f to IEEE 754 half precision, rounding to nearest
// even, with overflow to ±Inf, subnormals, and NaN kept a (quiet) NaN.
func Float16Bits(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	switch {
	case exp == 0xff: // Inf or NaN
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case exp-127 > 15: // too large: overflow to Inf
		return sign | 0x7c00
	case exp-127 >= -14: // normal half
		h := uint32(exp-127+15)<<10 | mant>>13
		// Round to nearest even on the 13 dropped bits; a carry into the
		// exponent is correct, and into Inf is the right overflow.
		rest := mant & 0x1fff
		if rest > 0x1000 || (rest == 0x1000 && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	case exp-127 >= -25: // subnormal half (or rounds to the smallest one)
		m := mant | 0x800000 // implicit leading one
		shift := uint32(-(exp - 127) - 14 + 13)
		h := m >> shift
		rest := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rest > half || (rest == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	return sign // underflow to ±0
}

// Float16ToFloat32 converts IEEE 754 half precision bits to float32 exactly.
func Float16ToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
	case mant == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal: value = mant * 2^-24.
	v := float32(mant) * float32(math.Ldexp(1, -24))
	if sign != 0 {
		v = -v
	}
	return v
}
