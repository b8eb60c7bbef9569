package params_test

import (
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/golden"
	"github.com/strata-dev/strata/internal/params"
)

// TestEnvGolden runs every testdata/env/*.txtar case. A case holds:
//
//	-- parameters.json --  ARGOCD_APP_PARAMETERS as the repo-server sends it (absent: no parameters)
//	-- build.env --        the build environment, NAME=value a line
//	-- want --             Env's result, a variable a line, or "error: ..." if the JSON is refused
//
// In want, a value holding a control character, or starting with a double
// quote, is written Go-quoted. Run with -update to rewrite want.
func TestEnvGolden(t *testing.T) {
	golden.Run(t, "testdata/env/*.txtar", func(t *testing.T, c golden.Case) {
		golden.Check(t, c.Path, "want", runEnvCase(t, c))
	})
}

func runEnvCase(t *testing.T, c golden.Case) string {
	t.Helper()
	for _, f := range c.Archive.Files {
		switch f.Name {
		case "parameters.json", "build.env", "want":
		default:
			t.Fatalf("unknown section %q", f.Name)
		}
	}
	data, _ := c.Section("parameters.json")
	ps, err := params.ParseParameters([]byte(data), "ARGOCD_APP_PARAMETERS")
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	buildText, _ := c.Section("build.env")
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
