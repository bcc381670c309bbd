package cuda

import "math"

// BF16FromFloat32 rounds f to bfloat16 (round to nearest, ties to even),
// as the GPU does; NaN stays a (quiet) NaN.
func BF16FromFloat32(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 0x40
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// BF16ToFloat32 widens a bfloat16 exactly.
func BF16ToFloat32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }
