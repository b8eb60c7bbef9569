package release_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/operator/release"
)

func md5hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// The release manifest Helm 3 stores for two templates, and what
// addon-operator's post-renderer makes of it (kyaml re-serialises the
// stream: the leading "---" goes, labels join metadata).
const (
	helmManifest = "---\n# Source: app/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  x: \"1\"\n\n" +
		"---\n# Source: app/templates/sa.yaml\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: app\n  labels:\n    a: b\n\n"
	labelledManifest = "# Source: app/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  labels:\n    heritage: addon-operator\ndata:\n  x: \"1\"\n" +
		"---\n# Source: app/templates/sa.yaml\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: app\n  labels:\n    a: b\n    heritage: addon-operator\n"
)

func TestModuleChecksum(t *testing.T) {
	for _, tc := range []struct {
		name     string
		manifest string
		labels   map[string]string
		want     string
	}{
		{"no labels: the stream as rendered", helmManifest, nil, md5hex(helmManifest)},
		{"labels: the post-rendered stream", helmManifest, map[string]string{"heritage": "addon-operator"}, md5hex(labelledManifest)},
		{"empty", "", map[string]string{"heritage": "addon-operator"}, md5hex("")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := release.ModuleChecksum([]byte(tc.manifest), tc.labels)
			if err != nil || got != tc.want {
				t.Errorf("ModuleChecksum = %s, %v; want %s", got, err, tc.want)
			}
		})
	}
	if _, err := release.ModuleChecksum([]byte("a: [\n"), map[string]string{"k": "v"}); err == nil {
		t.Errorf("ModuleChecksum of broken YAML = nil error, want one")
	}
}

func FuzzModuleChecksum(f *testing.F) {
	f.Add(helmManifest)
	f.Add(labelledManifest)
	f.Add("---\n---\n")
	f.Add("- a\n- b\n")
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = release.ModuleChecksum([]byte(s), map[string]string{"heritage": "addon-operator"})
	})
}

// Under ModuleChecksum the Renderer hashes the manifest Helm 3 would
// store: templates in install order, hooks and CRDs left out, each
// document as Helm writes it.
func TestRendererModuleChecksum(t *testing.T) {
	m, _ := writeModule(t, map[string]string{
		"001-app/crds/crd.yaml":      "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n",
		"001-app/templates/sa.yaml":  "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: app\n  labels:\n    a: b\n",
		"001-app/templates/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  x: {{ .Values.app.x | quote }}\n",
		"001-app/templates/job.yaml": "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: hook\n  annotations:\n    helm.sh/hook: post-install\n",
	})
	// Helm installs ServiceAccounts before ConfigMaps.
	want := "---\n# Source: app/templates/sa.yaml\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: app\n  labels:\n    a: b\n\n" +
		"---\n# Source: app/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  x: \"1\"\n\n"
	vals := map[string]any{"global": map[string]any{}, "app": map[string]any{"x": 1}}
	for _, tc := range []struct {
		name   string
		labels map[string]string
	}{{"no labels", nil}, {"labels", map[string]string{"heritage": "addon-operator"}}} {
		t.Run(tc.name, func(t *testing.T) {
			r := &release.Renderer{Namespace: "ops", ModuleChecksum: true, ResourceLabels: tc.labels}
			out, err := r.Render(context.Background(), m, vals)
			if err != nil {
				t.Fatal(err)
			}
			sum, err := release.ModuleChecksum([]byte(want), tc.labels)
			if err != nil {
				t.Fatal(err)
			}
			if out.Checksum != sum {
				t.Errorf("Checksum = %s, want %s (ModuleChecksum of %q)", out.Checksum, sum, want)
			}
		})
	}
}

