package document

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/strata-dev/strata/internal/document/documenttest"
)

// libraryNodes counts the nodes the YAML library builds for data (aliases
// once, as written), map keys left out, or ok = false when it rejects data.
func libraryNodes(data []byte) (n int, ok bool) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			return n, errors.Is(err, io.EOF)
		}
		var walk func(x *yaml.Node, key bool)
		walk = func(x *yaml.Node, key bool) {
			if x.Kind != yaml.DocumentNode && !key {
				n++
			}
			for i, c := range x.Content {
				walk(c, x.Kind == yaml.MappingNode && i%2 == 0)
			}
		}
		walk(&doc, false)
	}
}

var prescanCases = []struct {
	name string
	text string
	want int // the bound; the library's own count is checked to be at most it
}{
	{"empty", "", 0},
	{"scalar", "a\n", 1},
	{"map", "a: 1\nb: 2\n", 3},
	{"nested", "a:\n  b: 1\n  c: [1, 2]\n", 9},
	{"list", "- 1\n- 2\n- 3\n", 4},
	{"list under key", "a:\n- 1\n- 2\nb: 3\n", 6},
	{"list of maps", "- a: 1\n  b: 2\n- a: 3\n", 6},
	{"null values", "a:\nb:\n-\n", 5},
	{"block scalar", "a: |\n  x: [1, 2, 3]\n  - y\n\n  z\nb: 1\n", 3},
	{"block scalar ends at comment", "a: >\n  x\n# c\nb: [1,2]\n", 7},
	{"top block scalar", "--- |\nx: [1]\n---\na: 1\n", 5},
	{"quoted", "'a: [1': \"b\\\" [\"\n", 2},
	{"multi-line quote", "a: \"x\n  [1, 2]\n  y\"\nb: 1\n", 3},
	{"comment", "a: 1 # [1, 2, 3]\n# - x\n", 2},
	{"flow", "{a: [1, 2], b: {c: d}}\n", 17},
	{"flow lines", "[1,\n 2,\n 3]\n", 7},
	{"alias", "a: &x [1, 2]\nb: *x\n", 8},
	{"anchor on map", "a: &x\n  b: 1\nc:\n  <<: *x\n", 7},
	{"tag only", "a: !!null\n", 2},
	// Found by FuzzCountNodes, each once below the library's count.
	{"flow map entry without value", "{0}", 3},
	{"tagged empty key", "#0000\n! :", 4},
	{"explicit key alone", "?", 3},
	{"empty document", "---", 1},
	{"anchor before a colon", "&0:", 4},
	{"lone CR breaks the line", "#\r0", 1},
	{"NEL breaks the line", "# x\u0085[1, 2, 3]", 7},
	{"directive", "%YAML 1.2\n---\na: 1\n", 3},
}

func TestCountNodes(t *testing.T) {
	for _, tc := range prescanCases {
		t.Run(tc.name, func(t *testing.T) {
			got, _, over := countNodes([]byte(tc.text), 1<<30)
			if over {
				t.Fatalf("countNodes(%q) over", tc.text)
			}
			if got != tc.want {
				t.Errorf("countNodes(%q) = %d, want %d", tc.text, got, tc.want)
			}
			if lib, ok := libraryNodes([]byte(tc.text)); ok && lib > got {
				t.Errorf("countNodes(%q) = %d, below the library's %d nodes", tc.text, got, lib)
			}
		})
	}
}

func TestCountNodesStopsAtLine(t *testing.T) {
	text := strings.Repeat("- 1\n", 10)
	n, line, over := countNodes([]byte(text), 5)
	if !over || line != 5 || n != 6 {
		t.Errorf("countNodes(10 items, max 5) = %d, line %d, over %t; want 6, 5, true", n, line, over)
	}
}

// FuzzCountNodes: the bound is never below what the YAML library builds
// for a text it accepts, so no text gets past the budget uncounted.
func FuzzCountNodes(f *testing.F) {
	for _, d := range documenttest.FuzzDocs {
		f.Add([]byte(d))
	}
	for _, tc := range prescanCases {
		f.Add([]byte(tc.text))
	}
	files, _ := filepath.Glob("../../examples/*/*.yaml")
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, _, _ := countNodes(data, 1<<30)
		if lib, ok := libraryNodes(data); ok && lib > got {
			t.Fatalf("countNodes(%q) = %d, below the library's %d nodes", data, got, lib)
		}
	})
}
