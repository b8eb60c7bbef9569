package layers

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"
	corev1 "k8s.io/api/core/v1"

	"github.com/strata-dev/strata/internal/layers/v1alpha1"
	"github.com/strata-dev/strata/internal/values"
)

// seeds returns the files of the golden cases, as fuzz seeds.
func seeds(f *testing.F) [][]byte {
	files, _ := filepath.Glob("testdata/render/*.txtar")
	var out [][]byte
	for _, file := range files {
		ar, err := txtar.ParseFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, fl := range ar.Files {
			out = append(out, fl.Data)
		}
	}
	return out
}

// FuzzReadObjects reads any stream as Kubernetes objects and decodes every
// ConfigMap, Secret, App and Catalog found: errors are fine, panics are not,
// and positions stay within the input.
func FuzzReadObjects(f *testing.F) {
	for _, s := range seeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := readObjects(data, "f.yaml", 1<<20)
		if err != nil {
			return
		}
		lines := strings.Count(string(data), "\n") + 1
		for _, o := range objs {
			if l := o.loc.Line(nil); l < 0 || l > lines {
				t.Errorf("%s at line %d of a %d-line input", o.id(), l, lines)
			}
			var err error
			switch o.kind {
			case KindConfigMap:
				_, err = o.configMap()
			case KindSecret:
				_, err = o.secret()
			case KindApp:
				var a *v1alpha1.App
				if a, err = o.app(); err == nil {
					_ = ValidateApp(a, o.loc)
				}
			case KindCatalog:
				_, err = o.catalog()
			}
			_ = err
		}
	})
}

// FuzzReadApps decodes Apps strictly and plans them.
func FuzzReadApps(f *testing.F) {
	for _, s := range seeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		apps, err := ReadApps(data, "app.yaml")
		if err != nil {
			return
		}
		for _, a := range apps {
			p, err := NewPlan(a.App, a.Location, nil, nil)
			if err != nil {
				if !errors.Is(err, ErrInvalid) {
					t.Errorf("NewPlan error %v does not wrap ErrInvalid", err)
				}
				continue
			}
			for _, r := range append(p.ConfigMaps, p.Secrets...) {
				if r.Priority < 1 || r.Priority > PriorityMax {
					t.Errorf("planned %s with priority %d", r, r.Priority)
				}
			}
		}
	})
}

// oneObject serves one ConfigMap and one Secret, both named "x".
type oneObject struct {
	cm  *corev1.ConfigMap
	sec *corev1.Secret
}

func (s oneObject) ConfigMap(context.Context, string, string) (*corev1.ConfigMap, error) {
	return s.cm.DeepCopy(), nil
}

func (s oneObject) Secret(context.Context, string, string) (*corev1.Secret, error) {
	return s.sec.DeepCopy(), nil
}

func (s oneObject) Catalog(context.Context, string, string) (*v1alpha1.Catalog, error) {
	return nil, &notFoundError{msg: "no catalog"}
}

// FuzzValuesKey renders an App from a ConfigMap and a Secret whose data
// keys and values are fuzzed: no panics, and an error about the Secret
// never quotes its content.
func FuzzValuesKey(f *testing.F) {
	f.Add("values", "a: 1\n", "secrets", "b: {c: [1, 2]}\n")
	f.Add("values", "a: [", "values", "password: !!bool hunter2secret")
	f.Add("values.yaml", "", "values", "- not a map")
	f.Add("values", "a: &x [*x]", "secrets", "\xff")
	for _, s := range seeds(f) {
		f.Add("values", string(s), "secrets", string(s))
	}
	f.Fuzz(func(t *testing.T, cmKey, cmValues, secKey, secValues string) {
		src := oneObject{
			cm:  &corev1.ConfigMap{Data: map[string]string{cmKey: cmValues}},
			sec: &corev1.Secret{Data: map[string][]byte{secKey: []byte(secValues)}},
		}
		app := &v1alpha1.App{Spec: v1alpha1.AppSpec{
			Config:     v1alpha1.AppConfig{ConfigMap: v1alpha1.ObjectRef{Name: "x", Namespace: "ns"}},
			UserConfig: v1alpha1.AppConfig{Secret: v1alpha1.ObjectRef{Name: "x", Namespace: "ns"}},
		}}
		r := Renderer{Source: src, SkipCatalog: true, Provenance: true, Namespaces: Namespaces{Any: true}}
		res, err := r.Render(context.Background(), app, nil)
		if err != nil {
			if len(secValues) >= 12 && !strings.Contains(cmValues, secValues) && strings.Contains(err.Error(), secValues) {
				t.Errorf("error quotes the Secret's values: %v", err)
			}
			return
		}
		if _, err := res.Explain(nil, values.ExplainOptions{}); err != nil {
			t.Errorf("Explain: %v", err)
		}
		if _, _, err := res.Redacted(); err != nil {
			t.Errorf("Redacted: %v", err)
		}
	})
}
