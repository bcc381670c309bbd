// Command verdicts prints the analyzer's verdict on run directories: the
// primary wall and where, the secondary walls, the confidence and the
// operating point, one run per line. With -expect (a file of "run
// directory<TAB>expected wall" lines, as in testdata/verdicts/EXPECTED.tsv)
// it also prints the confusion table of expected against found walls and
// the stability table of the recordings of each scenario: bench/verdicts.sh
// uses it, and docs/validation.md holds its output.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/headroom-llm/headroom/analyze"
)

func main() {
	expect := flag.String("expect", "", "file of `run-dir<TAB>expected-wall` lines (relative to the file's directory)")
	verbose := flag.Bool("v", false, "also print each run's levels and checks")
	flag.Parse()
	var runs []row
	if *expect != "" {
		var err error
		if runs, err = readExpect(*expect); err != nil {
			fmt.Fprintln(os.Stderr, "verdicts:", err)
			os.Exit(2)
		}
	}
	for _, d := range flag.Args() {
		runs = append(runs, row{dir: d})
	}
	if len(runs) == 0 {
		fmt.Fprintln(os.Stderr, "usage: verdicts [-expect FILE] [RUN-DIR ...]")
		os.Exit(2)
	}
	for i := range runs {
		if err := runs[i].analyze(); err != nil {
			fmt.Fprintln(os.Stderr, "verdicts:", err)
			os.Exit(1)
		}
	}
	printRuns(runs)
	if *verbose {
		for _, r := range runs {
			printLevels(r)
		}
	}
	if *expect != "" {
		fmt.Println()
		printConfusion(runs)
		fmt.Println()
		printStability(runs)
	}
}

type row struct {
	dir, scenario, want string
	d                   analyze.Diagnosis
	op                  analyze.OperatingPoint
	levels              []analyze.LevelStats
	k                   analyze.Knees
}

func readExpect(path string) ([]row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []row
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		dir, want, ok := strings.Cut(line, "\t")
		if !ok {
			return nil, fmt.Errorf("%s:%d: want run-dir<TAB>expected-wall", path, n)
		}
		scen := filepath.Base(filepath.Dir(dir))
		out = append(out, row{dir: filepath.Join(filepath.Dir(path), dir), scenario: scen, want: strings.TrimSpace(want)})
	}
	return out, sc.Err()
}

func (r *row) analyze() error {
	run, err := analyze.Load(r.dir)
	if err != nil {
		return err
	}
	rep, err := analyze.Analyze([]*analyze.Run{run}, analyze.Default())
	if err != nil {
		return err
	}
	sw := rep.Runs[0].Sweep
	if sw == nil {
		return fmt.Errorf("%s: no sweep", r.dir)
	}
	r.d, r.op, r.levels, r.k = sw.Diagnosis, sw.Operating, sw.Levels, sw.Knees
	return nil
}

func point(p analyze.LoadPoint) string {
	switch {
	case !p.Valid():
		return "-"
	case p.Axis == analyze.AxisRate:
		return fmt.Sprintf("%g req/s", p.RateRPS)
	}
	return fmt.Sprintf("c=%d", p.Concurrency)
}

func (r row) op1() string {
	s := point(r.op.At)
	if r.op.Capped {
		s += "+"
	}
	return s
}

