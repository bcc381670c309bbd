package telemetry

import (
	"testing"

	"github.com/headroom-llm/headroom/cuda/nvml"
	"github.com/headroom-llm/headroom/internal/fakecuda"
)

func TestNVMLSource(t *testing.T) {
	f := fakecuda.Build(t)
	f.SetNVML(1755, 3201, 612345, 71, nvml.ReasonSWPowerCap|nvml.ReasonHWThermalSlowdown)
	f.SetNVMLProcesses(4242, 4343) // the server and something else
	src, err := openNVML(f.NVMLPath, []string{"0000:19:00.0"})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	devs := src.Devices()
	if len(devs) != 1 || devs[0].Name != "Fake GPU" || devs[0].UUID != "GPU-fake-0119" || devs[0].BusID != "0000:19:00.0" ||
		devs[0].PowerLimitW != 700 || devs[0].Driver != "580.0.fake" {
		t.Errorf("devices %+v", devs)
	}
	rows, err := src.Sample(42)
	if err != nil || len(rows) != 1 {
		t.Fatalf("%+v %v", rows, err)
	}
	r := rows[0]
	if r.TimeNS != 42 || r.SMClockMHz != 1755 || r.PowerW != 612.345 || r.TemperatureC != 71 || r.GPUUtilPct != 100 ||
		r.MemUsedBytes != 1<<30 || r.Throttle != "sw_power_cap,hw_thermal_slowdown" || r.Processes != 2 {
		t.Errorf("row %+v", r)
	}
	if r.EnergyMJ != nil {
		t.Errorf("a GPU without the energy counter must leave energy_mj null, got %d", *r.EnergyMJ)
	}
	f.SetNVMLEnergy(9876543)
	if rows, err = src.Sample(43); err != nil || len(rows) != 1 || rows[0].EnergyMJ == nil || *rows[0].EnergyMJ != 9876543 {
		t.Errorf("energy counter row %+v, %v", rows, err)
	}
	if _, err := openNVML(f.NVMLPath, nil); err == nil {
		t.Error("no GPUs: no error")
	}
}

func TestOpenGPUWithoutDriver(t *testing.T) {
	src, err := OpenGPU()
	if err != nil {
		if _, ok := src.(NoGPU); !ok || src.Devices() != nil {
			t.Errorf("failed OpenGPU must give NoGPU, got %T", src)
		}
		return
	}
	defer src.Close()
	if len(src.Devices()) == 0 {
		t.Error("OpenGPU succeeded without devices")
	}
}
