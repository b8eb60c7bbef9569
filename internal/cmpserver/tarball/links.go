package tarball

import (
	"fmt"
	"path"
	"strings"
)

// A resolver follows symbolic links through an extracted tree as the
// kernel would, to tell whether any leads outside the root. It numbers the
// tree's entries (0 is the root, then directories, files and links in
// their order in tree) and remembers where each link leads, so that every
// link target is walked once: the work is linear in the total length of
// the targets, however the links chain.
type resolver struct {
	t         *tree
	parent    []int32            // by id
	child     map[childKey]int32 // entries by directory and name
	firstLink int32              // ids from here on are links
	links     []linkEnd          // by link index
}

type childKey struct {
	dir  int32
	name string
}

// A linkEnd is where a link leads: below levels under entry at, through
// names the tree does not hold (0 when at itself). The kernel would stop
// at the first missing name; taking them as directories is conservative.
type linkEnd struct {
	state uint8 // unvisited, visiting or resolved
	at    int32
	below int32
	hops  int32 // links followed, this one included
}

const (
	unvisited uint8 = iota
	visiting
	resolved
)

func newResolver(x *extractor) *resolver {
	t := &x.t
	n := 1 + len(t.dirs) + len(t.files) + len(t.links)
	r := &resolver{
		t:         t,
		parent:    make([]int32, n),
		child:     make(map[childKey]int32, n),
		firstLink: int32(1 + len(t.dirs) + len(t.files)),
		links:     make([]linkEnd, len(t.links)),
	}
	id := int32(1)
	add := func(nodes []node) {
		for _, nd := range nodes {
			dir := int32(0)
			if d := path.Dir(nd.name); d != "." {
				dir = 1 + int32(x.seen[d].i) // parents are directories
			}
			r.parent[id] = dir
			r.child[childKey{dir, path.Base(nd.name)}] = id
			id++
		}
	}
	add(t.dirs)
	add(t.files)
	add(t.links)
	return r
}

// check says why link i is unsafe, or returns "".
func (r *resolver) check(i int) string {
	l := r.t.links[i]
	switch r.follow(i) {
	case "":
		return ""
	case errEscape:
		return fmt.Sprintf("is a symlink to %q outside the repository", l.target)
	default:
		return fmt.Sprintf("is a symlink to %q that passes through a loop or more than %d symlinks", l.target, maxLinkHops)
	}
}

const (
	errEscape = "escape"
	errLoop   = "loop"
)

// follow resolves link i, remembering the result.
func (r *resolver) follow(i int) string {
	e := &r.links[i]
	switch e.state {
	case resolved:
		return ""
	case visiting:
		return errLoop
	}
	e.state = visiting
	at := r.parent[r.firstLink+int32(i)]
	below := int32(0)
	hops := int32(1)
	for rest := r.t.links[i].target; rest != ""; {
		elem := rest
		if j := strings.IndexByte(rest, '/'); j >= 0 {
			elem, rest = rest[:j], rest[j+1:]
		} else {
			rest = ""
		}
		switch {
		case elem == "" || elem == ".":
		case elem == "..":
			switch {
			case below > 0:
				below--
			case at == 0:
				return errEscape
			default:
				at = r.parent[at]
			}
		case below > 0:
			below++
		default:
			c, ok := r.child[childKey{at, elem}]
			switch {
			case !ok:
				below = 1
			case c >= r.firstLink:
				if reason := r.follow(int(c - r.firstLink)); reason != "" {
					return reason
				}
				end := r.links[c-r.firstLink]
				if hops += end.hops; hops > maxLinkHops {
					return errLoop
				}
				at, below = end.at, end.below
			default:
				at = c
			}
		}
	}
	*e = linkEnd{state: resolved, at: at, below: below, hops: hops}
	return ""
}
