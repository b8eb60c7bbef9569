package params_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/params"
)

func ptr(s string) *string { return &s }

type parameterCase struct {
	name  string
	input string
	want  []params.Parameter
	err   string
	is    error
}

var parameterCases = []parameterCase{
	{name: "empty", input: ""},
	{name: "blank", input: "\n "},
	{name: "null", input: "null"},
	{name: "empty list", input: "[]"},
	{
		name: "proposal example",
		input: `[
  {"name": "values", "string": "resources:\n  cpu: 100m\n  memory: 128Mi"},
  {"name": "values-files", "array": ["values.yaml"]},
  {"name": "helm-parameters", "map": {"image.repository": "my.example.com/gcr-proxy/heptio-images/ks-guestbook-demo", "image.tag": "0.1"}}
]`,
		want: []params.Parameter{
			{Name: "values", String: ptr("resources:\n  cpu: 100m\n  memory: 128Mi")},
			{Name: "values-files", Array: []string{"values.yaml"}},
			{Name: "helm-parameters", Map: map[string]string{"image.repository": "my.example.com/gcr-proxy/heptio-images/ks-guestbook-demo", "image.tag": "0.1"}},
		},
	},
	{
		name:  "argo cd encoding",
		input: `[{"array":["a","b"],"map":{"k":"v"},"name":"all","string":"s"},{"name":"none"}]`,
		want: []params.Parameter{
			{Name: "all", String: ptr("s"), Array: []string{"a", "b"}, Map: map[string]string{"k": "v"}},
			{Name: "none"},
		},
	},
	{
		name:  "set but empty",
		input: `[{"name": "a", "string": "", "array": [], "map": {}}]`,
		want:  []params.Parameter{{Name: "a", String: ptr(""), Array: []string{}, Map: map[string]string{}}},
	},
	{
		name:  "null is unset",
		input: `[{"name": "a", "string": null, "array": null, "map": null}]`,
		want:  []params.Parameter{{Name: "a"}},
	},
	{
		name:  "duplicate names are kept",
		input: `[{"name": "a", "string": "1"}, {"name": "a", "string": "2"}]`,
		want:  []params.Parameter{{Name: "a", String: ptr("1")}, {Name: "a", String: ptr("2")}},
	},
	{
		name:  "escapes",
		input: `[{"name": "\u00e9\ud83d\ude00", "string": "\u003c\/a\u003e \u2028"}]`,
		want:  []params.Parameter{{Name: "é😀", String: ptr("</a> \u2028")}},
	},
	{
		name:  "lone surrogate becomes U+FFFD",
		input: `[{"name": "a", "string": "\ud800"}]`,
		want:  []params.Parameter{{Name: "a", String: ptr("\ufffd")}},
	},

	{
		name:  "missing name",
		input: "[\n  {\"name\": \"a\"},\n  {\"string\": \"x\"}\n]",
		err:   `ARGOCD_APP_PARAMETERS:3: parameter [1]: name: the name is missing or empty; every parameter needs one, such as "name": "values-files"`,
		is:    params.ErrInvalid,
	},
	{
		name:  "old value field",
		input: `[{"name": "a", "value": "x"}]`,
		err:   `ARGOCD_APP_PARAMETERS:1: parameter [0] "a": value: unknown field "value"; the fields are name, string, array, map`,
		is:    params.ErrInvalid,
	},
	{
		name:  "announcement field",
		input: `[{"name": "a", "collectionType": "map"}]`,
		err:   `ARGOCD_APP_PARAMETERS:1: parameter [0] "a": collectionType: unknown field "collectionType"; the fields are name, string, array, map`,
	},
	{
		name:  "number where a string belongs",
		input: `[{"name": "replicas", "string": 3}]`,
		err:   `ARGOCD_APP_PARAMETERS:1: parameter [0] "replicas": string: must be a string, not the integer 3; quote it`,
		is:    params.ErrInvalid,
	},
	{
		name:  "boolean array item",
		input: `[{"name": "a", "array": ["x", true]}]`,
		err:   `ARGOCD_APP_PARAMETERS:1: parameter [0] "a": array[1]: must be a string, not the boolean true; quote it`,
	},
	{
		name:  "non-string map value",
		input: "[{\"name\": \"m\", \"map\": {\n\"a\": \"1\",\n\"b\": 2.5}}]",
		err:   `ARGOCD_APP_PARAMETERS:3: parameter [0] "m": map["b"]: must be a string, not the number 2.5; quote it`,
	},
	{
		name:  "map value is a list",
		input: `[{"name": "m", "map": {"a": ["1"]}}]`,
		err:   `ARGOCD_APP_PARAMETERS:1: parameter [0] "m": map["a"]: must be a string, not a list`,
	},
	{
		name:  "NUL in a value",
		input: `[{"name": "a", "map": {"k": "x\u0000y"}}]`,
		err:   `ARGOCD_APP_PARAMETERS:1: parameter [0] "a": map["k"]: holds a NUL character, which an environment variable cannot carry; remove it`,
		is:    params.ErrInvalid,
	},
	{
		name:  "NUL in a name",
		input: `[{"name": "a\u0000"}]`,
		err:   `ARGOCD_APP_PARAMETERS:1: parameter [0]: name: holds a NUL character, which an environment variable cannot carry; remove it`,
	},
	{
		name:  "not a list",
		input: `{"name": "a", "string": "x"}`,
		err:   `ARGOCD_APP_PARAMETERS:1: the parameters must be a list, not a map; put the entry in a list: [{...}]`,
	},
	{
		name:  "a number",
		input: `42`,
		err:   `ARGOCD_APP_PARAMETERS:1: the parameters must be a list, not the integer 42`,
	},
	{
		name:  "yaml is not accepted",
		input: "- name: a\n",
		err:   `ARGOCD_APP_PARAMETERS:1: invalid character ' ' in numeric literal; the input must be JSON`,
		is:    document.ErrSyntax,
	},
	{
		name:  "truncated",
		input: `[{"name": "a"`,
		err:   `ARGOCD_APP_PARAMETERS:1: unexpected end of JSON input; the input must be JSON`,
		is:    document.ErrSyntax,
	},
	{
		name:  "duplicate key",
		input: `[{"name": "a", "string": "1", "string": "2"}]`,
		err:   `ARGOCD_APP_PARAMETERS:1: duplicate key "string" (first defined at line 1); remove one of them`,
		is:    document.ErrDuplicateKey,
	},
	{
		name:  "invalid utf-8",
		input: "[{\"name\": \"a\", \"string\": \"\xc3\x28\"}]",
		err:   `ARGOCD_APP_PARAMETERS:1:27: invalid UTF-8: save the file as UTF-8`,
		is:    document.ErrInvalidUTF8,
	},
	{
		name:  "deep",
		input: `[{"name": "a", "array": ` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}]`,
		err:   `ARGOCD_APP_PARAMETERS:1: maps and lists are nested more than 32 levels deep`,
		is:    document.ErrTooDeep,
	},
	{
		name:  "deeper than encoding/json goes",
		input: strings.Repeat("[", 20000) + strings.Repeat("]", 20000),
		err:   `ARGOCD_APP_PARAMETERS:1: invalid character '[' exceeded max depth; the input must be JSON`,
		is:    document.ErrSyntax,
	},
	{
		name:  "too many parameters",
		input: "[" + strings.Repeat(`{"name": "a"},`, params.MaxEntries) + `{"name": "b"}]`,
		err:   `ARGOCD_APP_PARAMETERS:1: the list holds 1001 parameters, more than the limit of 1000`,
		is:    params.ErrTooLarge,
	},
	{
		name:  "too many items",
		input: `[{"name": "a", "array": [` + strings.Repeat(`"",`, params.MaxItems) + `""]}]`,
		err:   `ARGOCD_APP_PARAMETERS:1: parameter [0] "a": array: holds 10001 items, more than the limit of 10000`,
		is:    params.ErrTooLarge,
	},
	{
		name:  "long name",
		input: `[{"name": "` + strings.Repeat("é", params.MaxNameBytes/2+1) + `"}]`,
		err:   `ARGOCD_APP_PARAMETERS:1: parameter [0]: name: the name is 1026 bytes long, more than the limit of 1024`,
		is:    params.ErrTooLarge,
	},
	{
		name:  "too large",
		input: `[{"name": "a", "string": "` + strings.Repeat(" ", params.MaxBytes) + `"}]`,
		err:   `ARGOCD_APP_PARAMETERS: document is larger than the limit of 1048576 bytes`,
		is:    params.ErrTooLarge,
	},
}

func TestParseParameters(t *testing.T) {
	for _, tc := range parameterCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := params.ParseParameters([]byte(tc.input), "ARGOCD_APP_PARAMETERS")
			if errText(err) != tc.err {
				t.Fatalf("ParseParameters() error = %v, want %v", err, tc.err)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("ParseParameters() error %v does not wrap %v", err, tc.is)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseParameters() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParameterMarshalJSON(t *testing.T) {
	tests := []struct {
		p    params.Parameter
		want string
	}{
		{params.Parameter{Name: "a"}, `{"name":"a"}`},
		{params.Parameter{Name: "a", String: ptr("")}, `{"name":"a","string":""}`},
		{params.Parameter{Name: "a", Array: []string{}, Map: map[string]string{}}, `{"name":"a","array":[],"map":{}}`},
		{params.Parameter{Name: "<&>", String: ptr("x\ny"), Array: []string{"1"}, Map: map[string]string{"b": "2", "a": "1"}},
			`{"name":"<&>","string":"x\ny","array":["1"],"map":{"a":"1","b":"2"}}`},
	}
	for _, tc := range tests {
		got, err := tc.p.MarshalJSON()
		if err != nil || string(got) != tc.want {
			t.Errorf("MarshalJSON(%+v) = %s, %v, want %s", tc.p, got, err, tc.want)
		}
	}
}

func TestEscape(t *testing.T) {
	tests := []struct{ in, want string }{
		{"values", "VALUES"},
		{"values-files_0", "VALUES_FILES_0"},
		{"helm-parameters_image.repository", "HELM_PARAMETERS_IMAGE_REPOSITORY"},
		{"ubuntu:latest", "UBUNTU_LATEST"},
		{"", ""},
		{"a b\tc=d", "A_B_C_D"},
		{"café", "CAF_"},
		{"ıſ", "IS"}, // Unicode uppercase, as strings.ToUpper
		{"😀", "_"},
		{"a\xffb", "A_B"},
		{"\x00", "_"},
	}
	for _, tc := range tests {
		if got := params.Escape(tc.in); got != tc.want {
			t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCheck(t *testing.T) {
	announced := []params.Announcement{
		{Name: "values-files", ItemType: params.ItemString, CollectionType: params.CollectionArray},
		{Name: "helm-parameters", ItemType: params.ItemString, CollectionType: params.CollectionMap},
		{Name: "replicas", ItemType: params.ItemNumber, CollectionType: params.CollectionString},
		{Name: "ports", ItemType: params.ItemNumber, CollectionType: params.CollectionArray},
		{Name: "flags", ItemType: params.ItemBoolean, CollectionType: params.CollectionMap},
		{Name: "plain"}, // not normalised: string
	}
	required := []params.Announcement{
		{Name: "needed", Required: true, CollectionType: params.CollectionArray},
		{Name: "defaulted", Required: true, String: "x"},
		{Name: "needed", Required: true},
	}
	tests := []struct {
		name      string
		params    []params.Parameter
		announced []params.Announcement
		warnings  []string
		err       string
	}{
		{name: "nothing"},
		{
			name: "all fit",
			params: []params.Parameter{
				{Name: "values-files", Array: []string{"a.yaml"}},
				{Name: "helm-parameters", Map: map[string]string{"a": "b"}},
				{Name: "replicas", String: ptr("3")},
				{Name: "ports", Array: []string{"80", "", "-1"}},
				{Name: "flags", Map: map[string]string{"x": "true", "y": "false"}},
				{Name: "plain", String: ptr("")},
			},
			announced: announced,
		},
		{
			name:      "not announced",
			params:    []params.Parameter{{Name: "extra", String: ptr("x")}},
			announced: announced,
			warnings:  []string{`parameter [0] "extra": no announcement has this name; it is passed on, but the plugin may ignore it`},
		},
		{
			name: "twice",
			params: []params.Parameter{
				{Name: "replicas", String: ptr("1")},
				{Name: "replicas", String: ptr("2")},
			},
			announced: announced,
			warnings:  []string{`parameter [1] "replicas": parameter [0] has the same name; the plugin gets both in ARGOCD_APP_PARAMETERS, and the PARAM_ variables of this later one win`},
		},
		{
			name: "shape differs",
			params: []params.Parameter{
				{Name: "values-files", String: ptr("a.yaml")},
				{Name: "helm-parameters", Array: []string{"a=b"}, String: ptr("x"), Map: map[string]string{"a": "b"}},
				{Name: "replicas"},
			},
			announced: announced,
			warnings: []string{
				`parameter [0] "values-files": string: it is announced as an array, but "string" is set instead; set "array"`,
				`parameter [1] "helm-parameters": string: it is announced as a map, so the plugin reads only "map"; remove "string" and "array"`,
				`parameter [2] "replicas": sets no value; it is announced as a string, so set "string"`,
			},
		},
		{
			name: "values that do not fit",
			params: []params.Parameter{
				{Name: "replicas", String: ptr("three")},
				{Name: "ports", Array: []string{"80", "http"}, String: ptr("ignored")},
				{Name: "flags", Map: map[string]string{"x": "yes", "a": "true"}},
			},
			announced: announced,
			warnings: []string{
				`parameter [1] "ports": string: it is announced as an array, so the plugin reads only "array"; remove "string"`,
			},
			err: `parameter [0] "replicas": string: "three" is not a number, but itemType is number; write a number such as 3 or 2.5` + "\n" +
				`parameter [1] "ports": array[1]: "http" is not a number, but itemType is number; write a number such as 3 or 2.5` + "\n" +
				`parameter [2] "flags": map["x"]: "yes" is not a boolean, but itemType is boolean; write true or false`,
		},
		{
			name:      "required missing",
			announced: required,
			err:       `parameter "needed": the plugin requires this parameter, but it is not set; set "array" in the Application's spec.source.plugin.parameters`,
		},
		{
			name:      "required set in the wrong field",
			params:    []params.Parameter{{Name: "needed", String: ptr("a")}},
			announced: required,
			warnings:  []string{`parameter [0] "needed": string: it is announced as an array, but "string" is set instead; set "array"`},
			err:       `parameter "needed": the plugin requires this parameter, but it is not set; set "array" in the Application's spec.source.plugin.parameters`,
		},
		{
			name:      "required set empty",
			params:    []params.Parameter{{Name: "needed", Array: []string{}}},
			announced: required,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			warnings, err := params.Check(tc.params, tc.announced)
			if diff := cmp.Diff(tc.warnings, warningTexts(warnings)); diff != "" {
				t.Errorf("Check() warnings mismatch (-want +got):\n%s", diff)
			}
			if errText(err) != tc.err {
				t.Errorf("Check() error = %v, want %v", err, tc.err)
			}
			if err != nil {
				var pe *params.Error
				if !errors.Is(err, params.ErrInvalid) || !errors.As(err, &pe) {
					t.Errorf("Check() error %v is not an *Error wrapping ErrInvalid", err)
				}
			}
		})
	}
}
