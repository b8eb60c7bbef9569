package release_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/golden"
	"github.com/strata-dev/strata/internal/operator/module"
	"github.com/strata-dev/strata/internal/operator/release"
)

// A render case holds modules/... (one module), values.yaml (what the
// chart gets: {global, <key>}) and the expected output: CRDs and
// manifests, or the error.
func TestRenderGolden(t *testing.T) {
	golden.Run(t, "testdata/render/*.txtar", func(t *testing.T, c golden.Case) {
		dir := t.TempDir()
		c.WriteFiles(t, dir, "want", "values.yaml")
		set, err := module.Discover([]string{filepath.Join(dir, "modules")}, "", module.Options{})
		if err != nil {
			t.Fatal(err)
		}
		text, _ := c.Section("values.yaml")
		vals, err := document.Parse([]byte(text), "values.yaml")
		if err != nil {
			t.Fatal(err)
		}
		render := func(codecs document.Codecs) string {
			r := &release.Renderer{Namespace: "ops", Codecs: codecs}
			out, err := r.Render(context.Background(), set.Modules[0], vals)
			if err != nil {
				return "error: " + strings.ReplaceAll(err.Error(), dir+"/", "") + "\n"
			}
			got := fmt.Sprintf("# release %s in %s, no chart: %v\n# crds\n%s# manifests\n%s# objects\n", out.Name, out.Namespace, out.NoChart, out.CRDs, out.Manifests)
			for _, o := range out.Objects {
				got += fmt.Sprintf("%s %s %s (%s, hook %v)\n", o.APIVersion, o.Kind, o.Name, o.Source, o.Hook)
			}
			return got
		}
		got := render(document.FastCodecs)
		// The reference switch changes nothing but the speed.
		if ref := render(document.ReferenceCodecs); ref != got {
			t.Errorf("with document.ReferenceCodecs:\n%s\nwith the fast codecs:\n%s", ref, got)
		}
		golden.Check(t, c.Path, "want", got)
	})
}

func writeModule(t *testing.T, files map[string]string) (*module.Module, string) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, "modules", filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set, err := module.Discover([]string{filepath.Join(dir, "modules")}, "", module.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return set.Modules[0], dir
}

func TestRenderChecksum(t *testing.T) {
	m, _ := writeModule(t, map[string]string{
		"001-app/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  x: {{ .Values.app.x | quote }}\n",
	})
	r := &release.Renderer{Namespace: "ops"}
	render := func(x any, extra string) *release.Rendered {
		t.Helper()
		out, err := r.Render(context.Background(), m, map[string]any{"global": map[string]any{"e": extra}, "app": map[string]any{"x": x}})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	a, b, c, d := render(1, ""), render(1, ""), render(2, ""), render(1, "unused")
	if a.Checksum != b.Checksum || a.ValuesChecksum != b.ValuesChecksum {
		t.Error("same values rendered with different checksums")
	}
	if a.Checksum == c.Checksum {
		t.Error("different manifests have the same checksum")
	}
	// Values that do not change the manifests do not change the release.
	if a.Checksum != d.Checksum || a.ValuesChecksum == d.ValuesChecksum {
		t.Error("an unused value changed the manifests' checksum, or not the values' checksum")
	}
	cur := a.Release(release.StatusDeployed, "")
	for _, tc := range []struct {
		name string
		cur  *release.Release
		next *release.Rendered
		want bool
	}{
		{"not installed", nil, a, true},
		{"unchanged", cur, d, false},
		{"changed", cur, c, true},
		{"failed", &release.Release{Status: release.StatusFailed, Checksum: a.Checksum}, a, true},
	} {
		if got, why := release.NeedsUpgrade(tc.cur, tc.next); got != tc.want {
			t.Errorf("%s: NeedsUpgrade = %v (%s), want %v", tc.name, got, why, tc.want)
		}
	}
}

func TestRenderTimeout(t *testing.T) {
	m, _ := writeModule(t, map[string]string{
		"001-app/templates/cm.yaml": "{{ range until 10000 }}{{ range until 10000 }}{{ end }}{{ end }}\n",
	})
	r := &release.Renderer{Namespace: "ops", Timeout: 100 * time.Millisecond}
	_, err := r.Render(context.Background(), m, map[string]any{"global": map[string]any{}, "app": map[string]any{}})
	var re *release.RenderError
	if !errors.As(err, &re) || re.Module != "app" || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Render = %v, want a RenderError for app matching DeadlineExceeded", err)
	}
}

