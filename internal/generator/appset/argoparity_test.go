package appset_test

// Behaviours pinned down by Argo CD's own tests of the ApplicationSet
// controller (applicationset/generators/plugin_test.go,
// applicationset/utils/utils_test.go, generator_spec_processor_test.go,
// value_interpolation_test.go), each reproduced with small inputs of our
// own, rendered end to end: an ApplicationSet, a plugin server over HTTP
// reached through generator.Client, the Applications.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/generator"
	"github.com/strata-dev/strata/internal/generator/appset"
)

// parityPlugin is a plugin server that answers every request with body,
// after checking the token as the controller's tests do (401 otherwise),
// and records the request bodies.
type parityPlugin struct {
	token    string
	status   int
	body     string
	bodyFor  map[string]string // answers by a text the request holds, before body
	requests []string
}

func (p *parityPlugin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	p.requests = append(p.requests, string(b))
	if r.Header.Get("Authorization") != "Bearer "+p.token || r.URL.Path != "/api/v1/getparams.execute" {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if p.status != 0 {
		w.WriteHeader(p.status)
	}
	for text, body := range p.bodyFor {
		if strings.Contains(string(b), text) {
			io.WriteString(w, body)
			return
		}
	}
	io.WriteString(w, p.body)
}

// parityCase is one ApplicationSet rendered against a parityPlugin.
type parityCase struct {
	name       string
	goTemplate bool
	options    []string       // goTemplateOptions
	generator  map[string]any // spec.generators[0]; plugin's configMapRef defaults to "p"
	template   map[string]any // metadata.annotations of the template
	extra      map[string]any // more of the template's metadata
	syncPolicy map[string]any
	answer     string // the plugin's 200 body
	answerFor  map[string]string
	status     int    // the plugin's status, when not 200
	manifests  string // ConfigMap and Secret manifests; default: "p" with token "$t" of argocd-secret, "tok"
	want       []map[string]any
	wantErr    string
	wantReqs   []string
}

const parityManifests = `apiVersion: v1
kind: ConfigMap
metadata: {name: p, namespace: argocd}
data: {baseUrl: "%s", token: "$t"}
---
apiVersion: v1
kind: Secret
metadata: {name: argocd-secret, namespace: argocd}
stringData: {t: tok}
`

// renderParity renders c and returns the metadata (annotations,
// finalizers) of each Application, or the error.
func renderParity(t *testing.T, c parityCase) ([]map[string]any, []string, error) {
	t.Helper()
	p := &parityPlugin{token: "tok", status: c.status, body: c.answer, bodyFor: c.answerFor}
	srv := httptest.NewServer(p)
	defer srv.Close()
	manifests := c.manifests
	if manifests == "" {
		manifests = parityManifests
	}
	set := &appset.PluginSet{}
	if err := set.Load([]byte(strings.ReplaceAll(manifests, "%s", srv.URL)), "plugin.yaml", false); err != nil {
		t.Fatal(err)
	}
	metadata := map[string]any{"name": "app", "annotations": c.template}
	for k, v := range c.extra {
		metadata[k] = v
	}
	spec := map[string]any{
		"goTemplate": c.goTemplate,
		"generators": []any{c.generator},
		"template": map[string]any{
			"metadata": metadata,
			"spec": map[string]any{
				"project":     "default",
				"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": "apps"},
			},
		},
	}
	if c.options != nil {
		spec["goTemplateOptions"] = c.options
	}
	if c.syncPolicy != nil {
		spec["syncPolicy"] = c.syncPolicy
	}
	doc, err := json.Marshal(map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
		"metadata": map[string]any{"name": "set", "namespace": "argocd"},
		"spec":     spec,
	})
	if err != nil {
		t.Fatal(err)
	}
	a, err := appset.Parse(doc, "appset.json")
	if err != nil {
		return nil, nil, err
	}
	r := appset.Renderer{Plugins: set.Resolver(func(pc appset.PluginConfig) appset.ParamsGetter {
		return &generator.Client{BaseURL: pc.BaseURL, Token: pc.Token, Timeout: pc.Timeout}
	})}
	res, err := r.Render(context.Background(), a)
	if err != nil {
		return nil, p.requests, err
	}
	var out []map[string]any
	for _, app := range res.Applications {
		md := app["metadata"].(map[string]any)
		got := map[string]any{}
		for _, k := range []string{"annotations", "finalizers", "labels"} {
			if v, ok := md[k]; ok {
				got[k] = v
			}
		}
		out = append(out, got)
	}
	return out, p.requests, nil
}

