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

// loadDefaults reads a defaults file: lines "# comment" and lines holding
// the inside of a Namespace(...) or ServerArgs(...) repr.
func loadDefaults(name string) map[string]map[string]bool {
	out := map[string]map[string]bool{}
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
			m := out[a.key]
			if m == nil {
				m = map[string]bool{}
				out[a.key] = m
			}
			m[a.val] = true
		}
	}
	return out
}

// isDefault reports whether val is a default value of the argument key.
func isDefault(table map[string]map[string]bool, key, val string) bool {
	if vals, ok := table[key]; ok {
		return vals[val]
	}
	return neutral(val)
}
