package cuda

import "math"

// FP8 E4M3 (the "fn" variant of the OCP FP8 formats, as Hopper's tensor cores
// and PyTorch's float8_e4m3fn store it): 1 sign bit, 4 exponent bits with a
// bias of 7, 3 mantissa bits; no infinities, S.1111.111 is NaN; the largest
// finite value is 448.
const (
	// E4M3Max is the largest finite E4M3 value.
	E4M3Max = 448
	e4m3NaN = 0x7f
)

// E4M3ToFloat32 widens an E4M3 byte exactly.
func E4M3ToFloat32(b uint8) float32 {
	sign := float32(1)
	if b&0x80 != 0 {
		sign = -1
	}
	exp := int(b>>3) & 0xf
	mant := float32(b & 7)
	switch {
	case b&0x7f == e4m3NaN:
		return float32(math.NaN())
	case exp == 0: // subnormal: mant/8 · 2^-6
		return sign * mant / 8 * (1.0 / 64)
	}
	return sign * (1 + mant/8) * float32(math.Ldexp(1, exp-7))
}

// e4m3Values holds the 127 non-negative finite E4M3 values in code order,
// which is ascending order.
var e4m3Values = func() [0x7f]float32 {
	var v [0x7f]float32
	for c := range v {
		v[c] = E4M3ToFloat32(uint8(c))
	}
	return v
}()

// E4M3FromFloat32 rounds f to the nearest E4M3 value (ties to the even
// code), saturating at ±448 as engines' casts with clamping do; NaN stays NaN.
func E4M3FromFloat32(f float32) uint8 {
	if f != f {
		return e4m3NaN
	}
	var sign uint8
	if math.Signbit(float64(f)) {
		sign, f = 0x80, -f
	}
	if f >= E4M3Max {
		return sign | 0x7e
	}
	// The first code whose value is ≥ f, then the nearer of it and the one below.
	lo, hi := 0, len(e4m3Values)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if e4m3Values[mid] < f {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	c := lo
	if c > 0 {
		below, above := f-e4m3Values[c-1], e4m3Values[c]-f
		if below < above || (below == above && (c-1)&1 == 0) {
			c--
		}
	}
	return sign | uint8(c)
}
