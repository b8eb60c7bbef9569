package params_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/params"
)

type announcementCase struct {
	name     string
	input    string
	want     []params.Announcement
	warnings []string
	err      string // the whole message; "" for success
	is       error  // a sentinel the error wraps
}

// str is the normalised announcement of a plain string parameter.
func str(name string) params.Announcement {
	return params.Announcement{Name: name, ItemType: params.ItemString, CollectionType: params.CollectionString}
}

var announcementCases = []announcementCase{
	{name: "empty", input: ""},
	{name: "blank", input: " \n\t"},
	{name: "null", input: "null"},
	{name: "empty list", input: "[]"},
	{name: "yaml empty list", input: "# nothing\n[]\n"},
	{
		name:  "proposal dynamic example",
		input: `[{"name": "helm-parameters", "collectionType": "map", "title": "Helm Parameters", "tooltip": "Parameters to override when generating manifests with Helm", "map": {"image.repository": "my.example.com/gcr-proxy/heptio-images/ks-guestbook-demo", "image.tag": "0.1"}}]`,
		want: []params.Announcement{{
			Name: "helm-parameters", Title: "Helm Parameters", Tooltip: "Parameters to override when generating manifests with Helm",
			ItemType: params.ItemString, CollectionType: params.CollectionMap,
			Map: map[string]string{"image.repository": "my.example.com/gcr-proxy/heptio-images/ks-guestbook-demo", "image.tag": "0.1"},
		}},
	},
	{
		name: "yaml static example",
		input: `- name: version
  title: VERSION
  string: v4.3.0
- name: values-files
  title: VALUES FILES
  collectionType: array
  array: [values.yaml, "prod.yaml"]
- name: replicas
  itemType: number
  required: true
  string: "3"
`,
		want: []params.Announcement{
			{Name: "version", Title: "VERSION", String: "v4.3.0", ItemType: params.ItemString, CollectionType: params.CollectionString},
			{Name: "values-files", Title: "VALUES FILES", ItemType: params.ItemString, CollectionType: params.CollectionArray, Array: []string{"values.yaml", "prod.yaml"}},
			{Name: "replicas", Required: true, String: "3", ItemType: params.ItemNumber, CollectionType: params.CollectionString},
		},
	},
	{
		name:  "explicit nulls are unset",
		input: `[{"name": "a", "title": null, "required": null, "itemType": null, "collectionType": null, "string": null, "array": null, "map": null}]`,
		want:  []params.Announcement{str("a")},
	},
	{
		name:  "empty collections are dropped",
		input: `[{"name": "a", "collectionType": "array", "array": []}, {"name": "b", "collectionType": "map", "map": {}}]`,
		want: []params.Announcement{
			{Name: "a", ItemType: params.ItemString, CollectionType: params.CollectionArray},
			{Name: "b", ItemType: params.ItemString, CollectionType: params.CollectionMap},
		},
	},
	{
		name:  "json a python script writes",
		input: "[\n\t{\"name\": \"emoji-\\ud83d\\ude00\", \"tooltip\": \"a\\/b \\u00e9\"}\n]\n",
		want:  []params.Announcement{{Name: "emoji-😀", Tooltip: "a/b é", ItemType: params.ItemString, CollectionType: params.CollectionString}},
	},
	{
		name:  "byte order mark",
		input: "\ufeff[{\"name\": \"a\"}]",
		want:  []params.Announcement{str("a")},
	},
	{
		name:  "yaml flow that is not json",
		input: "[{name: a, itemType: boolean, string: 'true'}]",
		want:  []params.Announcement{{Name: "a", String: "true", ItemType: params.ItemBoolean, CollectionType: params.CollectionString}},
	},

	// The proposal's Implementation Q/A.
	{
		name: "Q1 other collection ignored",
		input: `- name: images
  collectionType: map
  array:
  - ubuntu:latest=docker.example.com/proxy/ubuntu:latest
  map:
    ubuntu:latest: docker.example.com/proxy/ubuntu:latest
`,
		want: []params.Announcement{{Name: "images", ItemType: params.ItemString, CollectionType: params.CollectionMap,
			Map: map[string]string{"ubuntu:latest": "docker.example.com/proxy/ubuntu:latest"}}},
		warnings: []string{`src:3: announcement [0] "images": array: ignored, because collectionType is map; remove it, or set collectionType: array`},
	},
	{
		name: "Q4 collectionType defaults to string",
		input: `- name: name-prefix
- name: helm-parameters-incorrect
  string: kept
  map:
    global.image.repository: quay.io/argoproj/argocd
- name: helm-parameters
  collectionType: map
  string: dropped
  map:
    global.image.repository: quay.io/argoproj/argocd
`,
		want: []params.Announcement{
			str("name-prefix"),
			{Name: "helm-parameters-incorrect", String: "kept", ItemType: params.ItemString, CollectionType: params.CollectionString},
			{Name: "helm-parameters", ItemType: params.ItemString, CollectionType: params.CollectionMap, Map: map[string]string{"global.image.repository": "quay.io/argoproj/argocd"}},
		},
		warnings: []string{
			`src:4: announcement [1] "helm-parameters-incorrect": map: ignored, because collectionType is not set, so it is string; remove it, or set collectionType: map`,
			`src:8: announcement [2] "helm-parameters": string: ignored, because collectionType is map; remove it, or set collectionType: string`,
		},
	},
	{
		name: "Q5 missing name",
		input: `# needs a name field
- name: ok
- title: Parameter Overrides
  collectionType: map
  map:
    global.image.repository: quay.io/argoproj/argocd
`,
		err: `src:3: announcement [1]: name: the name is missing or empty; every announcement needs one, such as "name": "values-files"`,
		is:  params.ErrInvalid,
	},
	{
		name:  "empty name",
		input: "[\n{\"name\": \"a\"},\n{\"name\": \"\"}]",
		err:   `src:3: announcement [1]: name: the name is missing or empty; every announcement needs one, such as "name": "values-files"`,
		is:    params.ErrInvalid,
	},
	{
		name:  "null name",
		input: `[{"name": null}]`,
		err:   `src:1: announcement [0]: name: the name is missing or empty; every announcement needs one, such as "name": "values-files"`,
	},
	{
		name:     "duplicate names: the first wins",
		input:    "- name: a\n  title: first\n- name: b\n- name: a\n  title: second\n",
		want:     []params.Announcement{{Name: "a", Title: "first", ItemType: params.ItemString, CollectionType: params.CollectionString}, str("b")},
		warnings: []string{`src:4: announcement [2] "a": the name is already used by announcement [0]; this one is ignored, give it another name`},
	},

	// Types.
	{
		name:  "unknown collection type",
		input: "- name: a\n  collectionType: list\n",
		err:   `src:2: announcement [0] "a": collectionType: unknown collection type "list" (did you mean "array"?); use string, array or map`,
		is:    params.ErrInvalid,
	},
	{
		name:  "collection type in capitals",
		input: `[{"name": "a", "collectionType": "Map"}]`,
		err:   `src:1: announcement [0] "a": collectionType: unknown collection type "Map" (did you mean "map"?); use string, array or map`,
	},
	{
		name:  "unknown item type",
		input: "- name: a\n  itemType: int\n",
		err:   `src:2: announcement [0] "a": itemType: unknown item type "int" (did you mean "number"?); use string, number or boolean`,
	},
	{
		name:  "misspelt item type",
		input: "- name: a\n  itemType: numbr\n",
		err:   `src:2: announcement [0] "a": itemType: unknown item type "numbr" (did you mean "number"?); use string, number or boolean`,
	},
	{
		name:  "the first problem written is reported",
		input: "- name: a\n  string: 3\n  required: 'x'\n- name: b\n  title: [x]\n",
		err:   `src:2: announcement [0] "a": string: must be a string, not the integer 3; quote it`,
	},
	{
		name:  "the first problem written is reported, whatever the names",
		input: "- name: a\n  tooltip: 3\n  array: x\n",
		err:   `src:2: announcement [0] "a": tooltip: must be a string, not the integer 3; quote it`,
	},
	{
		name:  "unknown item type without a guess",
		input: "- name: a\n  itemType: colour\n",
		err:   `src:2: announcement [0] "a": itemType: unknown item type "colour"; use string, number or boolean`,
	},
	{
		name:  "number default that is not a number",
		input: "- name: replicas\n  itemType: number\n  string: abc\n",
		err:   `src:3: announcement [0] "replicas": string: "abc" is not a number, but itemType is number; write a number such as 3 or 2.5, or change itemType`,
		is:    params.ErrInvalid,
	},
	{
		name:  "number array item",
		input: "- name: ports\n  itemType: number\n  collectionType: array\n  array: ['80', '-1.5e3', '0x10']\n",
		err:   `src:4: announcement [0] "ports": array[2]: "0x10" is not a number, but itemType is number; write a number such as 3 or 2.5, or change itemType`,
	},
	{
		name:  "boolean map value",
		input: "- name: flags\n  itemType: boolean\n  collectionType: map\n  map:\n    a: 'true'\n    b: 'yes'\n",
		err:   `src:6: announcement [0] "flags": map["b"]: "yes" is not a boolean, but itemType is boolean; write true or false, or change itemType`,
	},
	{
		name:  "defaults of the ignored collection are not checked",
		input: `[{"name": "n", "itemType": "number", "string": "", "array": ["x"]}]`,
		want:  []params.Announcement{{Name: "n", ItemType: params.ItemNumber, CollectionType: params.CollectionString}},
		warnings: []string{
			`src:1: announcement [0] "n": array: ignored, because collectionType is not set, so it is string; remove it, or set collectionType: array`,
		},
	},
	{
		name: "numbers of every json form",
		input: `[{"name": "n", "itemType": "number", "collectionType": "array",
		  "array": ["0", "-0", "12", "1.5", "1e9", "-2.5E-3", ""]}]`,
		want: []params.Announcement{{Name: "n", ItemType: params.ItemNumber, CollectionType: params.CollectionArray,
			Array: []string{"0", "-0", "12", "1.5", "1e9", "-2.5E-3", ""}}},
	},
	{name: "leading zero", input: `[{"name": "n", "itemType": "number", "string": "01"}]`, err: `src:1: announcement [0] "n": string: "01" is not a number, but itemType is number; write a number such as 3 or 2.5, or change itemType`},
	{name: "NaN", input: `[{"name": "n", "itemType": "number", "string": "NaN"}]`, err: `src:1: announcement [0] "n": string: "NaN" is not a number, but itemType is number; write a number such as 3 or 2.5, or change itemType`},
	{name: "True", input: `[{"name": "n", "itemType": "boolean", "string": "True"}]`, err: `src:1: announcement [0] "n": string: "True" is not a boolean, but itemType is boolean; write true or false, or change itemType`},

	// Strictness.
	{
		// A command's output: unknown fields are ignored, as Argo CD's
		// sidecar ignores them (a plugin.yaml's are errors: TestDecodeAnnouncementsStrict).
		name:     "unknown field",
		input:    "- name: a\n  default: x\n",
		want:     []params.Announcement{str("a")},
		warnings: []string{`src:2: announcement [0] "a": default: unknown field "default"; the fields are name, title, tooltip, required, itemType, collectionType, string, array, map; it is ignored`},
	},
	{
		// Matched whatever its case, as Go's JSON decoder matches it.
		name:  "field in the wrong case",
		input: `[{"Name": "a", "Title": "A", "collectiontype": "array", "ARRAY": ["x"]}]`,
		want:  []params.Announcement{{Name: "a", Title: "A", ItemType: params.ItemString, CollectionType: params.CollectionArray, Array: []string{"x"}}},
	},
	{
		name:     "a field in two other cases: the first sorted is taken",
		input:    `[{"NAME": "a", "Name": "b"}]`,
		want:     []params.Announcement{str("a")},
		warnings: []string{`src:1: announcement [0] "a": Name: unknown field "Name"; did you mean "name"?; it is ignored`},
	},
	{
		name:     "a field in two cases",
		input:    `[{"name": "a", "Name": "b"}]`,
		want:     []params.Announcement{str("a")},
		warnings: []string{`src:1: announcement [0] "a": Name: unknown field "Name"; did you mean "name"?; it is ignored`},
	},
	{
		name:  "number where a string belongs",
		input: "- name: replicas\n  itemType: number\n  string: 3\n",
		err:   `src:3: announcement [0] "replicas": string: must be a string, not the integer 3; quote it`,
		is:    params.ErrInvalid,
	},
	{
		name:  "number as a name",
		input: `[{"name": 12345678901234567890123}]`,
		err:   `src:1: announcement [0]: name: must be a string, not the integer 12345678901234567890123; quote it`,
	},
	{
		name:  "boolean in quotes",
		input: `[{"name": "a", "required": "true"}]`,
		err:   `src:1: announcement [0] "a": required: must be true or false, not the string "true"; remove the quotes`,
	},
	{
		name:  "required as a number",
		input: `[{"name": "a", "required": 1}]`,
		err:   `src:1: announcement [0] "a": required: must be true or false, not the integer 1`,
	},
	{
		name:  "non-string map value",
		input: "- name: m\n  collectionType: map\n  map:\n    replicas: 3\n",
		err:   `src:4: announcement [0] "m": map["replicas"]: must be a string, not the integer 3; quote it`,
	},
	{
		name:  "nested map value",
		input: `[{"name": "m", "collectionType": "map", "map": {"a": {"b": "c"}}}]`,
		err:   `src:1: announcement [0] "m": map["a"]: must be a string, not a map`,
	},
	{
		name:  "null array item",
		input: "[{\"name\": \"a\", \"collectionType\": \"array\",\n \"array\": [\"x\",\n null]}]",
		err:   `src:3: announcement [0] "a": array[1]: must be a string, not null; remove it, or write ""`,
	},
	{
		name:  "string where a list belongs",
		input: `[{"name": "a", "collectionType": "array", "array": "values.yaml"}]`,
		err:   `src:1: announcement [0] "a": array: must be a list of strings, not the string "values.yaml"; write ["values.yaml"]`,
	},
	{
		name:  "list where a map belongs",
		input: `[{"name": "a", "collectionType": "map", "map": ["a=b"]}]`,
		err:   `src:1: announcement [0] "a": map: must be a map of strings to strings, such as {"image.tag": "v1"}, not a list`,
	},
	{
		name:  "one entry not in a list",
		input: `{"name": "a"}`,
		err:   `src:1: the announcements must be a list, not a map; put the entry in a list: [{...}]`,
		is:    params.ErrInvalid,
	},
	{
		name:  "a string",
		input: `hello`,
		err:   `src:1: the announcements must be a list, not the string "hello"`,
	},
	{
		name:  "entry not a map",
		input: `["values-files"]`,
		err:   `src:1: announcement [0]: must be a map with at least a name, such as {"name": "values-files"}, not the string "values-files"`,
	},
	{
		name:  "duplicate key in json",
		input: "[{\"name\": \"a\",\n  \"name\": \"b\"}]",
		err:   `src:2: duplicate key "name" (first defined at line 1); remove one of them`,
		is:    document.ErrDuplicateKey,
	},
	{
		name:  "duplicate key in yaml",
		input: "- name: a\n  name: b\n",
		err:   `src:2:3: duplicate key "name" (first defined at line 1); remove one of them`,
		is:    document.ErrDuplicateKey,
	},
	{
		name:  "invalid utf-8",
		input: "[{\"name\": \"a\"},\n {\"name\": \"\xff\"}]",
		err:   `src:2:12: invalid UTF-8: save the file as UTF-8`,
		is:    document.ErrInvalidUTF8,
	},
	{
		name:  "broken json",
		input: "[{\"name\": \"a\"},\n {\"name\": \"b\"]",
		err:   `src:2: invalid character ']' after object key:value pair`,
		is:    document.ErrSyntax,
	},
	{
		name:  "invalid json that is valid yaml",
		input: "[{\"name\": \"a\"},\n {\"name\": }]",
		err:   `src:2: announcement [1]: name: the name is missing or empty; every announcement needs one, such as "name": "values-files"`,
	},
	{
		name:  "json followed by text",
		input: `[{"name": "a"}] trailing`,
		err:   `src:1: invalid character 't' after top-level value`,
	},
	{
		name:  "two yaml documents",
		input: "- name: a\n---\n- name: b\n",
		err:   `src:3: a second YAML document starts here; this input holds exactly one document`,
		is:    document.ErrSyntax,
	},
	{
		name:  "deep json",
		input: strings.Repeat("[", 100) + strings.Repeat("]", 100),
		err:   `src:1: maps and lists are nested more than 32 levels deep`,
		is:    document.ErrTooDeep,
	},
	{
		name:  "deep json map",
		input: `[{"name": "a", "map": ` + strings.Repeat(`{"a": `, 40) + `1` + strings.Repeat(`}`, 41) + `]`,
		err:   `src:1: maps and lists are nested more than 32 levels deep`,
		is:    document.ErrTooDeep,
	},
	{
		name:  "deep yaml",
		input: "- name: a\n  map: " + strings.Repeat("[", 100) + strings.Repeat("]", 100),
		err:   `src:2:39: maps and lists are nested more than 32 levels deep`,
		is:    document.ErrTooDeep,
	},
	{
		name:  "too many announcements",
		input: "[" + strings.Repeat(`{"name": "a"},`, params.MaxEntries) + `{"name": "b"}]`,
		err:   `src:1: the list holds 1001 announcements, more than the limit of 1000`,
		is:    params.ErrTooLarge,
	},
	{
		name:  "too many items",
		input: `[{"name": "a", "collectionType": "array", "array": [` + strings.Repeat(`"",`, params.MaxItems) + `""]}]`,
		err:   `src:1: announcement [0] "a": array: holds 10001 items, more than the limit of 10000`,
		is:    params.ErrTooLarge,
	},
	{
		name:  "too many map entries",
		input: `[{"name": "a", "collectionType": "map", "map": {` + manyKeys(params.MaxItems+1) + `}}]`,
		err:   `src:1: announcement [0] "a": map: holds 10001 entries, more than the limit of 10000`,
		is:    params.ErrTooLarge,
	},
	{
		name:  "long name",
		input: `[{"name": "` + strings.Repeat("n", params.MaxNameBytes+1) + `"}]`,
		err:   `src:1: announcement [0]: name: the name is 1025 bytes long, more than the limit of 1024`,
		is:    params.ErrTooLarge,
	},
	{
		name:  "input too large",
		input: `[{"name": "a", "string": "` + strings.Repeat("x", params.MaxBytes) + `"}]`,
		err:   `src: document is larger than the limit of 1048576 bytes`,
		is:    params.ErrTooLarge,
	},
	{
		name:  "yaml aliases multiply text",
		input: aliasBomb(),
		err:   `src:4: announcement [0] "a": map["k62"]: the announcements hold more than 1048576 bytes of text (YAML aliases count each time they are used)`,
		is:    params.ErrTooLarge,
	},
}