func TestParseLabels(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want map[string]string
		err  bool
	}{
		{"heritage=addon-operator", map[string]string{"heritage": "addon-operator"}, false},
		{"heritage=my-app, scope=extra", map[string]string{"heritage": "my-app", "scope": "extra"}, false},
		{"", map[string]string{}, false},
		{"a=", map[string]string{"a": ""}, false},
		{"novalue", nil, true},
		{"=x", nil, true},
	} {
		got, err := release.ParseLabels(tc.in)
		if (err != nil) != tc.err || !tc.err && !cmp.Equal(got, tc.want) {
			t.Errorf("ParseLabels(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func FuzzParseLabels(f *testing.F) {
	for _, s := range []string{"heritage=addon-operator", "a=b,c=d", "", "x", "=,=,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := release.ParseLabels(s)
		if err != nil {
			return
		}
		for k := range got {
			if k == "" || strings.ContainsAny(k, ",=") {
				t.Errorf("ParseLabels(%q) has key %q", s, k)
			}
		}
	})
}

func TestLocal(t *testing.T) {
	ctx := context.Background()
	l := &release.Local{Dir: filepath.Join(t.TempDir(), "releases"), MaxHistory: 3}
	if _, err := l.Get(ctx, "app"); !errors.Is(err, release.ErrNotFound) {
		t.Fatalf("Get of a missing release = %v, want ErrNotFound", err)
	}
	if names, err := l.List(ctx); err != nil || len(names) != 0 {
		t.Fatalf("List of an empty store = %v, %v", names, err)
	}
	for i := 1; i <= 5; i++ {
		r := &release.Release{Name: "app", Namespace: "ops", Status: release.StatusDeployed,
			Checksum: fmt.Sprint("c", i), ValuesChecksum: "v", Manifests: []byte(fmt.Sprintf("rev: %d\n", i)), CRDs: []byte("crd\n")}
		if err := l.Put(ctx, r); err != nil {
			t.Fatal(err)
		}
		if r.Revision != i {
			t.Fatalf("Put set revision %d, want %d", r.Revision, i)
		}
	}
	got, err := l.Get(ctx, "app")
	if err != nil {
		t.Fatal(err)
	}
	if got.Revision != 5 || got.Checksum != "c5" || string(got.Manifests) != "rev: 5\n" || string(got.CRDs) != "crd\n" || got.Status != release.StatusDeployed {
		t.Errorf("Get = %+v", got)
	}
	hist, err := l.History(ctx, "app")
	if err != nil {
		t.Fatal(err)
	}
	var revs []string
	for _, h := range hist {
		revs = append(revs, fmt.Sprint(h.Revision, h.Status))
	}
	if want := []string{"3superseded", "4superseded", "5deployed"}; !cmp.Equal(revs, want) {
		t.Errorf("history = %v, want %v", revs, want)
	}
	kept, _ := filepath.Glob(filepath.Join(l.Dir, "app", release.HistoryPrefix+"*.yaml"))
	if len(kept) != 3 {
		t.Errorf("%d revision files kept, want 3: %v", len(kept), kept)
	}
	if data, _ := os.ReadFile(filepath.Join(l.Dir, "app", release.HistoryPrefix+"4.yaml")); string(data) != "rev: 4\n" {
		t.Errorf("revision-4.yaml = %q, want the manifests of revision 4", data)
	}
	os.Remove(filepath.Join(l.Dir, "app", release.ManifestsFile))
	if _, err := l.Get(ctx, "app"); !errors.Is(err, release.ErrNotFound) {
		t.Errorf("Get with manifests.yaml removed = %v, want ErrNotFound", err)
	}
	if err := l.Put(ctx, &release.Release{Name: "other", Status: release.StatusFailed}); err != nil {
		t.Fatal(err)
	}
	if names, _ := l.List(ctx); !cmp.Equal(names, []string{"app", "other"}) {
		t.Errorf("List = %v", names)
	}
	if err := l.Delete(ctx, "app"); err != nil {
		t.Fatal(err)
	}
	if err := l.Delete(ctx, "app"); err != nil {
		t.Errorf("second Delete = %v, want nil", err)
	}
	if names, _ := l.List(ctx); !cmp.Equal(names, []string{"other"}) {
		t.Errorf("List after Delete = %v", names)
	}
	for _, bad := range []string{"../x", "a/b", "UPPER", ""} {
		if err := l.Put(ctx, &release.Release{Name: bad}); err == nil {
			t.Errorf("Put of release %q succeeded", bad)
		}
	}
}

// Charts are loaded once: an edit of the chart is seen after Forget.
func TestRenderLoadsChartOnce(t *testing.T) {
	m, _ := writeModule(t, map[string]string{
		"001-app/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: one\n",
	})
	r := &release.Renderer{Namespace: "ops"}
	vals := map[string]any{"global": map[string]any{}, "app": map[string]any{}}
	first, err := r.Render(context.Background(), m, vals)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(m.Path, "templates/cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := r.Render(context.Background(), m, vals)
	if err != nil {
		t.Fatal(err)
	}
	if again.Checksum != first.Checksum {
		t.Error("the chart was read again without Forget")
	}
	r.Forget(m.Path)
	after, err := r.Render(context.Background(), m, vals)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(after.Manifests), "name: two") {
		t.Errorf("after Forget, manifests = %s", after.Manifests)
	}
}

// Modules of the same order render in parallel.
func TestRenderConcurrent(t *testing.T) {
	dir := t.TempDir()
	for i := range 6 {
		p := filepath.Join(dir, "modules", fmt.Sprintf("001-m%d", i), "templates", "cm.yaml")
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  v: {{ .Values.m%d.v | quote }}\n", i)), 0o644)
	}
	set, err := module.Discover([]string{filepath.Join(dir, "modules")}, "", module.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := &release.Renderer{Namespace: "ops"}
	errs := make(chan error, 6*5)
	for _, m := range set.Modules {
		for j := range 5 {
			go func() {
				out, err := r.Render(context.Background(), m, map[string]any{"global": map[string]any{}, m.Key: map[string]any{"v": j}})
				if err == nil && !strings.Contains(string(out.Manifests), fmt.Sprintf("v: %q", fmt.Sprint(j))) {
					err = fmt.Errorf("%s rendered %s", m.Name, out.Manifests)
				}
				errs <- err
			}()
		}
	}
	for range 6 * 5 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// A chart that fails to load is read again at the next render.
func TestRenderRetriesFailedLoad(t *testing.T) {
	m, _ := writeModule(t, map[string]string{
		"001-app/Chart.yaml":        "apiVersion: v2\nname: app\n",
		"001-app/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n",
	})
	r := &release.Renderer{Namespace: "ops"}
	vals := map[string]any{"global": map[string]any{}, "app": map[string]any{}}
	if _, err := r.Render(context.Background(), m, vals); err == nil {
		t.Fatal("a chart without a version rendered")
	}
	os.WriteFile(filepath.Join(m.Path, "Chart.yaml"), []byte("apiVersion: v2\nname: app\nversion: 0.0.1\n"), 0o644)
	if _, err := r.Render(context.Background(), m, vals); err != nil {
		t.Errorf("after fixing Chart.yaml: %v", err)
	}
}
