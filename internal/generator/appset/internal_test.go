package appset

import (
	"errors"
	"strings"
	"testing"
	"time"

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
	e := newEngine(true, nil, Limits{MaxTemplateOps: 300000}.withDefaults(), nil)
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

// TestTemplateBudgets: each way to make a template hang or exhaust memory
// fails with a clear error wrapping ErrTooLarge or ErrTemplateTimeout.
func TestTemplateBudgets(t *testing.T) {
	tests := []struct {
		name, tmpl string
		lim        Limits
		want       error
		msg        string
	}{
		{name: "nested repeat", tmpl: `{{ repeat 1000000 (repeat 1000000 "x") }}`, want: ErrTooLarge, msg: "repeat: "},
		{name: "repeat of a big string", tmpl: `{{ repeat 100 (repeat 1000000 "x") | len }}`, want: ErrTooLarge, msg: "beyond the limit"},
		{name: "range over a huge integer", tmpl: `{{ range 100000000000 }}{{ end }}`, want: ErrTooLarge, msg: "range over 100000000000 items"},
		{name: "range over a huge int from a function", tmpl: `{{ range (add 1 99999999999) }}{{ end }}`, want: ErrTooLarge, msg: "range over 100000000000 items"},
		{name: "nested ranges", tmpl: `{{ range 5000 }}{{ range 5000 }}{{ end }}{{ end }}`, lim: Limits{MaxTemplateOps: 200000}, want: ErrTooLarge, msg: "more than 200000 steps"},
		{name: "nested until", tmpl: `{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}`, lim: Limits{MaxTemplateOps: 200000}, want: ErrTooLarge, msg: "steps"},
		{name: "doubling a string", tmpl: `{{ $x := "xx" }}{{ range 40 }}{{ $x = print $x $x }}{{ end }}{{ len $x }}`, want: ErrTooLarge, msg: "more than 16777216 bytes"},
		{name: "doubling a string with cat", tmpl: `{{ $x := "xx" }}{{ range 40 }}{{ $x = cat $x $x }}{{ end }}`, want: ErrTooLarge, msg: "more than 16777216 bytes"},
		{name: "doubling a list", tmpl: `{{ $l := list 1 }}{{ range 64 }}{{ $l = concat $l $l }}{{ end }}{{ len $l }}`, want: ErrTooLarge, msg: "holds more than"},
		{name: "nesting a list in itself", tmpl: `{{ $l := list 1 }}{{ range 64 }}{{ $l = list $l $l }}{{ end }}{{ toJson $l }}`, want: ErrTooLarge, msg: "holds more than"},
		{name: "doubling a dict", tmpl: `{{ $d := dict "a" 1 }}{{ range 64 }}{{ $d = dict "l" $d "r" $d }}{{ end }}{{ toJson $d }}`, want: ErrTooLarge, msg: "holds more than"},
		{name: "a dict holding itself", tmpl: `{{ $d := dict }}{{ $_ := set $d "self" $d }}{{ $d }}`, want: ErrTooLarge, msg: "hold itself"},
		{name: "merge into itself", tmpl: `{{ $d := dict "a" (list 1 2) }}{{ range 64 }}{{ $d = merge (dict "x" $d "y" $d) $d }}{{ end }}`, want: ErrTooLarge, msg: "holds more than"},
		{name: "exponential recursion", tmpl: `{{ define "a" }}{{ template "a" . }}{{ template "a" . }}{{ end }}{{ template "a" . }}`, lim: Limits{MaxTemplateOps: 100000}, want: ErrTooLarge, msg: "more than 100000 steps"},
		{name: "printf width", tmpl: `{{ printf "%0999999999d" 1 }}`, want: ErrTooLarge, msg: "width or precision"},
		{name: "printf star width", tmpl: `{{ printf "%*d" 999999999 1 }}`, want: ErrTooLarge, msg: "width or precision"},
		{name: "replace of the empty string", tmpl: `{{ replace "" (repeat 1000 "y") (repeat 100000 "x") | len }}`, want: ErrTooLarge, msg: "replace: "},
		{name: "regexReplaceAll copies", tmpl: `{{ regexReplaceAll "x" (repeat 100000 "x") "$0$0$0$0$0$0$0$0$0$0$0$0$0$0$0$0$0$0$0$0$0$0$0$0" | len }}`, want: ErrTooLarge, msg: "regexReplaceAll: "},
		{name: "wrapWith a long separator", tmpl: `{{ wrapWith 1 (repeat 100000 "-") (repeat 10000 "x ") | len }}`, want: ErrTooLarge, msg: "wrapWith: "},
		{name: "join with a long separator", tmpl: `{{ join (repeat 100000 "-") (until 1000) | len }}`, want: ErrTooLarge, msg: "join: "},
		{name: "uniq of a long list", tmpl: `{{ until 1000000 | uniq | len }}`, want: ErrTooLarge, msg: "1000000 items compared with 1000000"},
		{name: "indent", tmpl: `{{ indent 100000000 "x" }}`, want: ErrTooLarge, msg: "indent: "},
		{name: "fromYaml aliases", tmpl: `{{ fromYaml "a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]" | len }}`, want: ErrTooLarge, msg: "fromYaml: "},
		{name: "time", tmpl: `{{ range 1000 }}{{ genPrivateKey "rsa" | len }}{{ end }}`, lim: Limits{TemplateTime: 50 * time.Millisecond}, want: ErrTemplateTimeout, msg: "ran for more than 50ms"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.lim.TemplateTime == 0 {
				// The size budgets must stop these, however slow the
				// machine (the race detector slows merge 40 times).
				tc.lim.TemplateTime = time.Hour
			}
			e := newEngine(true, nil, tc.lim.withDefaults(), nil)
			_, err := e.replace(tc.tmpl, map[string]any{})
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("replace(%q) error = %v, want %v containing %q", tc.tmpl, err, tc.want, tc.msg)
			}
		})
	}
}

// TestTemplateBudgetsAllow: ordinary templates stay within the budgets.
func TestTemplateBudgetsAllow(t *testing.T) {
	e := newEngine(true, nil, DefaultLimits(), nil)
	params := map[string]any{"list": []any{"a", "b", "c"}, "name": "x"}
	for tmpl, want := range map[string]string{
		`{{ range .list }}{{ . }}{{ end }}`:                             "abc",
		`{{ range $i, $e := .list }}{{ $i }}{{ end }}`:                  "012",
		`{{ range 3 }}{{ . }}{{ end }}`:                                 "012",
		`{{ range until 3 }}{{ . }}{{ else }}none{{ end }}`:             "012",
		`{{ range (list) }}x{{ else }}none{{ end }}`:                    "none",
		`{{ define "t" }}[{{ . }}]{{ end }}{{ template "t" .name }}`:    "[x]",
		`{{ printf "%05d-%s" 42 .name }}`:                               "00042-x",
		`{{ repeat 3 .name }}`:                                          "xxx",
		`{{ .list | toJson }}`:                                          `["a","b","c"]`,
		`{{ replace "x" "yy" .name }}`:                                  "yy",
		`{{ $d := dict "a" 1 }}{{ $_ := set $d "b" 2 }}{{ toJson $d }}`: `{"a":1,"b":2}`,
	} {
		got, err := e.replace(tmpl, params)
		if err != nil || got != want {
			t.Errorf("replace(%q) = %q, %v; want %q", tmpl, got, err, want)
		}
	}
}
