package compare

import (
	"bytes"
	"encoding/gob"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/headroom-llm/headroom/rundir"
)

// decodeGob returns what a fresh gob decoder returns, for the summaries of
// recorded and bundled runs (through the primed decoder, which the test
// checks it takes, twice over so that the second reuses it) and for
// streams it must leave to a fresh decoder: another type's, a damaged one,
// one with a value after the first.
func TestDecodeGobMatchesGob(t *testing.T) {
	var files [][]byte
	for _, root := range []string{filepath.Dir(recorded[0]), filepath.Join("..", "..", "examples", "runs")} {
		for _, d := range writeSummaries(t, copyRuns(t, root)) {
			data, err := os.ReadFile(filepath.Join(d.Name, rundir.SummaryFile))
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, data)
		}
	}
	if len(files) < 4 {
		t.Fatalf("%d summaries written, want the recorded and bundled runs'", len(files))
	}
	p := primedFor[runSummaryFile, runSummaryFile]()
	if p == nil {
		t.Fatal("runSummaryFile has no primed decoding")
	}
	fresh := func(data []byte) (runSummaryFile, error) {
		var e runSummaryFile
		err := gob.NewDecoder(bytes.NewReader(data)).Decode(&e)
		return e, err
	}
	withSamples := 0
	for round := 0; round < 2; round++ {
		for i, data := range files {
			if types, _, ok := splitGob(data); !ok || !bytes.Equal(types, p.types) {
				t.Fatalf("summary %d does not start with the type's definitions: the primed decoder is not used", i)
			}
			want, err := fresh(data)
			if err != nil {
				t.Fatal(err)
			}
			var got runSummaryFile
			if err := decodeGob(data, &got); err != nil {
				t.Fatalf("summary %d: %v", i, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("summary %d: primed decoding differs from gob's", i)
			}
			if got.Key == "" || got.Run.Sweep == nil && got.Run.Roofline == nil {
				t.Fatalf("summary %d decoded empty: %+v", i, got.Run)
			}
			// Without the samples (the index's read): the rest as gob has it.
			var head runSummaryHead
			if err := decodeGobAs[runSummaryFile](data, &head); err != nil {
				t.Fatalf("summary %d without samples: %v", i, err)
			}
			if head.Key != want.Key || !reflect.DeepEqual(head.Run, want.Run) {
				t.Fatalf("summary %d without samples: differs from gob's", i)
			}
			withSamples += len(want.Samples)
		}
	}

	if withSamples == 0 {
		t.Fatal("no summary has samples to leave out")
	}

	// Streams the primed decoder must not take, decoded as gob does.
	var other bytes.Buffer
	if err := gob.NewEncoder(&other).Encode(cachedSummary{Run: Run{Label: "x"}}); err != nil {
		t.Fatal(err)
	}
	two := append(append([]byte(nil), files[0]...), files[0][len(p.types):]...)
	for name, data := range map[string][]byte{
		"another type":          other.Bytes(),
		"cut short":             files[0][:len(files[0])-3],
		"damaged value":         append(append([]byte(nil), files[0][:len(files[0])-10]...), bytes.Repeat([]byte{0xff}, 10)...),
		"two values":            two,
		"nothing":               nil,
		"definitions, no value": p.types,
	} {
		want, werr := fresh(data)
		var got runSummaryFile
		gerr := decodeGob(data, &got)
		if (werr == nil) != (gerr == nil) || werr == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("%s: decodeGob gave %v, gob %v", name, gerr, werr)
		}
	}
	// After those, the primed decoder still decodes the good files.
	var got runSummaryFile
	if err := decodeGob(files[1], &got); err != nil {
		t.Fatal(err)
	}
	if want, _ := fresh(files[1]); !reflect.DeepEqual(got, want) {
		t.Fatal("primed decoding differs from gob's after damaged input")
	}
}
