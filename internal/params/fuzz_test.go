package params_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/golden"
	"github.com/strata-dev/strata/internal/params"
)

// maxSeed leaves the limit cases (megabytes of input) out of the corpus:
// they would slow the fuzzer down and teach it nothing.
const maxSeed = 4 << 10

func addSeeds(f *testing.F, inputs []string) {
	for _, in := range inputs {
		if len(in) <= maxSeed {
			f.Add([]byte(in))
		}
	}
}

func checkErrorType(t *testing.T, err error) {
	t.Helper()
	var pe *params.Error
	var le *document.LoadError
	if !errors.As(err, &pe) && !errors.As(err, &le) {
		t.Fatalf("error %v is %T, want *params.Error or *document.LoadError", err, err)
	}
	if err.Error() == "" {
		t.Fatal("empty error message")
	}
}

var envName = regexp.MustCompile(`^PARAM_[A-Z0-9_]*$`)

// FuzzParseParameters: any input decodes or fails with a typed error; what
// decodes encodes (as ARGOCD_APP_PARAMETERS) to JSON that decodes to the
// same parameters, and gives well-formed variables.
func FuzzParseParameters(f *testing.F) {
	var seeds []string
	for _, tc := range parameterCases {
		seeds = append(seeds, tc.input)
	}
	for _, c := range golden.Cases(f, "testdata/env/*.txtar") {
		if s, ok := c.Section("parameters.json"); ok {
			seeds = append(seeds, s)
		}
	}
	addSeeds(f, seeds)
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := params.ParseParameters(data, "fuzz")
		if err != nil {
			checkErrorType(t, err)
			return
		}
		env := params.Env(ps, nil)
		if len(env) == 0 || !strings.HasPrefix(env[0], params.ParametersVar+"=") {
			t.Fatalf("Env() = %q, want %s first", env, params.ParametersVar)
		}
		encoded := strings.TrimPrefix(env[0], params.ParametersVar+"=")
		var names []string
		for _, kv := range env[1:] {
			name, _, ok := strings.Cut(kv, "=")
			if !ok || !envName.MatchString(name) {
				t.Fatalf("Env() gives %q, not PARAM_[A-Z0-9_]*=value", kv)
			}
			if strings.IndexByte(kv, 0) >= 0 {
				t.Fatalf("Env() gives %q, which holds a NUL", kv)
			}
			names = append(names, name)
		}
		if !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != len(names) {
			t.Fatalf("Env() names are not sorted and unique: %q", names)
		}

		var viaJSON bytes.Buffer
		enc := json.NewEncoder(&viaJSON)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(ps); err != nil {
			t.Fatalf("json.Encode: %v", err)
		}
		if got := strings.TrimSuffix(viaJSON.String(), "\n"); len(ps) > 0 && got != encoded {
			t.Fatalf("json.Encode gives %s, Env gives %s", got, encoded)
		}
		if len(encoded) > params.MaxBytes {
			return // escapes can make the encoding longer than the limit
		}
		back, err := params.ParseParameters([]byte(encoded), "again")
		if err != nil {
			t.Fatalf("decoding %s again: %v", encoded, err)
		}
		if diff := cmp.Diff(ps, back); diff != "" {
			t.Fatalf("round trip mismatch (-first +again):\n%s\nencoded: %s", diff, encoded)
		}
	})
}

// FuzzParseAnnouncements: any JSON or YAML decodes or fails with a typed
// error; what decodes is normalised, and its JSON decodes to the same
// announcements with no warnings.
func FuzzParseAnnouncements(f *testing.F) {
	var seeds []string
	for _, tc := range announcementCases {
		seeds = append(seeds, tc.input)
	}
	addSeeds(f, seeds)
	f.Fuzz(func(t *testing.T, data []byte) {
		anns, warnings, err := params.ParseAnnouncements(data, "fuzz")
		if err != nil {
			checkErrorType(t, err)
			return
		}
		for _, w := range warnings {
			if w.String() == "" {
				t.Fatal("empty warning")
			}
		}
		seen := map[string]bool{}
		for _, a := range anns {
			if a.Name == "" || seen[a.Name] {
				t.Fatalf("announcement name %q is empty or repeated", a.Name)
			}
			seen[a.Name] = true
			switch a.ItemType {
			case params.ItemString, params.ItemNumber, params.ItemBoolean:
			default:
				t.Fatalf("announcement %q has itemType %q", a.Name, a.ItemType)
			}
			ok := false
			switch a.CollectionType {
			case params.CollectionString:
				ok = a.Array == nil && a.Map == nil
			case params.CollectionArray:
				ok = a.String == "" && a.Map == nil && (a.Array == nil || len(a.Array) > 0)
			case params.CollectionMap:
				ok = a.String == "" && a.Array == nil && (a.Map == nil || len(a.Map) > 0)
			}
			if !ok {
				t.Fatalf("announcement not normalised: %+v", a)
			}
		}

		encoded, err := json.Marshal(anns)
		if err != nil {
			t.Fatalf("json.Marshal: %v", err)
		}
		if len(encoded) > params.MaxBytes {
			return
		}
		back, warnings, err := params.ParseAnnouncements(encoded, "again")
		if err != nil {
			t.Fatalf("decoding %s again: %v", encoded, err)
		}
		if len(warnings) > 0 {
			t.Fatalf("decoding %s again warns: %v", encoded, warnings)
		}
		if diff := cmp.Diff(anns, back); diff != "" {
			t.Fatalf("round trip mismatch (-first +again):\n%s\nencoded: %s", diff, encoded)
		}

		combined, warnings := params.Combine(anns, back)
		if diff := cmp.Diff(anns, combined, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("Combine(x, x) mismatch (-x +combined):\n%s", diff)
		}
		if len(warnings) != len(anns) {
			t.Fatalf("Combine(x, x) gave %d warnings, want %d", len(warnings), len(anns))
		}
	})
}
