// Package buildinfo reports the version of the running headroom binary.
package buildinfo

import (
	"runtime/debug"
	"sync"
)

// version is set at build time with
// -ldflags "-X github.com/headroom-llm/headroom/internal/buildinfo.version=v1.2.3".
var version string

var computed = sync.OnceValue(func() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	return "devel-" + rev + dirty
})

// Version is the headroom version: the module version when installed with
// go install, else "devel-<commit>" from the VCS stamp, else "devel".
func Version() string { return computed() }
