package objstore

import (
	"context"
	"path"
	"sort"
	"strings"
)

// Found is one directory found under a location: its location and a view
// of its objects from the same listing.
type Found struct {
	Loc Location
	FS  *FS
}

// Find lists everything under loc once and returns each directory holding
// an object named marker (manifest.json for runs), in key order; it does
// not look for markers inside a directory it found (a run's own folders).
// loc itself counts when it holds the marker.
func Find(ctx context.Context, c *Client, loc Location, marker string) ([]Found, error) {
	prefix := loc.Prefix
	if prefix != "" {
		prefix += "/"
	}
	objs, err := c.List(ctx, loc.Bucket, prefix)
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, o := range objs {
		if path.Base(o.Key) == marker {
			dirs = append(dirs, path.Dir(o.Key))
		}
	}
	sort.Strings(dirs)
	// A marker inside a found directory is not a run: keep the outermost.
	found := map[string]bool{}
	var top []string
	for _, d := range dirs {
		inside := found["."]
		for p := path.Dir(d); !inside && p != "." && p != "/"; p = path.Dir(p) {
			inside = found[p]
		}
		if !inside {
			found[d] = true
			top = append(top, d)
		}
	}
	// Hand each directory its objects (a sorted range of keys).
	sort.Slice(objs, func(i, j int) bool { return objs[i].Key < objs[j].Key })
	out := make([]Found, 0, len(top))
	for _, d := range top {
		sub := Location{Bucket: loc.Bucket, Prefix: d}
		if d == "." {
			sub.Prefix = ""
		}
		p := sub.Key("")
		j := sort.Search(len(objs), func(i int) bool { return objs[i].Key >= p })
		k := j
		for k < len(objs) && strings.HasPrefix(objs[k].Key, p) {
			k++
		}
		out = append(out, Found{Loc: sub, FS: NewFS(ctx, c, sub, objs[j:k])})
	}
	return out, nil
}

// Target is a location that files are written to by name (a run, a report,
// an index): it implements rundir.Remote.
type Target struct {
	C   *Client
	Loc Location
}

// Put writes data as the object name under the target.
func (t Target) Put(ctx context.Context, name string, data []byte) error {
	return t.C.Put(ctx, t.Loc.Bucket, t.Loc.Key(name), data)
}

func (t Target) String() string { return t.Loc.String() }
