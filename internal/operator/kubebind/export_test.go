package kubebind

import "github.com/strata-dev/strata/internal/manifest"

// ParseObjects exposes the object file parser to the fuzz test.
func ParseObjects(data []byte) ([]*Object, error) {
	return parseObjects(data, "fuzz.yaml", manifest.Limits{})
}

// ApplyFilter exposes the jqFilter run with a time limit of the test's.
var ApplyFilter = applyFilter