func runParity(t *testing.T, cases []parityCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, reqs, err := renderParity(t, c)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("Render() = %v, %v; want an error containing %q", got, err, c.wantErr)
				}
			} else {
				if err != nil {
					t.Fatalf("Render(): %v", err)
				}
				if diff := cmp.Diff(c.want, got); diff != "" {
					t.Errorf("Applications' metadata (-want +got):\n%s", diff)
				}
			}
			if c.wantReqs != nil {
				if diff := cmp.Diff(c.wantReqs, reqs); diff != "" {
					t.Errorf("requests (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// plugin returns a plugin generator of ConfigMap "p" with the given input
// parameters (nil: none) and values (nil: none).
func plugin(params, values map[string]any) map[string]any {
	body := map[string]any{"configMapRef": map[string]any{"name": "p"}}
	if params != nil {
		body["input"] = map[string]any{"parameters": params}
	}
	if values != nil {
		body["values"] = values
	}
	return map[string]any{"plugin": body}
}

// finalizer is the finalizer every Application gets by default.
var finalizer = []any{"resources-finalizer.argocd.argoproj.io"}

func ann(kv ...string) map[string]any {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func withFinalizer(annotations map[string]any) map[string]any {
	return map[string]any{"annotations": annotations, "finalizers": finalizer}
}

// One parameter set with nested objects and a number, as the plugin test's
// answers have.
const nestedAnswer = `{"output": {"parameters": [{"team": "red", "db": {"host": "db-1", "conn": {"pool": "small"}}, "port": 5432, "region": "from-plugin"}]}}`

func TestParityPluginGenerator(t *testing.T) {
	runParity(t, []parityCase{
		{
			// Plain mode flattens each set to dotted string keys, numbers
			// formatted with %v; generator.input.parameters is not a
			// string, so its tags stay as written; a key of the plugin's
			// named like an input parameter is the plugin's.
			name:      "plain mode flattens",
			generator: plugin(map[string]any{"region": "eu", "size": "m"}, nil),
			template: ann("team", "{{team}}", "host", "{{db.host}}", "pool", "{{ db.conn.pool }}", "port", "{{port}}",
				"region", "{{region}}", "input", "{{generator.input.parameters.size}}", "db", "{{db}}"),
			answer: nestedAnswer,
			want: []map[string]any{withFinalizer(ann("team", "red", "host", "db-1", "pool", "small", "port", "5432",
				"region", "from-plugin", "input", "{{generator.input.parameters.size}}", "db", "{{db}}"))},
			wantReqs: []string{`{"applicationSetName":"set","input":{"parameters":{"region":"eu","size":"m"}}}` + "\n"},
		},
		{
			name:      "plain mode values are templated with the set and read as values.<key>",
			generator: plugin(map[string]any{"region": "eu"}, map[string]any{"fixed": "constant", "url": "https://{{team}}.{{db.host}}"}),
			template:  ann("fixed", "{{values.fixed}}", "url", "{{ values.url }}"),
			answer:    nestedAnswer,
			want:      []map[string]any{withFinalizer(ann("fixed", "constant", "url", "https://red.db-1"))},
		},
		{
			// goTemplate mode keeps the set nested; numbers are float64.
			name:       "goTemplate mode keeps objects",
			goTemplate: true,
			generator:  plugin(map[string]any{"region": "eu"}, nil),
			template: ann("pool", "{{ .db.conn.pool }}", "port", "{{ .port }} {{ printf \"%T\" .port }}",
				"db", "{{ .db.host }}", "input", "{{ toJson .generator.input.parameters }}"),
			answer: nestedAnswer,
			want: []map[string]any{withFinalizer(ann("pool", "small", "port", "5432 float64", "db", "db-1",
				"input", `{"region":"eu"}`))},
		},
		{
			name:       "goTemplate mode: values under .values, templated with the set",
			goTemplate: true,
			generator:  plugin(nil, map[string]any{"dsn": "{{ .db.host }}:{{ .port }}"}),
			template:   ann("dsn", "{{ .values.dsn }}"),
			answer:     nestedAnswer,
			want:       []map[string]any{withFinalizer(ann("dsn", "db-1:5432"))},
		},
		{
			// The reserved keys: generator is always the controller's,
			// values only when the generator has values.
			name:       "goTemplate mode: generator and values of the plugin's own are replaced",
			goTemplate: true,
			generator:  plugin(map[string]any{"a": "b"}, map[string]any{"mine": "{{ .values.theirs }}"}),
			template:   ann("values", "{{ toJson .values }}", "generator", "{{ toJson .generator }}"),
			answer:     `{"output": {"parameters": [{"values": {"theirs": "t"}, "generator": "forged"}]}}`,
			want: []map[string]any{withFinalizer(ann("values", `{"mine":"t"}`,
				"generator", `{"input":{"parameters":{"a":"b"}}}`))},
		},
		{
			name:       "goTemplate mode: the plugin's values stay when the generator has none",
			goTemplate: true,
			generator:  plugin(nil, nil),
			template:   ann("values", "{{ toJson .values }}", "input", "{{ toJson .generator.input.parameters }}"),
			answer:     `{"output": {"parameters": [{"values": {"theirs": "t"}}]}}`,
			want:       []map[string]any{withFinalizer(ann("values", `{"theirs":"t"}`, "input", "null"))},
		},
		{
			name:       "empty input parameters are {} to templates and not sent",
			goTemplate: true,
			generator:  plugin(map[string]any{}, nil),
			template:   ann("input", "{{ toJson .generator.input.parameters }}"),
			answer:     `{"output": {"parameters": [{}]}}`,
			want:       []map[string]any{withFinalizer(ann("input", "{}"))},
			wantReqs:   []string{`{"applicationSetName":"set","input":{}}` + "\n"},
		},
		{
			// Empty objects and lists vanish in plain mode, null is
			// "<nil>", booleans "true"/"false".
			name:      "plain mode: empty containers, null and booleans",
			generator: plugin(nil, nil),
			template:  ann("v", "{{e}}|{{l}}|{{z}}|{{m.k}}|{{list.1}}"),
			answer:    `{"output": {"parameters": [{"e": {}, "l": [], "z": null, "m": {"k": false}, "list": ["a", 1000000]}]}}`,
			want:      []map[string]any{withFinalizer(ann("v", "{{e}}|{{l}}|<nil>|false|1e+06"))},
		},
		{
			name:       "an answer without output.parameters is zero sets",
			goTemplate: true,
			generator:  plugin(nil, nil),
			template:   ann("v", "x"),
			answer:     `{"input": {"parameters": []}}`,
			want:       nil,
		},
		{
			name:      "an empty answer is zero sets",
			generator: plugin(nil, nil),
			template:  ann("v", "x"),
			answer:    ``,
			want:      nil,
		},
		{
			// The controller decodes into []map: a null set is an empty
			// one, holding only what the generator adds.
			name:       "a null parameter set renders with the generator's keys only",
			goTemplate: true,
			generator:  plugin(map[string]any{"k": "v"}, map[string]any{"x": "y"}),
			template:   ann("v", "{{ .values.x }} {{ toJson .generator.input.parameters }}"),
			answer:     `{"output": {"parameters": [null]}}`,
			want:       []map[string]any{withFinalizer(ann("v", `y {"k":"v"}`))},
		},
		{
			name:       "names of the answer match in any case; data after it is ignored",
			goTemplate: true,
			generator:  plugin(nil, nil),
			template:   ann("v", "{{ .a }}"),
			answer:     `{"Output": {"Parameters": [{"a": "b"}]}}` + "\n<!-- trailer -->",
			want:       []map[string]any{withFinalizer(ann("v", "b"))},
		},
		{
			name:      "an answer that is not JSON",
			generator: plugin(nil, nil),
			template:  ann("v", "x"),
			answer:    `nothing here`,
			wantErr:   "the answer is not JSON: invalid character 'o' in literal null (expecting 'u') (nothing here)",
		},
		{
			name:      "a status other than 2xx shows the message",
			generator: plugin(nil, nil),
			template:  ann("v", "x"),
			status:    http.StatusInternalServerError,
			answer:    `{"message": "backend down"}`,
			wantErr:   "answered 500 Internal Server Error: backend down",
		},
		{
			name: "token of another Secret",
			manifests: `apiVersion: v1
kind: ConfigMap
metadata: {name: p}
data: {baseUrl: "%s", token: "$plugin-secret:plugin.token"}
---
apiVersion: v1
kind: Secret
metadata: {name: plugin-secret}
stringData: {plugin.token: tok}
`,
			generator: plugin(nil, nil),
			template:  ann("v", "{{a}}"),
			answer:    `{"output": {"parameters": [{"a": "b"}]}}`,
			want:      []map[string]any{withFinalizer(ann("v", "b"))},
		},
		{
			name:      "the Secret is missing",
			manifests: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: p}\ndata: {baseUrl: \"%s\", token: \"$t\"}\n",
			generator: plugin(nil, nil),
			template:  ann("v", "x"),
			wantErr:   `refers to Secret "argocd-secret", which was not given`,
		},
		{
			name:      "the ConfigMap is missing",
			generator: map[string]any{"plugin": map[string]any{"configMapRef": map[string]any{"name": "other"}}},
			template:  ann("v", "x"),
			wantErr:   `no plugin ConfigMap named "other" was given; the ConfigMaps given are p`,
		},
		{
			name:      "no baseUrl",
			manifests: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: p}\ndata: {token: \"$t\"}\n",
			generator: plugin(nil, nil),
			template:  ann("v", "x"),
			wantErr:   `ConfigMap "p" (plugin.yaml:1) has no data.baseUrl`,
		},
		{
			name:      "no token",
			manifests: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: p}\ndata: {baseUrl: \"%s\"}\n",
			generator: plugin(nil, nil),
			template:  ann("v", "x"),
			wantErr:   `data.token must refer to a Secret key`,
		},
		{
			name:      "the plugin refuses the token",
			manifests: strings.Replace(parityManifests, "{t: tok}", "{t: wrong}", 1),
			generator: plugin(nil, nil),
			template:  ann("v", "x"),
			wantErr:   "answered 401 Unauthorized",
		},
	})
}

// TestParityTemplates: how strings of the template are rendered, in both
// modes (utils_test.go's cases, with inputs of our own).
func TestParityTemplates(t *testing.T) {
	const set = `{"output": {"parameters": [{"one": "two", "three": "four", "quoted": "\"hi\" there", "self": "{{one}}",
		"img": {"name": "nginx", "tag": "1.27"}, "count": 2, "hpa": {"on": true, "max": 7},
		"vols": [{"name": "cache"}, {"name": "data"}], "ids": {"key-a": "A", "key-b": "B\"q\\"}, "qc": "\"",
		"text": "a: 1", "lines": "- x\n- y", "bad": "not\n valid\n yaml",
		"tree": {"inner": {"flag": true, "n": 2, "s": "str"}}}]}}`
	plain := func(name, expr, want string) parityCase {
		return parityCase{name: "plain/" + name, generator: plugin(nil, nil), template: ann("v", expr), answer: set,
			want: []map[string]any{withFinalizer(ann("v", want))}}
	}
	gotmpl := func(name, expr, want string) parityCase {
		return parityCase{name: "gotemplate/" + name, goTemplate: true, generator: plugin(nil, nil), template: ann("v", expr), answer: set,
			want: []map[string]any{withFinalizer(ann("v", want))}}
	}
	gotmplErr := func(name string, options []string, expr, wantErr string) parityCase {
		return parityCase{name: "gotemplate/" + name, goTemplate: true, options: options, generator: plugin(nil, nil),
			template: ann("v", expr), answer: set, wantErr: wantErr}
	}
	runParity(t, []parityCase{
		plain("a tag", "{{one}}", "two"),
		plain("spaces in a tag", "{{ one }}", "two"),
		plain("braces outside a tag", "}} {{", "}} {{"),
		plain("an empty tag", "{{ }}", "{{ }}"),
		plain("a value holding a tag is not templated again", "{{self}}", "{{one}}"),
		plain("tags are case sensitive", "{{ONE}}", "{{ONE}}"),
		plain("twice on a line", "{{one}}{{one}}", "twotwo"),
		plain("two tags", "{{one}}-{{three}}", "two-four"),
		plain("quotes in a value", "{{quoted}} {{three}}", `"hi" there four`),
		plain("a tag across lines is not one", "{{one\n}}", "{{one\n}}"),
		{
			name: "plain/an unclosed tag after a closed one", generator: plugin(nil, nil), answer: set,
			template: ann("v", "{{one}} {{three"), wantErr: `a {{ has no closing }}`,
		},
		gotmpl("a field", "{{ .one }}", "two"),
		gotmpl("a value holding a tag is not templated again", "{{ .self }}", "{{one}}"),
		gotmpl("twice", "{{.one}}{{.one}}", "twotwo"),
		gotmpl("quotes", "{{.quoted}} {{.three}}", `"hi" there four`),
		gotmpl("a nested field", "{{ .img.name }}:{{ .img.tag }}", "nginx:1.27"),
		gotmpl("if", "{{ if .hpa.on }}{{ .hpa.max }}{{ else }}{{ .count }}{{ end }}", "7"),
		gotmpl("range", "{{ range .vols }}[{{ .name }}]{{ end }}", "[cache][data]"),
		gotmpl("index with dashes and escapes", `{{ index .ids "key-a" }}, {{ index .ids "key-b" }}`, `A, B"q\`),
		gotmpl("a quote character", "{{ .qc }}", `"`),
		gotmpl("a missing key prints <no value>", "-> {{ .nope }} <-", "-> <no value> <-"),
		// sigs.k8s.io/yaml, as the controller's: YAML 1.1, so the key "n"
		// is quoted and the item y is true.
		gotmpl("toYaml", "{{ toYaml .tree | indent 2 }}", "  inner:\n    flag: true\n    \"n\": 2\n    s: str"),
		gotmpl("fromYaml", `{{ get (fromYaml .text) "a" }}`, "1"),
		gotmpl("fromYamlArray", "{{ fromYamlArray .lines | last }}", "true"),
		gotmpl("normalize", `{{ normalize "Team_A/Prod" }}`, "team-a-prod"),
		gotmpl("slugify, smart truncation off", `{{ slugify 20 false "feature/Some_Long+Branch_name" }}`, "feature-some-long-br"),
		gotmpl("slugify, smart truncation on", `{{ slugify 20 true "feature/Some_Long+Branch_name" }}`, "feature-some-long"),
		gotmpl("slugify, one word longer than the limit", `{{ slugify 10 true "ab/cdefghijklmnopqrst" }}`, "ab"),
		gotmplErr("missingkey=error", []string{"missingkey=error"}, "-> {{ .nope }} <-",
			`template: base:1:6: executing "base" at <.nope>: map has no entry for key "nope"`),
		gotmplErr("an undefined function", nil, "{{ nosuchfunc }}", `template: base:1: function "nosuchfunc" not defined`),
		gotmplErr("a field of a string", nil, "{{ .one.two }}",
			`template: base:1:7: executing "base" at <.one.two>: can't evaluate field two in type interface {}`),
		gotmplErr("fromYaml of a non-map", nil, `{{ get (fromYaml .bad) "a" }}`,
			"error calling fromYaml: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal string into Go value of type map[string]interface {}"),
		gotmplErr("fromYamlArray of a non-list", nil, "{{ fromYamlArray .bad | last }}",
			"error calling fromYamlArray: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal string into Go value of type []interface {}"),
		gotmplErr("env is removed", nil, `{{ env "HOME" }}`, `function "env" not defined`),
		gotmplErr("expandenv is removed", nil, `{{ expandenv "$HOME" }}`, `function "expandenv" not defined`),
		gotmplErr("getHostByName is removed", nil, `{{ getHostByName "localhost" }}`, `function "getHostByName" not defined`),
		{
			name: "plain/keys are templated", generator: plugin(nil, nil), answer: set,
			template: ann("key-{{one}}", "value-{{three}}"),
			want:     []map[string]any{withFinalizer(ann("key-two", "value-four"))},
		},
		{
			name: "gotemplate/keys are templated", goTemplate: true, generator: plugin(nil, nil), answer: set,
			template: ann("key-{{ .one }}", "value-{{ .three }}"),
			want:     []map[string]any{withFinalizer(ann("key-two", "value-four"))},
		},
	})
}

// TestParityFinalizers: TestRenderTemplateParamsFinalizers' rules.
func TestParityFinalizers(t *testing.T) {
	one := `{"output": {"parameters": [{"a": "b"}]}}`
	tests := []struct {
		name       string
		finalizers any // the template's; nil: not set
		syncPolicy map[string]any
		want       any // nil: none
	}{
		{name: "a finalizer of the template is kept", finalizers: []any{"example.com/keep"}, want: []any{"example.com/keep"}},
		{name: "the background finalizer is kept", finalizers: []any{"resources-finalizer.argocd.argoproj.io/background"}, want: []any{"resources-finalizer.argocd.argoproj.io/background"}},
		{name: "none: the default", want: finalizer},
		{name: "the default given is kept once", finalizers: finalizer, want: finalizer},
		{name: "an empty list: the default", finalizers: []any{}, want: finalizer},
		{name: "a sync policy without preserve: the default", syncPolicy: map[string]any{"applicationsSync": "create-only"}, want: finalizer},
		{name: "preserveResourcesOnDeletion: none", syncPolicy: map[string]any{"preserveResourcesOnDeletion": true}},
		{name: "preserveResourcesOnDeletion keeps the template's", finalizers: []any{"resources-finalizer.argocd.argoproj.io/background"},
			syncPolicy: map[string]any{"preserveResourcesOnDeletion": true}, want: []any{"resources-finalizer.argocd.argoproj.io/background"}},
	}
	var cases []parityCase
	for _, tc := range tests {
		want := map[string]any{"annotations": ann("v", "b")}
		if tc.want != nil {
			want["finalizers"] = tc.want
		}
		c := parityCase{name: tc.name, generator: plugin(nil, nil), template: ann("v", "{{a}}"), syncPolicy: tc.syncPolicy,
			answer: one, want: []map[string]any{want}}
		if tc.finalizers != nil {
			c.extra = map[string]any{"finalizers": tc.finalizers}
		}
		cases = append(cases, c)
	}
	runParity(t, cases)
}

// TestParitySelectors: post-selectors over a plugin's sets, as
// generator_spec_processor_test.go's (values included).
func TestParitySelectors(t *testing.T) {
	answer := `{"output": {"parameters": [
		{"name": "staging", "url": "https://staging.example.com", "labels": {"env": "staging", "example.com/tier": "2"}, "zones": ["a"]},
		{"name": "prod", "url": "https://prod.example.com", "labels": {"env": "prod", "example.com/tier": "1"}, "zones": ["b"]}]}}`
	sel := func(name string, goTemplate bool, values map[string]any, selector map[string]any, want ...string) parityCase {
		g := plugin(nil, values)
		g["selector"] = selector
		tmpl := ann("n", "{{name}}")
		if goTemplate {
			tmpl = ann("n", "{{ .name }}")
		}
		var apps []map[string]any
		for _, w := range want {
			apps = append(apps, withFinalizer(ann("n", w)))
		}
		return parityCase{name: name, goTemplate: goTemplate, generator: g, template: tmpl, answer: answer, want: apps,
			extra: map[string]any{"name": map[bool]string{false: "app-{{name}}", true: "app-{{ .name }}"}[goTemplate]}}
	}
	runParity(t, []parityCase{
		sel("an empty selector matches all", true, nil, map[string]any{}, "staging", "prod"),
		sel("a URL as a label value", false, nil, map[string]any{"matchLabels": map[string]any{"url": "https://prod.example.com"}}, "prod"),
		sel("a nested key with a slash", true, nil, map[string]any{"matchLabels": map[string]any{"labels.example.com/tier": "2"}}, "staging"),
		sel("NotIn", true, nil, map[string]any{"matchExpressions": []any{map[string]any{"key": "labels.env", "operator": "NotIn", "values": []any{"prod"}}}}, "staging"),
		sel("a list element", true, nil, map[string]any{"matchLabels": map[string]any{"zones.0": "b"}}, "prod"),
		sel("values, plain mode", false, map[string]any{"stage": "{{labels.env}}"}, map[string]any{"matchLabels": map[string]any{"values.stage": "prod"}}, "prod"),
		sel("values, goTemplate mode", true, map[string]any{"stage": "{{ .labels.env }}"}, map[string]any{"matchLabels": map[string]any{"values.stage": "staging"}}, "staging"),
		sel("no match", false, nil, map[string]any{"matchLabels": map[string]any{"name": "dev"}}),
	})
}

// TestParityMatrixPluginValues: a plugin as the second child of a matrix
// (value_interpolation_test.go, utils_test.go's
// TestRenderGeneratorParams_ValuesInterpolation): its input is templated
// with each set of the first child; a value naming only the first child's
// keys is resolved with them, one naming the plugin's own keys is left for
// the plugin; a value that does not parse, or whose function fails, is an
// error.
func TestParityMatrixPluginValues(t *testing.T) {
	answer := `{"output": {"parameters": [{"digest": "sha256:1"}]}}`
	matrixOf := func(input string, values map[string]any) map[string]any {
		return map[string]any{"matrix": map[string]any{"generators": []any{
			map[string]any{"list": map[string]any{"elements": []any{map[string]any{"branch": "main"}}}},
			plugin(map[string]any{"branch": input}, values),
		}}}
	}
	matrix := func(values map[string]any) map[string]any { return matrixOf("{{ .branch }}", values) }
	runParity(t, []parityCase{
		{
			name: "the first child's keys and the plugin's", goTemplate: true,
			generator: matrix(map[string]any{"link": "https://git.example.com/tree/{{ .branch }}", "image": "img@{{ .digest }}"}),
			template:  ann("link", "{{ .values.link }}", "image", "{{ .values.image }}", "branch", "{{ .branch }}"),
			answer:    answer,
			want:      []map[string]any{withFinalizer(ann("link", "https://git.example.com/tree/main", "image", "img@sha256:1", "branch", "main"))},
			wantReqs:  []string{`{"applicationSetName":"set","input":{"parameters":{"branch":"main"}}}` + "\n"},
		},
		{
			name: "the same under missingkey=error", goTemplate: true, options: []string{"missingkey=error"},
			generator: matrix(map[string]any{"link": "{{ .branch }}", "image": "{{ .digest }}"}),
			template:  ann("link", "{{ .values.link }}", "image", "{{ .values.image }}"),
			answer:    answer,
			want:      []map[string]any{withFinalizer(ann("link", "main", "image", "sha256:1"))},
		},
		{
			name: "a value that does not parse", goTemplate: true,
			generator: matrix(map[string]any{"bad": "{{ .branch "}),
			template:  ann("v", "x"),
			answer:    answer,
			wantErr:   "values.bad: parsing go template",
		},
		{
			name: "a value whose function fails", goTemplate: true,
			generator: matrix(map[string]any{"bad": `{{ mustFromJson "{" }}`}),
			template:  ann("v", "x"),
			answer:    answer,
			wantErr:   "error calling mustFromJson",
		},
		{
			name:      "plain mode",
			generator: matrixOf("{{branch}}", map[string]any{"link": "tree/{{branch}}", "image": "img@{{digest}}"}),
			template:  ann("link", "{{values.link}}", "image", "{{values.image}}"),
			answer:    answer,
			want:      []map[string]any{withFinalizer(ann("link", "tree/main", "image", "img@sha256:1"))},
		},
	})
}

// TestParityMergeAndMatrixOfPlugins: plugins as children of merge and
// matrix (merge_test.go, matrix_test.go).
func TestParityMergeAndMatrixOfPlugins(t *testing.T) {
	answers := map[string]string{
		`"src":"base"`:     `{"output": {"parameters": [{"app": "a", "replicas": 1, "cfg": {"x": "1", "y": "2"}}, {"app": "b", "replicas": 1}]}}`,
		`"src":"override"`: `{"output": {"parameters": [{"app": "a", "replicas": 3, "cfg": {"y": "5"}}, {"app": "z", "replicas": 9}]}}`,
		`"src":"dup"`:      `{"output": {"parameters": [{"app": "a"}, {"app": "a"}]}}`,
		`"src":"nokey"`:    `{"output": {"parameters": [{"other": "x", "replicas": 7}]}}`,
	}
	merge := func(keys []any, srcs ...string) map[string]any {
		var gens []any
		for _, s := range srcs {
			gens = append(gens, plugin(map[string]any{"src": s}, nil))
		}
		return map[string]any{"merge": map[string]any{"mergeKeys": keys, "generators": gens}}
	}
	named := func(goTemplate bool) map[string]any {
		if goTemplate {
			return map[string]any{"name": "app-{{ .app }}"}
		}
		return map[string]any{"name": "app-{{app}}"}
	}
	runParity(t, []parityCase{
		{
			// The base's sets in its order; a set of a later child with the
			// same key overrides, deep-merged; sets matching none dropped.
			// The sets of one plugin call share its input parameters (one
			// map in the controller), and the deep merge writes the
			// override's into that map: every set of the base shows them.
			name: "merge, goTemplate", goTemplate: true,
			generator: merge([]any{"app"}, "base", "override"),
			extra:     named(true),
			template:  ann("r", "{{ .replicas }}", "cfg", "{{ toJson .cfg }}", "src", "{{ toJson .generator.input.parameters }}"),
			answerFor: answers,
			want: []map[string]any{
				withFinalizer(ann("r", "3", "cfg", `{"x":"1","y":"5"}`, "src", `{"src":"override"}`)),
				withFinalizer(ann("r", "1", "cfg", "null", "src", `{"src":"override"}`)),
			},
		},
		{
			// Plain mode: flattened keys copied over the base's.
			name:      "merge, plain mode",
			generator: merge([]any{"app"}, "base", "override"),
			extra:     named(false),
			template:  ann("r", "{{replicas}}", "x", "{{cfg.x}}", "y", "{{cfg.y}}"),
			answerFor: answers,
			want: []map[string]any{
				withFinalizer(ann("r", "3", "x", "1", "y", "5")),
				withFinalizer(ann("r", "1", "x", "{{cfg.x}}", "y", "{{cfg.y}}")),
			},
		},
		{
			name: "merge keys repeated count once", goTemplate: true,
			generator: merge([]any{"app", "app"}, "base", "override"),
			extra:     named(true),
			template:  ann("r", "{{ .replicas }}"),
			answerFor: answers,
			want:      []map[string]any{withFinalizer(ann("r", "3")), withFinalizer(ann("r", "1"))},
		},
		{
			// A set without the key has the key null: it matches no base
			// set that has one.
			name: "a set without the merge key overrides nothing", goTemplate: true,
			generator: merge([]any{"app"}, "base", "nokey"),
			extra:     named(true),
			template:  ann("r", "{{ .replicas }}"),
			answerFor: answers,
			want:      []map[string]any{withFinalizer(ann("r", "1")), withFinalizer(ann("r", "1"))},
		},
		{
			name: "sets of a child must be unique by the merge keys", goTemplate: true,
			generator: merge([]any{"app"}, "dup", "base"),
			template:  ann("r", "x"),
			answerFor: answers,
			wantErr:   `{"app":"a"}`,
		},
		{
			// A matrix's second child is templated with each set of the
			// first, here a plugin's; goTemplate combines with the first
			// child winning.
			name: "matrix, plugin first", goTemplate: true,
			generator: map[string]any{"matrix": map[string]any{"generators": []any{
				plugin(map[string]any{"src": "base"}, map[string]any{"v": "from-{{ .app }}"}),
				map[string]any{"list": map[string]any{"elements": []any{
					map[string]any{"env": "{{ .app }}-dev", "replicas": 0},
					map[string]any{"env": "{{ .app }}-prod", "replicas": 0},
				}}},
			}}},
			extra:     map[string]any{"name": "{{ .env }}"},
			template:  ann("r", "{{ .replicas }}", "v", "{{ .values.v }}"),
			answerFor: answers,
			want: []map[string]any{
				withFinalizer(ann("r", "1", "v", "from-a")), withFinalizer(ann("r", "1", "v", "from-a")),
				withFinalizer(ann("r", "1", "v", "from-b")), withFinalizer(ann("r", "1", "v", "from-b")),
			},
			wantReqs: []string{`{"applicationSetName":"set","input":{"parameters":{"src":"base"}}}` + "\n"},
		},
		{
			// Plain mode: a key both children set to different values.
			name: "matrix, plain mode conflict",
			generator: map[string]any{"matrix": map[string]any{"generators": []any{
				plugin(map[string]any{"src": "base"}, nil),
				map[string]any{"list": map[string]any{"elements": []any{map[string]any{"replicas": "2"}}}},
			}}},
			template:  ann("r", "{{replicas}}"),
			answerFor: answers,
			wantErr:   `both children set the parameter "replicas", to "1" and "2"`,
		},
	})
}
