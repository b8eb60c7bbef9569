package appset

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSlugify(t *testing.T) {
	tests := []struct {
		args []any
		want string
	}{
		{[]any{"Hello World"}, "hello-world"},
		{[]any{"  My_App.Name  "}, "my-app-name"},
		{[]any{strings.Repeat("abcde-", 20)}, "abcde-abcde-abcde-abcde-abcde-abcde-abcde-abcde"},
		{[]any{12, true, "Hello Wonderful World"}, "hello"},
		{[]any{12, false, "Hello Wonderful World"}, "hello-wonder"},
		{[]any{5, true, "abcdefghij"}, "abcde"},
		{[]any{0, true, "no limit at all"}, "no-limit-at-all"},
		{[]any{0, false, "cut to nothing"}, ""},
	}
	for _, tc := range tests {
		got, err := slugify(tc.args...)
		if err != nil || got != tc.want {
			t.Errorf("slugify(%v) = %q, %v; want %q", tc.args, got, err, tc.want)
		}
	}
	for _, bad := range [][]any{{1}, {"x", "y"}, {-1, "x"}, {1, true, 3, "x"}} {
		if _, err := slugify(bad...); err == nil {
			t.Errorf("slugify(%v) succeeded, want an error", bad)
		}
	}
}

func TestSanitizeName(t *testing.T) {
	for in, want := range map[string]string{
		"Engineering_Dev.East":   "engineering-dev.east",
		"--a--":                  "a",
		".x.":                    "x",
		strings.Repeat("a", 300): strings.Repeat("a", 253),
	} {
		if got := sanitizeName(in); got != want {
			t.Errorf("sanitizeName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFlatten(t *testing.T) {
	in := map[string]any{
		"a": map[string]any{"b": "c", "n": 1000000.0, "f": 1.5, "empty": map[string]any{}},
		"l": []any{"x", map[string]any{"y": true}, []any{}},
		"z": nil,
	}
	want := map[string]string{"a.b": "c", "a.n": "1e+06", "a.f": "1.5", "l.0": "x", "l.1.y": "true", "z": "<nil>"}
	if diff := cmp.Diff(want, flatten(in, true)); diff != "" {
		t.Errorf("flatten (-want +got):\n%s", diff)
	}
}

func TestPlain(t *testing.T) {
	e := newEngine(false, nil, DefaultLimits(), nil)
	params := map[string]any{"a": "A", "b.c": "BC", "n": 3.0}
	tests := []struct{ in, want, err string }{
		{"x-{{a}}-{{ b.c }}-{{n}}", "x-A-BC-{{n}}", ""},
		{"no tags", "no tags", ""},
		{"{{a", "{{a", ""},                  // no complete tag on any line: left alone
		{"{{a}} {{b", "", "has no closing"}, // a complete tag and an unclosed one
		{"{{a\n}}", "{{a\n}}", ""},
		{"{{}}", "{{}}", ""},
		{"{{ {{a}} }}", "{{ {{a}} }}", ""},
	}
	for _, tc := range tests {
		got, err := e.plain(tc.in, params)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("plain(%q) error = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("plain(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestGoTemplateLimits(t *testing.T) {
	lim := Limits{MaxStringBytes: 1000, MaxOutputBytes: 5000}
	e := newEngine(true, nil, lim.withDefaults(), nil)
	for _, tmpl := range []string{
		`{{ repeat 2000 "x" }}`,
		`{{ repeat 100000000 "x" }}`,
		`{{ range until 100000000 }}x{{ end }}`,
		`{{ seq 1 100000000 }}`,
		`{{ indent 100000000 "x" }}`,
		`{{ randAlphaNum 100000000 }}`,
		`{{ untilStep 0 100000000 1 }}`,
	} {
		if _, err := e.replace(tmpl, map[string]any{}); err == nil {
			t.Errorf("replace(%q) succeeded, want a limit error", tmpl)
		}
	}
	for _, fn := range []string{"env", "expandenv", "getHostByName"} {
		if _, err := e.replace("{{ "+fn+" \"HOME\" }}", nil); err == nil || !strings.Contains(err.Error(), "not defined") {
			t.Errorf("%s is available to templates: %v", fn, err)
		}
	}
	total := newEngine(true, nil, Limits{MaxStringBytes: 1000, MaxOutputBytes: 2500}.withDefaults(), nil)
	var err error
	for i := 0; i < 4 && err == nil; i++ {
		_, err = total.replace(`{{ repeat 900 "x" }}`, nil)
	}
	if err == nil {
		t.Error("the total output limit did not stop rendering")
	}
}

func TestCombineMatrix(t *testing.T) {
	a := map[string]any{"k": "a", "m": map[string]any{"x": 1.0, "y": 1.0}}
	b := map[string]any{"k": "b", "m": map[string]any{"y": 2.0, "z": 2.0}, "only": "b"}
	got, err := combineMatrix(a, b, true)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"k": "a", "m": map[string]any{"x": 1.0, "y": 1.0, "z": 2.0}, "only": "b"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("combineMatrix go (-want +got):\n%s", diff)
	}
	if _, err := combineMatrix(map[string]any{"k": "a"}, map[string]any{"k": "b"}, false); err == nil {
		t.Error("combineMatrix plain with a conflict succeeded")
	}
	got, err = combineMatrix(map[string]any{"k": "a", "n": 1.0}, map[string]any{"k": "a"}, false)
	if err != nil || !cmp.Equal(got, map[string]any{"k": "a", "n": "1"}) {
		t.Errorf("combineMatrix plain = %v, %v", got, err)
	}
}

func TestGoTemplateBudget(t *testing.T) {
	e := newEngine(true, nil, DefaultLimits(), nil)
	_, err := e.replace(`{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}`, nil)
	if err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("nested ranges over until = %v, want a budget error", err)
	}
}

func TestStrategicMerge(t *testing.T) {
	app := map[string]any{
		"metadata": map[string]any{"name": "a", "finalizers": []any{"f1"}, "labels": map[string]any{"x": "1", "y": "2"}},
		"spec":     map[string]any{"source": map[string]any{"path": "p", "helm": map[string]any{"valueFiles": []any{"a.yaml"}}}, "info": []any{"i"}},
	}
	patch := map[string]any{
		"metadata": map[string]any{"finalizers": []any{"f2", "f1"}, "labels": map[string]any{"y": nil, "z": "3"}},
		"spec": map[string]any{
			"source": map[string]any{"$patch": "replace", "path": "q"},
			"info":   []any{"j"},
		},
	}
	got, err := strategicMerge(app, patch)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"metadata": map[string]any{"name": "a", "finalizers": []any{"f2", "f1"}, "labels": map[string]any{"x": "1", "z": "3"}},
		"spec":     map[string]any{"source": map[string]any{"path": "q"}, "info": []any{"j"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("strategicMerge (-want +got):\n%s", diff)
	}
}
