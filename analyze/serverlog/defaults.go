package serverlog

import (
	"bufio"
	"embed"
	"strings"
)

// The argument dumps older engines print (vLLM's "args: Namespace(...)",
// SGLang's "server_args=ServerArgs(...)") list every argument, default or
// not. To report only the arguments a user changed, the scanner compares
// each value with the engine's default. The defaults are data, not code:
// each file under defaults/ is a real dump from a run whose command line is
// known, with the arguments that command set put back to their documented
// defaults (each file says which). A value counts as default if any listed
// version printed it. Arguments missing from the table fall back to a
// heuristic: None, False, empty and zero values count as defaults.

//go:embed defaults/*.txt
var defaultsFS embed.FS

var (
	vllmDefaults   = loadDefaults("defaults/vllm.txt")
	sglangDefaults = loadDefaults("defaults/sglang.txt")
)

// defaultTable holds the defaults of one engine: pairs["key=value"] for
// each default value (one lookup for the common case, a default), keys
// for the arguments the table knows.
type defaultTable struct {
	pairs map[string]bool
	keys  map[string]bool
}

// loadDefaults reads a defaults file: lines "# comment" and lines holding
// the inside of a Namespace(...) or ServerArgs(...) repr.
func loadDefaults(name string) defaultTable {
	out := defaultTable{pairs: map[string]bool{}, keys: map[string]bool{}}
	f, err := defaultsFS.Open(name)
	if err != nil {
		// Cannot happen with the embedded files; the table then stays
		// empty and the heuristic decides (a test checks the tables load).
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		for _, a := range parseKwargs(line) {
			out.keys[a.key] = true
			out.pairs[a.key+"="+a.val] = true
		}
	}
	return out
}

// isDefault reports whether an argument printed as part ("key=value",
// already trimmed, as in the dump) has a default value.
func isDefault(t defaultTable, part, key, val []byte) bool {
	if t.pairs[string(part)] {
		return true
	}
	if t.keys[string(key)] {
		return false
	}
	return neutral(bstr(val))
}
