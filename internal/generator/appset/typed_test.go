package appset

import (
	"bytes"
	"fmt"
	"testing"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestPluginParametersPrintAsTheControllers: a plugin's input parameters,
// as strata holds them, print, encode and compare in templates exactly as
// the controller's PluginParameters (apiextensions JSON values) do.
func TestPluginParametersPrintAsTheControllers(t *testing.T) {
	input := map[string]any{"env": "dev", "size": int64(3), "ratio": 0.5, "on": true, "tags": []any{"a", "b"}, "m": map[string]any{"k": "<v>"}, "nil": nil}
	ours, err := newPluginParameters(input)
	if err != nil {
		t.Fatal(err)
	}
	theirs := map[string]apiextensionsv1.JSON{}
	for k, v := range ours {
		theirs[k] = apiextensionsv1.JSON{Raw: v.Raw}
	}
	oursSet := map[string]any{"generator": map[string]any{"input": map[string]pluginParameters{"parameters": ours}}}
	theirsSet := map[string]any{"generator": map[string]any{"input": map[string]map[string]apiextensionsv1.JSON{"parameters": theirs}}}
	for _, tmpl := range []string{
		`{{ .generator.input.parameters.env }}`,
		`{{ .generator.input.parameters }}`,
		`{{ .generator.input }}`,
		`{{ .generator }}`,
		`{{ toJson .generator.input.parameters }}`,
		`{{ toJson .generator.input.parameters.m }}`,
		`{{ .generator.input.parameters.size | quote }}`,
		`{{ printf "%v|%s" .generator.input.parameters.on .generator.input.parameters.tags }}`,
		`{{ index .generator.input.parameters "ratio" }}`,
		`{{ eq .generator.input.parameters.env "dev" }}`,
	} {
		got, gerr := execWith(tmpl, oursSet)
		want, werr := execWith(tmpl, theirsSet)
		if got != want || (gerr == nil) != (werr == nil) {
			t.Errorf("%s: strata %q, %v; controller %q, %v", tmpl, got, gerr, want, werr)
		}
	}
	if got, want := fmt.Sprintf("%v", oursSet), fmt.Sprintf("%v", theirsSet); got != want {
		t.Errorf("%%v of the set: strata %s, controller %s", got, want)
	}
}

func execWith(tmpl string, data any) (string, error) {
	t, err := template.New("").Funcs(sprig.TxtFuncMap()).Parse(tmpl)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	err = t.Execute(&b, data)
	return b.String(), err
}