// Converge on the local store: install, the no-op, an upgrade, and a
// release whose manifests went missing installed again.
func TestConvergeLocal(t *testing.T) {
	m, _ := writeModule(t, map[string]string{
		"001-app/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  x: {{ .Values.app.x | quote }}\n",
	})
	st := release.NewLocal(t.TempDir())
	r := &release.Renderer{Namespace: "ops"}
	step := func(x int) release.Result {
		t.Helper()
		out, err := r.Render(context.Background(), m, map[string]any{"app": map[string]any{"x": x}})
		if err != nil {
			t.Fatal(err)
		}
		res, err := release.Converge(context.Background(), st, out)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for i, tc := range []struct {
		x        int
		before   func()
		upgraded bool
		why      string
		revision int
	}{
		{x: 1, upgraded: true, why: "not installed", revision: 1},
		{x: 1, why: "rendered manifests unchanged", revision: 1},
		{x: 2, upgraded: true, why: "rendered manifests changed", revision: 2},
		{x: 2, before: func() { os.Remove(filepath.Join(st.Dir, "app", release.ManifestsFile)) }, upgraded: true, why: "not installed", revision: 3},
	} {
		if tc.before != nil {
			tc.before()
		}
		res := step(tc.x)
		if res.Upgraded != tc.upgraded || res.Why != tc.why || res.Release == nil || res.Release.Revision != tc.revision {
			t.Errorf("step %d: Converge = %+v, want upgraded %v (%s) at revision %d", i, res, tc.upgraded, tc.why, tc.revision)
		}
	}
	if absent, err := st.Absent(context.Background(), "app"); err != nil || len(absent) != 0 {
		t.Errorf("Absent(app) = %v, %v; want none", absent, err)
	}
	if _, err := st.Absent(context.Background(), "other"); !errors.Is(err, release.ErrNotFound) {
		t.Errorf("Absent(other) = %v, want ErrNotFound", err)
	}
}

func TestOrphans(t *testing.T) {
	mods := map[string]bool{"a": true, "b": true}
	got := release.Orphans([]string{"a", "b", "keep", "old"}, func(n string) bool { return mods[n] }, "keep")
	if strings.Join(got, ",") != "old" {
		t.Errorf("Orphans = %v, want [old]", got)
	}
}

// The moduleChecksum labels flant's addon-operator v1.24.4 (its Helm 3
// client, ADDON_OPERATOR_CRD_EXTRA_LABELS at its default) put on the
// releases of these two modules, read from the release Secrets it wrote
// on a kubetest API server: strata computes the same, so a team swapping
// the binary sees no upgrade of unchanged modules.
func TestModuleChecksumAsAddonOperator(t *testing.T) {
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  x: {{ .Values.app.x | quote }}\n" +
		"  list: {{ .Values.app.list | join \",\" | quote }}\n"
	for _, tc := range []struct {
		name   string
		files  map[string]string
		values map[string]any
		want   string
	}{
		{
			name: "app",
			files: map[string]string{
				"001-app/templates/cm.yaml":   cm,
				"001-app/templates/sa.yaml":   "# a comment\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: app\n  labels:\n    a: b\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: app\nspec:\n  ports:\n  - port: 80\n    targetPort: 8080\n",
				"001-app/templates/hook.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hook\n  annotations:\n    helm.sh/hook: post-install\n",
			},
			values: map[string]any{"global": map[string]any{}, "app": map[string]any{"x": "1", "list": []any{"a", "b"}}},
			want:   "0d9d163acb8ae8354f1bfc97f7461a1f",
		},
		{
			name: "chart-app",
			files: map[string]string{
				"002-chart-app/Chart.yaml":            "apiVersion: v2\nname: chart-app\nversion: 1.0.0\n",
				"002-chart-app/values.yaml":           "image: nginx\n",
				"002-chart-app/templates/deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Chart.Name }}\nspec:\n  replicas: {{ .Values.chartApp.replicas }}\n  selector:\n    matchLabels: {app: x}\n  template:\n    metadata:\n      labels: {app: x}\n    spec:\n      containers:\n      - name: c\n        image: {{ .Values.image }}\n",
			},
			values: map[string]any{"global": map[string]any{}, "chartApp": map[string]any{"replicas": 2}},
			want:   "c57c14d0e5292b3d1769b3557787f28d",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := writeModule(t, tc.files)
			r := &release.Renderer{Namespace: "addons", ModuleChecksum: true, ResourceLabels: map[string]string{"heritage": "addon-operator"}}
			out, err := r.Render(context.Background(), m, tc.values)
			if err != nil {
				t.Fatal(err)
			}
			if out.Checksum != tc.want {
				t.Errorf("Checksum = %s, want addon-operator's %s", out.Checksum, tc.want)
			}
		})
	}
}