func printRuns(runs []row) {
	fmt.Println("| run | expected | wall | at | then | confidence | operating point |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, r := range runs {
		var then []string
		for _, w := range r.d.Secondary {
			then = append(then, w.Kind+" "+point(w.At))
		}
		at := point(r.d.Primary.At)
		if r.d.Wall == analyze.WallInconclusive {
			at += " (needs " + r.d.Primary.Deciding + ")"
		}
		name := filepath.Base(r.dir)
		if r.scenario != "" {
			name = r.scenario + "/" + name
		}
		fmt.Printf("| %s | %s | %s | %s | %s | %s | %s |\n", name, orDash(r.want), r.d.Wall, at,
			orDash(strings.Join(then, ", ")), r.d.Confidence.Level, r.op1())
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// printConfusion prints expected walls (rows) against found walls
// (columns) and the share found right.
func printConfusion(runs []row) {
	var wants, gots []string
	cell := map[[2]string]int{}
	right := 0
	for _, r := range runs {
		wants = appendNew(wants, r.want)
		gots = appendNew(gots, r.d.Wall)
		cell[[2]string{r.want, r.d.Wall}]++
		if r.want == r.d.Wall {
			right++
		}
	}
	sort.Strings(wants)
	sort.Strings(gots)
	fmt.Printf("Confusion (rows: expected wall, columns: verdict): %d of %d right (%.0f%%)\n\n", right, len(runs), 100*float64(right)/float64(len(runs)))
	fmt.Print("| expected \\ verdict |")
	for _, g := range gots {
		fmt.Printf(" %s |", g)
	}
	fmt.Print("\n|---|")
	for range gots {
		fmt.Print("---:|")
	}
	fmt.Println()
	for _, w := range wants {
		fmt.Printf("| %s |", w)
		for _, g := range gots {
			fmt.Printf(" %d |", cell[[2]string{w, g}])
		}
		fmt.Println()
	}
}

// printStability prints, per scenario, whether its recordings agree on
// the verdict and give operating points within one level of each other.
func printStability(runs []row) {
	by := map[string][]row{}
	var scens []string
	for _, r := range runs {
		if _, ok := by[r.scenario]; !ok {
			scens = append(scens, r.scenario)
		}
		by[r.scenario] = append(by[r.scenario], r)
	}
	fmt.Println("Stability (recordings of one scenario: same verdict, operating point within one level):")
	fmt.Println()
	fmt.Println("| scenario | recordings | verdicts | operating points | stable |")
	fmt.Println("|---|---:|---|---|---|")
	stable := 0
	for _, s := range scens {
		rs := by[s]
		var walls, ops []string
		same := true
		lo, hi := 1<<30, -1
		for _, r := range rs {
			walls = append(walls, r.d.Wall+" "+point(r.d.Primary.At))
			ops = append(ops, r.op1())
			same = same && r.d.Wall == rs[0].d.Wall
			pos := levelPos(r.levels, r.op.At.LevelIndex)
			lo, hi = min(lo, pos), max(hi, pos)
		}
		ok := same && hi-lo <= 1
		if ok {
			stable++
		}
		fmt.Printf("| %s | %d | %s | %s | %s |\n", s, len(rs), strings.Join(walls, "; "), strings.Join(ops, "; "), yes(ok))
	}
	fmt.Printf("\n%d of %d scenarios stable.\n", stable, len(scens))
}

func levelPos(levels []analyze.LevelStats, idx int) int {
	for i, l := range levels {
		if l.LevelIndex == idx {
			return i
		}
	}
	return -1
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func appendNew(xs []string, x string) []string {
	for _, y := range xs {
		if y == x {
			return xs
		}
	}
	return append(xs, x)
}

func printLevels(r row) {
	fmt.Printf("\n%s: knee %d (ratio %.2f %.2f..%.2f) flat to %d plateau %s\n", r.dir, r.k.TPOTKneeLevel, r.k.TPOTKneeRatio, r.k.TPOTKneeRatioLow, r.k.TPOTKneeRatioHigh, r.k.FlatToLevel, r.k.Plateau)
	fmt.Println("level load n ttft50 ttft99 tpot50 tok/s req/s running waiting(mean) kv preempt cpu(thread) client(lag)")
	for _, l := range r.levels {
		v := func(x *analyze.Latency, f func(*analyze.Latency) float64) float64 {
			if x == nil {
				return 0
			}
			return f(x)
		}
		p50 := func(x *analyze.Latency) float64 { return x.P50S }
		p99 := func(x *analyze.Latency) float64 { return x.P99S }
		ttft := l.TTFT
		if l.TTFTFromIntended != nil {
			ttft = l.TTFTFromIntended
		}
		fmt.Printf("%d %s %d %.4f %.4f %.4f %.0f %.1f %.0f %.0f(%.1f) %.2f %d %.2f(%s) %.2f(%d/%d)\n", l.LevelIndex, l.Load.ID(), l.OK,
			v(ttft, p50), v(ttft, p99), v(l.TPOT, p50), l.OutputTokPerS, l.RequestsPerS, l.Server.RunningMax, l.Server.WaitingMax, l.Server.WaitingMean,
			l.Server.KVUsageMaxFraction, l.Server.Preemptions, l.Server.CPUThreadDemand, l.Server.CPUBusiestThread, l.Client.CPUDemand, l.Client.LagSamples, l.Client.Samples)
	}
	for _, f := range r.d.Checks {
		fmt.Printf("  %s: %s at %s %s missing %v, %d evidence\n", f.Check, f.Status, point(f.At), f.Reason, f.Missing, len(f.Evidence))
	}
}