func manyKeys(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d": ""`, i)
	}
	return b.String()
}

// aliasBomb is a small YAML document whose map values, all one aliased
// 16 KiB string, add up to more than MaxBytes.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString("- name: a\n  collectionType: map\n  tooltip: &t " + strings.Repeat("x", 16<<10) + "\n  map: {")
	for i := range 100 {
		fmt.Fprintf(&b, "k%02d: *t, ", i)
	}
	b.WriteString("}\n")
	return b.String()
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func warningTexts(ws []params.Warning) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.String())
	}
	return out
}

func TestParseAnnouncements(t *testing.T) {
	for _, tc := range announcementCases {
		t.Run(tc.name, func(t *testing.T) {
			got, warnings, err := params.ParseAnnouncements([]byte(tc.input), "src")
			if errText(err) != tc.err {
				t.Fatalf("ParseAnnouncements() error = %v, want %v", err, tc.err)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("ParseAnnouncements() error %v does not wrap %v", err, tc.is)
			}
			if err != nil {
				var pe *params.Error
				var le *document.LoadError
				if !errors.As(err, &pe) && !errors.As(err, &le) {
					t.Errorf("ParseAnnouncements() error is %T, want *params.Error or *document.LoadError", err)
				}
				if got != nil || warnings != nil {
					t.Errorf("ParseAnnouncements() = %v, %v with an error, want nil", got, warnings)
				}
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseAnnouncements() mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.warnings, warningTexts(warnings)); diff != "" {
				t.Errorf("ParseAnnouncements() warnings mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestErrorFields(t *testing.T) {
	_, _, err := params.ParseAnnouncements([]byte("- name: a\n- name: b\n  map: {k: 1}\n"), "plugin.yaml")
	var pe *params.Error
	if !errors.As(err, &pe) {
		t.Fatalf("error %v is %T, want *params.Error", err, err)
	}
	want := params.Error{Source: "plugin.yaml", Line: 3, Kind: "announcement", Index: 1, Name: "b", Field: `map["k"]`,
		Msg: "must be a string, not the integer 1; quote it", Err: params.ErrInvalid}
	if diff := cmp.Diff(want, *pe, cmpopts.EquateErrors()); diff != "" {
		t.Errorf("error mismatch (-want +got):\n%s", diff)
	}
}

// TestDecodeAnnouncements decodes spec.parameters.static of a plugin.yaml
// loaded by the values package, as the plugin loader does.
func TestDecodeAnnouncements(t *testing.T) {
	const plugin = `apiVersion: argoproj.io/v1alpha1
kind: ConfigManagementPlugin
metadata:
  name: helm
spec:
  parameters:
    static:
    - name: values-files
      title: Values Files
      collectionType: array
    - name: replicas
      itemType: number
      string: many
`
	tree, pos, err := document.Loader{Positions: true}.Parse([]byte(plugin), "plugin.yaml")
	if err != nil {
		t.Fatal(err)
	}
	static := tree["spec"].(map[string]any)["parameters"].(map[string]any)["static"]
	spos := pos.Key("spec").Key("parameters").Key("static")
	_, _, err = params.DecodeAnnouncements(static, spos, "plugin.yaml")
	const want = `plugin.yaml:13: announcement [1] "replicas": string: "many" is not a number, but itemType is number; write a number such as 3 or 2.5, or change itemType`
	if errText(err) != want {
		t.Errorf("DecodeAnnouncements() error = %v, want %s", err, want)
	}

	// Without positions, errors still name the entry and field.
	_, _, err = params.DecodeAnnouncements(static, nil, "plugin.yaml")
	const wantNoPos = `plugin.yaml: announcement [1] "replicas": string: "many" is not a number, but itemType is number; write a number such as 3 or 2.5, or change itemType`
	if errText(err) != wantNoPos {
		t.Errorf("DecodeAnnouncements(no positions) error = %v, want %s", err, wantNoPos)
	}

	got, warnings, err := params.DecodeAnnouncements(nil, nil, "plugin.yaml")
	if got != nil || warnings != nil || err != nil {
		t.Errorf("DecodeAnnouncements(nil) = %v, %v, %v, want nothing", got, warnings, err)
	}
}

func TestCombine(t *testing.T) {
	a := func(name, title string) params.Announcement {
		an := str(name)
		an.Title = title
		return an
	}
	tests := []struct {
		name            string
		static, dynamic []params.Announcement
		want            []params.Announcement
		warnings        []string
	}{
		{name: "both empty", want: []params.Announcement{}},
		{
			name:    "proposal example",
			static:  []params.Announcement{{Name: "values-files", Title: "Values Files", CollectionType: params.CollectionArray}},
			dynamic: []params.Announcement{{Name: "helm-parameters", CollectionType: params.CollectionMap, Map: map[string]string{"image.tag": "0.1"}}},
			want: []params.Announcement{
				{Name: "values-files", Title: "Values Files", CollectionType: params.CollectionArray},
				{Name: "helm-parameters", CollectionType: params.CollectionMap, Map: map[string]string{"image.tag": "0.1"}},
			},
		},
		{
			name:     "static wins",
			static:   []params.Announcement{a("x", "static x"), a("y", "static y")},
			dynamic:  []params.Announcement{a("z", "dynamic z"), a("y", "dynamic y"), a("w", "dynamic w")},
			want:     []params.Announcement{a("x", "static x"), a("y", "static y"), a("z", "dynamic z"), a("w", "dynamic w")},
			warnings: []string{`announcement "y": the dynamic announcement [1] is ignored: static announcement [1] has the same name and wins; rename one of them`},
		},
		{
			name:    "duplicates within a list",
			static:  []params.Announcement{a("x", "1"), a("x", "2")},
			dynamic: []params.Announcement{a("d", "1"), a("d", "2")},
			want:    []params.Announcement{a("x", "1"), a("d", "1")},
			warnings: []string{
				`announcement "x": the static announcement [1] is ignored: static announcement [0] has the same name; rename one of them`,
				`announcement "d": the dynamic announcement [1] is ignored: dynamic announcement [0] has the same name; rename one of them`,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, warnings := params.Combine(tc.static, tc.dynamic)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Combine() mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.warnings, warningTexts(warnings)); diff != "" {
				t.Errorf("Combine() warnings mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLongKeysAreClipped(t *testing.T) {
	long := strings.Repeat("k", 100_000)
	_, warnings, err := params.ParseAnnouncements([]byte(`[{"name": "a", "`+long+`": 1}]`), "src")
	if err != nil || len(warnings) != 1 || len(warnings[0].String()) > 300 {
		t.Errorf("ParseAnnouncements(long unknown key) = %.400v, %v, want one short warning", warningTexts(warnings), err)
	}
	_, _, err = params.ParseAnnouncements([]byte(`[{"name": "a", "collectionType": "map", "map": {"`+long+`": 1}}]`), "src")
	if err == nil || len(err.Error()) > 300 {
		t.Errorf("ParseAnnouncements(long key) error = %.400v, want a short error", err)
	}
}

// TestDecodeAnnouncementsStrict: in a plugin.yaml, an unknown field, or a
// field in the wrong case, is an error naming the line.
func TestDecodeAnnouncementsStrict(t *testing.T) {
	for _, tc := range []struct {
		tree any
		want string
	}{
		{[]any{map[string]any{"name": "a", "default": "x"}}, `plugin.yaml: announcement [0] "a": default: unknown field "default"; the fields are name, title, tooltip, required, itemType, collectionType, string, array, map`},
		{[]any{map[string]any{"Name": "a"}}, `plugin.yaml: announcement [0]: Name: unknown field "Name"; did you mean "name"?`},
		{[]any{map[string]any{"name": "a", "titel": "x"}}, `plugin.yaml: announcement [0] "a": titel: unknown field "titel"; did you mean "title"?`},
	} {
		_, _, err := params.DecodeAnnouncements(tc.tree, nil, "plugin.yaml")
		if errText(err) != tc.want {
			t.Errorf("DecodeAnnouncements(%v) error = %v, want %s", tc.tree, err, tc.want)
		}
	}
}
