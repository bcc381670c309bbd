package probe

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/headroom-llm/headroom/cuda"
)

// poisonBF16 is what the output is filled with before the checked GEMM:
// 0xFFFF is a NaN in bf16, which no product of finite inputs gives, so an
// element still holding it was never written.
const (
	poisonByte = 0xFF
	poisonBF16 = 0xFFFF
)

// Tolerances of the GEMM check. The reference is exact up to float64
// rounding; the GPU accumulates in fp32 (error ~ √K·2⁻²⁴ of the partial
// sums, negligible here) and rounds the result to bf16 (relative error up
// to 2⁻⁸). An element passes if |GPU − ref| ≤ relTol·|ref| + absTol·s, where
// s = √Σ(x_p·w_p)² is the natural scale of the dot product (about √K for
// unit normal inputs): a wrong index or a lost term is off by ~s.
var bf16Tolerance = tolerance{rel: 1.0 / 128, abs: 1.0 / 1024, frobenius: 1e-2}

// tolerance is what a sampled element may be off by: rel·|ref| + abs·s, and
// the samples' relative Frobenius error at most frobenius.
type tolerance struct{ rel, abs, frobenius float64 }

// validateGEMM compares sampled elements of y, the GPU's row-major
// batch×n bf16 output, with float64 dot products of the same bf16 inputs
// (x row-major batch×k, w row-major k×n).
func validateGEMM(y, x, w []byte, batch, k, n, samples int, seed uint64) Validation {
	at := func(b []byte, i int) float64 {
		return float64(cuda.BF16ToFloat32(binary.LittleEndian.Uint16(b[2*i:])))
	}
	return validateProduct(y,
		func(row, p int) float64 { return at(x, row*k+p) },
		func(p, col int) float64 { return at(w, p*n+col) },
		batch, k, n, samples, seed, bf16Tolerance)
}

// validateProduct compares sampled elements of y, a row-major batch×n bf16
// output, with float64 dot products of the inputs xAt(row, p) and
// wAt(p, col). The four corners are always among the samples.
func validateProduct(y []byte, xAt, wAt func(int, int) float64, batch, k, n, samples int, seed uint64, tl tolerance) Validation {
	v := Validation{Samples: 0, Passed: true}
	for i := 0; i < batch*n; i++ {
		if binary.LittleEndian.Uint16(y[2*i:]) == poisonBF16 {
			v.UnwrittenCount++
		}
	}
	rng := rand.New(rand.NewPCG(seed, uint64(batch)))
	cells := [][2]int{{0, 0}, {0, n - 1}, {batch - 1, 0}, {batch - 1, n - 1}}
	for len(cells) < samples {
		cells = append(cells, [2]int{rng.IntN(batch), rng.IntN(n)})
	}
	var errSq, refSq float64
	for _, cell := range cells {
		row, col := cell[0], cell[1]
		var ref, scaleSq float64
		for p := 0; p < k; p++ {
			t := xAt(row, p) * wAt(p, col)
			ref += t
			scaleSq += t * t
		}
		got := float64(cuda.BF16ToFloat32(binary.LittleEndian.Uint16(y[2*(row*n+col):])))
		diff := math.Abs(got - ref)
		tol := tl.rel*math.Abs(ref) + tl.abs*math.Sqrt(scaleSq)
		switch {
		case math.IsNaN(got) || math.IsInf(got, 0):
			diff, v.MaxToleranceRatio = math.Inf(1), math.Inf(1)
		case tol > 0:
			v.MaxToleranceRatio = max(v.MaxToleranceRatio, diff/tol)
		case diff > 0:
			v.MaxToleranceRatio = math.Inf(1)
		}
		if ref != 0 {
			v.MaxRelError = max(v.MaxRelError, diff/math.Abs(ref))
		} else if diff > 0 {
			v.MaxRelError = math.Inf(1)
		}
		v.MaxAbsError = max(v.MaxAbsError, diff)
		errSq += diff * diff
		refSq += ref * ref
		v.Samples++
	}
	if refSq > 0 {
		v.RelFrobenius = math.Sqrt(errSq / refSq)
	} else if errSq > 0 {
		v.RelFrobenius = math.Inf(1)
	}
	v.Passed = v.UnwrittenCount == 0 && v.MaxToleranceRatio <= 1 && v.RelFrobenius <= tl.frobenius
	return v
}

func (v Validation) failure() string {
	if v.UnwrittenCount > 0 {
		return fmt.Sprintf("%d output elements were never written", v.UnwrittenCount)
	}
	return fmt.Sprintf("sampled elements off by up to %.4g (%.3g× the tolerance), relative error %.3g over %d samples",
		v.MaxAbsError, v.MaxToleranceRatio, v.RelFrobenius, v.Samples)
}
