// Package labels reads the hand labels of the real-file corpora
// (testdata/serverlogs/labels.tsv, testdata/metrics/labels.tsv): one line
// per file, tab-separated, "file key=value ...", '#' starting a comment.
package labels

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// Label is one file's line: the file name and its key=value pairs.
type Label struct {
	File string
	Want map[string]string
}

// Read reads a labels file in order.
func Read(path string) ([]Label, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Label
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, "\t")
		l := Label{File: fields[0], Want: map[string]string{}}
		for _, kv := range fields[1:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, fmt.Errorf("%s:%d: %s: %q is not key=value", path, n, l.File, kv)
			}
			l.Want[k] = v
		}
		out = append(out, l)
	}
	return out, sc.Err()
}

// ByFile reads a labels file keyed by file name.
func ByFile(path string) (map[string]map[string]string, error) {
	ls, err := Read(path)
	if err != nil {
		return nil, err
	}
	out := make(map[string]map[string]string, len(ls))
	for _, l := range ls {
		out[l.File] = l.Want
	}
	return out, nil
}
