package params_test

import (
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/strata-dev/strata/internal/params"
)

var update = flag.Bool("update", false, "rewrite the want section of testdata/env/*.txtar")

// TestEnvGolden runs every testdata/env/*.txtar case. A case holds:
//
//	-- parameters.json --  ARGOCD_APP_PARAMETERS as the repo-server sends it (absent: no parameters)
//	-- build.env --        the build environment, NAME=value a line
//	-- want --             Env's result, a variable a line, or "error: ..." if the JSON is refused
//
// In want, a value holding a control character, or starting with a double
// quote, is written Go-quoted. Run with -update to rewrite want.
func TestEnvGolden(t *testing.T) {
	paths, err := filepath.Glob("testdata/env/*.txtar")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got := runEnvCase(t, ar)
			if *update {
				setSection(ar, "want", got)
				if err := os.WriteFile(path, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, ok := section(ar, "want")
			if !ok {
				t.Fatal("no want section; run with -update")
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Env() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func runEnvCase(t *testing.T, ar *txtar.Archive) string {
	t.Helper()
	for _, f := range ar.Files {
		switch f.Name {
		case "parameters.json", "build.env", "want":
		default:
			t.Fatalf("unknown section %q", f.Name)
		}
	}
	data, _ := section(ar, "parameters.json")
	ps, err := params.ParseParameters([]byte(data), "ARGOCD_APP_PARAMETERS")
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	buildText, _ := section(ar, "build.env")
	var build []string
	for _, line := range strings.Split(buildText, "\n") {
		if line != "" {
			build = append(build, line)
		}
	}
	var b strings.Builder
	for _, kv := range params.Env(ps, build) {
		name, value, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(value, `"`) || strings.IndexFunc(value, unicode.IsControl) >= 0 {
			value = strconv.Quote(value)
		}
		b.WriteString(name + "=" + value + "\n")
	}
	return b.String()
}

func section(ar *txtar.Archive, name string) (string, bool) {
	for _, f := range ar.Files {
		if f.Name == name {
			return string(f.Data), true
		}
	}
	return "", false
}

func setSection(ar *txtar.Archive, name, data string) {
	for i := range ar.Files {
		if ar.Files[i].Name == name {
			ar.Files[i].Data = []byte(data)
			return
		}
	}
	ar.Files = append(ar.Files, txtar.File{Name: name, Data: []byte(data)})
}

// TestEnvDeterministic: the result does not depend on map order.
func TestEnvDeterministic(t *testing.T) {
	ps := []params.Parameter{{Name: "m", Map: map[string]string{}}}
	for i := range 50 {
		ps[0].Map[strings.Repeat("k", i%5)+"."+strconv.Itoa(i%7)] = strconv.Itoa(i)
		ps[0].Map[strings.Repeat("k", i%5)+"-"+strconv.Itoa(i%7)] = "other" + strconv.Itoa(i)
	}
	first := params.Env(ps, nil)
	for range 20 {
		if diff := cmp.Diff(first, params.Env(ps, nil)); diff != "" {
			t.Fatalf("Env() differs between runs:\n%s", diff)
		}
	}
}
