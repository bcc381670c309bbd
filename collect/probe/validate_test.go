package probe

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/headroom-llm/headroom/cuda"
)

// hostGEMM is the exact row-major product rounded to bf16, what a correct GPU returns.
func hostGEMM(x, w []byte, batch, k, n int) []byte {
	xv, wv := bf16Values(x), bf16Values(w)
	y := make([]byte, 2*batch*n)
	for b := 0; b < batch; b++ {
		for j := 0; j < n; j++ {
			var acc float64
			for p := 0; p < k; p++ {
				acc += xv[b*k+p] * wv[p*n+j]
			}
			binary.LittleEndian.PutUint16(y[2*(b*n+j):], cuda.BF16FromFloat32(float32(acc)))
		}
	}
	return y
}

func TestValidateGEMM(t *testing.T) {
	const batch, k, n = 5, 256, 48
	x := randomBF16(batch*k, 1, 1)
	w := randomBF16(k*n, 1, 2)
	good := hostGEMM(x, w, batch, k, n)
	set := func(y []byte, row, col int, v float32) []byte {
		y = append([]byte(nil), y...)
		binary.LittleEndian.PutUint16(y[2*(row*n+col):], cuda.BF16FromFloat32(v))
		return y
	}
	get := func(y []byte, row, col int) float32 {
		return cuda.BF16ToFloat32(binary.LittleEndian.Uint16(y[2*(row*n+col):]))
	}
	transposedW := hostGEMM(x, transpose(w, k, n), batch, k, n) // W read as column-major: a plausible binding bug
	unwritten := append([]byte(nil), good...)
	binary.LittleEndian.PutUint16(unwritten[2*7:], poisonBF16)

	tests := []struct {
		name string
		y    []byte
		pass bool
	}{
		{"exact", good, true},
		{"one bf16 ulp off at a corner", set(good, batch-1, n-1, math.Nextafter32(get(good, batch-1, n-1), 1e9)*(1+1.0/128)), true},
		{"a corner off by 1", set(good, batch-1, n-1, get(good, batch-1, n-1)+1), false},
		{"NaN", set(good, 0, 0, float32(math.NaN())), false},
		{"one element never written", unwritten, false},
		{"W transposed", transposedW, false},
	}
	for _, tt := range tests {
		v := validateGEMM(tt.y, x, w, batch, k, n, 32, 9)
		if v.Passed != tt.pass {
			t.Errorf("%s: passed %v, want %v (%+v: %s)", tt.name, v.Passed, tt.pass, v, v.failure())
		}
	}
	v := validateGEMM(unwritten, x, w, batch, k, n, 32, 9)
	if v.UnwrittenCount != 1 || v.failure() != "1 output elements were never written" {
		t.Errorf("unwritten: %+v %q", v, v.failure())
	}
	if v := validateGEMM(good, x, w, batch, k, n, 2, 9); v.Samples != 4 {
		t.Errorf("%d samples, want the 4 corners at least", v.Samples)
	}
}

func transpose(m []byte, rows, cols int) []byte {
	out := make([]byte, len(m))
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			copy(out[2*(c*rows+r):], m[2*(r*cols+c):2*(r*cols+c)+2])
		}
	}
	return out
}

func TestRandomInputs(t *testing.T) {
	a := randomBF16(3*chunkElements+17, 42, 1)
	b := randomBF16(3*chunkElements+17, 42, 1)
	if string(a) != string(b) {
		t.Fatal("random inputs are not reproducible")
	}
	if string(randomBF16(1000, 42, 2)) == string(a[:2000]) {
		t.Fatal("streams 1 and 2 are equal")
	}
	vals := bf16Values(a)
	var sum, sumSq float64
	zeros := 0
	for _, v := range vals {
		sum += v
		sumSq += v * v
		if v == 0 {
			zeros++
		}
	}
	mean, variance := sum/float64(len(vals)), sumSq/float64(len(vals))
	if math.Abs(mean) > 0.01 || math.Abs(variance-1) > 0.01 || zeros > len(vals)/1000 {
		t.Errorf("not standard normal: mean %v, variance %v, %d zeros", mean, variance, zeros)
	}
}

func TestPatternPrefixSum(t *testing.T) {
	p := newPattern(randomBF16(40, 1, 3)) // an 80-byte chunk
	full := make([]byte, 0, 400)
	for len(full) < 400 {
		full = append(full, p.chunk...)
	}
	for _, n := range []uint64{0, 16, 80, 96, 320, 400} {
		if got, want := p.prefixSum(n), sumWords(full[:n]); got != want {
			t.Errorf("prefixSum(%d) = %d, want %d", n, got, want)
		}
	}
}
