package cuda

import (
	"math"
	"testing"
)

func TestBF16RoundTrip(t *testing.T) {
	tests := []struct {
		in   float32
		want uint16
	}{
		{0, 0x0000},
		{1, 0x3f80},
		{-2, 0xc000},
		{3.140625, 0x4049},                         // exactly representable
		{1 + 1.0/256, 0x3f80},                      // halfway between 1 and 1+1/128: ties to even (down)
		{1 + 3.0/256, 0x3f82},                      // halfway between 1+1/128 and 1+2/128: ties to even (up)
		{1 + 1.0/256 + 1.0/4096, 0x3f81},           // just above halfway: rounds up
		{float32(math.Inf(1)), 0x7f80},             // infinity stays infinity
		{math.Float32frombits(0x7f7fffff), 0x7f80}, // largest float32 rounds to infinity
		{math.Float32frombits(0x00010000), 0x0001}, // subnormal
		{-1.00390625, 0xbf80},                      // negative tie: to even
	}
	for _, tt := range tests {
		if got := BF16FromFloat32(tt.in); got != tt.want {
			t.Errorf("BF16FromFloat32(%v) = %#04x, want %#04x", tt.in, got, tt.want)
		}
	}
	nan := BF16FromFloat32(float32(math.NaN()))
	if !math.IsNaN(float64(BF16ToFloat32(nan))) {
		t.Errorf("NaN became %#04x", nan)
	}
	for h := 0; h < 1<<16; h++ {
		f := BF16ToFloat32(uint16(h))
		if math.IsNaN(float64(f)) {
			continue
		}
		if back := BF16FromFloat32(f); back != uint16(h) {
			t.Fatalf("bf16 %#04x -> %v -> %#04x", h, f, back)
		}
	}
}
