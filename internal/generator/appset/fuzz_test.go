package appset_test

import (
	"context"
	"testing"
	"time"

	"github.com/strata-dev/strata/internal/generator/appset"
	"github.com/strata-dev/strata/internal/golden"
)

// seedAppSets adds the appset.yaml of every golden case to f.
func seedAppSets(f *testing.F) {
	for _, c := range golden.Cases(f, "testdata/render/*.txtar") {
		if data, ok := c.Section("appset.yaml"); ok {
			f.Add([]byte(data))
		}
	}
}

// FuzzParse decodes arbitrary ApplicationSets and renders those without
// plugins: neither may panic, and limits hold.
func FuzzParse(f *testing.F) {
	seedAppSets(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		all, allErr := appset.ParseAll(data, "fuzz.yaml")
		a, err := appset.Parse(data, "fuzz.yaml")
		if err == nil && (allErr != nil || len(all) != 1 || all[0].Name != a.Name) {
			t.Fatalf("Parse accepts one ApplicationSet %q; ParseAll = %d sets, %v", a.Name, len(all), allErr)
		}
		if err != nil {
			return
		}
		r := appset.Renderer{Limits: appset.Limits{MaxParamSets: 200, MaxStringBytes: 1 << 14, MaxOutputBytes: 1 << 20, MaxTemplateOps: 1 << 16, TemplateTime: time.Second}}
		res, err := r.Render(context.Background(), a)
		if err == nil && len(res.Applications) > 200 {
			t.Fatalf("%d Applications, beyond the limit", len(res.Applications))
		}
	})
}

// FuzzTemplate renders an arbitrary template string, in both modes, with
// arbitrary parameter values.
func FuzzTemplate(f *testing.F) {
	for _, s := range []string{"{{cluster}}", "{{ .cluster | upper }}", "{{ slugify 3 false .cluster }}", "{{ tpl .cluster . }}", "{{", "{{ range until 5 }}x{{ end }}", "{{ toYaml . }}", "{{ fromYaml .cluster }}"} {
		f.Add(s, "value", true)
		f.Add(s, "{{ .cluster }}", false)
	}
	f.Fuzz(func(t *testing.T, tmpl, value string, goTemplate bool) {
		doc := "apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: f}\nspec:\n  goTemplate: " +
			map[bool]string{true: "true", false: "false"}[goTemplate] +
			"\n  generators:\n  - list:\n      elements:\n      - {cluster: " + quote(value) + "}\n" +
			"  template:\n    metadata: {name: app}\n    spec:\n      project: default\n      info: [{name: x, value: " + quote(tmpl) + "}]\n"
		a, err := appset.Parse([]byte(doc), "fuzz.yaml")
		if err != nil {
			return
		}
		r := appset.Renderer{Limits: appset.Limits{MaxStringBytes: 1 << 14, MaxOutputBytes: 1 << 20, MaxTemplateOps: 1 << 16, TemplateTime: time.Second}}
		_, _ = r.Render(context.Background(), a)
	})
}

// quote writes s as a YAML double-quoted string.
func quote(s string) string {
	out := []byte{'"'}
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			out = append(out, '\\', byte(r))
		case r < 0x20 || r == 0x7f:
			out = append(out, []byte("\\x")...)
			out = append(out, "0123456789abcdef"[r>>4], "0123456789abcdef"[r&15])
		default:
			out = append(out, string(r)...)
		}
	}
	return string(append(out, '"'))
}
