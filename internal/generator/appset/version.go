package appset

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is the Argo CD release whose ApplicationSet controller a Renderer
// follows where releases differ. The zero Version is Latest.
type Version struct {
	Major, Minor, Patch int
}

// Latest is the newest Argo CD release strata models, the default.
var Latest = Version{Major: 3, Minor: 5, Patch: 1}

// Oldest is the oldest Argo CD release strata models.
var Oldest = Version{Major: 2, Minor: 14}

// newestPatch is the newest patch release of each line strata models, for a
// version given without its patch number.
var newestPatch = map[[2]int]int{
	{2, 14}: 21, {3, 0}: 23, {3, 1}: 16, {3, 2}: 12, {3, 3}: 14, {3, 4}: 7, {3, 5}: 1,
}

// ParseVersion reads an Argo CD version: MAJOR.MINOR or MAJOR.MINOR.PATCH,
// with or without a leading "v" ("3.5", "v3.4.2", "2.14"). Without a patch
// number it is the newest patch release of that line. A version older than
// Oldest is an error; one newer than Latest is returned with newer set, and
// renders as Latest.
func ParseVersion(s string) (v Version, newer bool, err error) {
	t := strings.TrimPrefix(strings.TrimSpace(s), "v")
	parts := strings.Split(t, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return Version{}, false, fmt.Errorf("version %q: write MAJOR.MINOR or MAJOR.MINOR.PATCH, e.g. 3.5 or 3.4.2", s)
	}
	nums := make([]int, 3)
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 999 {
			return Version{}, false, fmt.Errorf("version %q: %q is not a version number; write MAJOR.MINOR or MAJOR.MINOR.PATCH, e.g. 3.5 or 3.4.2", s, p)
		}
		nums[i] = n
	}
	v = Version{Major: nums[0], Minor: nums[1], Patch: nums[2]}
	if len(parts) == 2 {
		v.Patch = newestPatch[[2]int{v.Major, v.Minor}]
	}
	if v.less(Oldest) {
		return Version{}, false, fmt.Errorf("version %s: strata models the ApplicationSet controller of Argo CD %d.%d and later; older releases differ in ways it does not model", v, Oldest.Major, Oldest.Minor)
	}
	if Latest.less(v) {
		return Latest, true, nil
	}
	if _, known := newestPatch[[2]int{v.Major, v.Minor}]; !known {
		return Version{}, false, fmt.Errorf("version %s: there is no Argo CD %d.%d release; known lines are 2.14 and 3.0 to %d.%d", v, v.Major, v.Minor, Latest.Major, Latest.Minor)
	}
	return v, false, nil
}

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

func (v Version) orLatest() Version {
	if v == (Version{}) {
		return Latest
	}
	return v
}

func (v Version) less(o Version) bool {
	if v.Major != o.Major {
		return v.Major < o.Major
	}
	if v.Minor != o.Minor {
		return v.Minor < o.Minor
	}
	return v.Patch < o.Patch
}

func (v Version) atLeast(major, minor, patch int) bool {
	return !v.less(Version{Major: major, Minor: minor, Patch: patch})
}

// nestedSelectorsAlways: since 3.0 selectors of generators inside a nested
// matrix or merge always apply; before, only with spec.applyNestedSelectors.
func (v Version) nestedSelectorsAlways() bool { return v.atLeast(3, 0, 0) }

// matrixValues is how a matrix's second generator's plugin values are
// treated before the generator runs.
type matrixValues int

const (
	// valuesTemplated: templated with the first generator's parameters, as
	// every string of the generator is (up to 3.3).
	valuesTemplated matrixValues = iota
	// valuesAsWritten: left as written, for the generator to template with
	// its own parameters (3.4.0 to 3.4.3).
	valuesAsWritten
	// valuesPreResolved: each value templated with the first generator's
	// parameters where that succeeds; a value naming a key those lack is
	// left as written (3.4.4 and later, 3.5).
	valuesPreResolved
)

func (v Version) matrixValues() matrixValues {
	switch {
	case v.atLeast(3, 4, 4):
		return valuesPreResolved
	case v.atLeast(3, 4, 0):
		return valuesAsWritten
	}
	return valuesTemplated
}

// flattensStringMaps: since 3.4 a selector sees the keys of string maps in
// a parameter set (a plugin's values in goTemplate mode) as values.<key>;
// before, the whole map was one value under "values".
func (v Version) flattensStringMaps() bool { return v.atLeast(3, 4, 0) }
