package helmrender

import (
	"fmt"
	"strings"
	"text/template"
)

// boundedFuncs replaces template functions that can build a value of any
// size in one call with versions that refuse one larger than the rendered
// output may be (maxBytes): such a value cannot end up in
// the manifests, and building it could take all the memory there is.
// Below the bound they are sprig's, unchanged.
func boundedFuncs(maxBytes int) template.FuncMap {
	limit := int64(maxBytes)
	return template.FuncMap{
		// sprig: func(count int, str string) string { return strings.Repeat(str, count) }
		"repeat": func(count int, str string) (string, error) {
			if count > 0 && int64(len(str)) > 0 && int64(count) > limit/int64(len(str)) {
				return "", fmt.Errorf("repeat: %d copies of a string of %d bytes would be larger than the rendered manifests may be (%d bytes)", count, len(str), limit)
			}
			return strings.Repeat(str, count), nil
		},
	}
}
