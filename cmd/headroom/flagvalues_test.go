package main

import (
	"strings"
	"testing"
)

// Every flag with a format refuses bad input while the command line is
// parsed: exit 2, one line naming the flag and the format, before anything
// runs (no server is contacted, no file is read).
func TestFlagFormatsCheckedAtParse(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"sweep", "--concurrency", "1,x"}, `"--concurrency" flag: "x": want whole numbers of at least 1`},
		{[]string{"sweep", "--concurrency", "4,0"}, `"0": want whole numbers of at least 1`},
		{[]string{"sweep", "--concurrency", " , "}, `empty: want whole numbers`},
		{[]string{"sweep", "--rate", "1,-2"}, `"--rate" flag: "-2": want positive numbers`},
		{[]string{"sweep", "--rate", "inf"}, `"inf": want positive numbers`},
		{[]string{"probe", "--devices", "0,gpu1"}, `"--devices" flag: "gpu1": want "all" or CUDA ordinals like 0,1`},
		{[]string{"probe", "--batches", "16,1.5"}, `"--batches" flag: "1.5": want whole numbers of at least 1`},
		{[]string{"probe", "--buffers", "0"}, `"--buffers" flag: "0": want whole numbers of at least 1`},
		{[]string{"report", "--slo", "ttft=2s", "run"}, `"--slo" flag: slo: "ttft": expected METRIC_pPCT`},
		{[]string{"report", "--percentiles", "95,100", "run"}, `"--percentiles" flag: percentile "100": want a number between 0 and 100`},
		{[]string{"report", "--format", "pdf", "run"}, `"--format" flag: want md, html or both`},
		{[]string{"compare", "--format", "pdf", "run"}, `want md, html, both or none`},
		{[]string{"compare", "--fail-if", "speed<-5%", "run"}, `"--fail-if" flag: rule "speed<-5%": unknown metric`},
		{[]string{"compare", "--label", "run", "run"}, `"--label" flag: want RUN=NAME`},
		{[]string{"compare", "--slo", "tpot_p99=fast", "run"}, `is not a positive duration`},
		{[]string{"inspect-log", "--engine", "tgi", "log"}, `"--engine" flag: unknown engine "tgi"`},
		{[]string{"inspect-log", "--tz", "Mars/Olympus", "log"}, `"--tz" flag: unknown time zone: want an IANA name`},
	} {
		code, out, errs := headroom(t, tt.args...)
		if code != 2 || out != "" || !strings.Contains(errs, tt.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", tt.args, code, out, errs, tt.want)
		}
	}
}

// A good value is read as given; the defaults show in --help.
func TestFlagFormatsRead(t *testing.T) {
	var levels []int
	var rates []float64
	f := newSweepCmd().Flags()
	intsVar(f, &levels, "levels", 1, "1,4", []int{1, 2}, "")
	positivesVar(f, &rates, "rates", "1,2", "")
	if got := f.Lookup("levels").DefValue; got != "1,2" {
		t.Errorf("default %q", got)
	}
	if err := f.Parse([]string{"--levels", " 4, 16,,64 ", "--rates", "0.5,2"}); err != nil {
		t.Fatal(err)
	}
	if len(levels) != 3 || levels[0] != 4 || levels[2] != 64 || len(rates) != 2 || rates[0] != 0.5 {
		t.Errorf("levels %v, rates %v", levels, rates)
	}
	devices, err := parseDevices("all")
	if err != nil || devices != nil {
		t.Errorf("all: %v, %v", devices, err)
	}
}
