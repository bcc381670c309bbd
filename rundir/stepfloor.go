package rundir

import "sort"

// StepFloor is the measured time of the weight GEMMs of one decode step, from
// probe_model_gemm: the sum over the model's GEMMs of calls per step × median
// time, for one decode batch and dtype.
type StepFloor struct {
	Device      int32   `json:"device"`
	Batch       int     `json:"batch"`
	DType       string  `json:"dtype"`
	GEMMSeconds float64 `json:"gemm_s"`
	WeightBytes float64 `json:"weight_bytes"` // the weights those GEMMs read
	GEMMs       int     `json:"gemms"`
}

// StepFloors sums probe_model_gemm rows of solo runs (mode "solo" or empty)
// into floors, ordered by device, batch and dtype. A (device, batch, dtype)
// with fewer GEMMs than the most complete batch of that device and dtype (a
// probe that stopped part way) has no floor.
func StepFloors(rows []ProbeModelGEMMRow) []StepFloor {
	type key struct {
		device int32
		batch  int
		dtype  string
	}
	type group struct {
		device int32
		dtype  string
	}
	sums := map[key]*StepFloor{}
	most := map[group]int{}
	for _, r := range rows {
		if r.Mode != "" && r.Mode != "solo" {
			continue
		}
		k := key{r.Device, int(r.Batch), r.DType}
		f := sums[k]
		if f == nil {
			f = &StepFloor{Device: r.Device, Batch: k.batch, DType: k.dtype}
			sums[k] = f
		}
		f.GEMMSeconds += r.CallsPerStep * r.TimeMedianS
		f.WeightBytes += r.CallsPerStep * float64(r.K) * float64(r.N) * weightElementBytes(r.DType)
		f.GEMMs++
		g := group{r.Device, r.DType}
		most[g] = max(most[g], f.GEMMs)
	}
	var out []StepFloor
	for _, f := range sums {
		if f.GEMMs == most[group{f.Device, f.DType}] {
			out = append(out, *f)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Device != b.Device {
			return a.Device < b.Device
		}
		if a.Batch != b.Batch {
			return a.Batch < b.Batch
		}
		return a.DType < b.DType
	})
	return out
}

// weightElementBytes is the stored size of one weight of a probe dtype.
func weightElementBytes(dtype string) float64 {
	if dtype == "fp8_e4m3" {
		return 1
	}
	return 2
}
