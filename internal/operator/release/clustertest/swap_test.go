package clustertest_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/strata-dev/strata/internal/eventually"
	"github.com/strata-dev/strata/internal/operator/module"
	"github.com/strata-dev/strata/internal/operator/release"
	"github.com/strata-dev/strata/internal/testbin"
)

// A team swapping flant's addon-operator for strata keeps its releases:
// modules addon-operator (v1.24.4, its Helm 3 client) released are not
// upgraded when nothing changed — the moduleChecksum strata computes is
// addon-operator's.
func TestSwapFromAddonOperator(t *testing.T) {
	bin := testbin.Path(t, "addon-operator")
	e := setup(t, release.HelmOptions{})
	if _, err := e.c.Client.CoreV1().ConfigMaps(e.ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "addon-operator"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mods := filepath.Join(e.dir, "modules")
	hooks := filepath.Join(e.dir, "global-hooks")
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"values.yaml":                         "appEnabled: true\napp:\n  x: \"1\"\n  list: [a, b]\nchartAppEnabled: true\nchartApp:\n  replicas: 2\n",
		"001-app/templates/cm.yaml":           cmTemplate + "  list: {{ .Values.app.list | join \",\" | quote }}\n",
		"001-app/templates/sa.yaml":           "# a comment\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: app\n  labels:\n    a: b\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: app\nspec:\n  ports:\n  - port: 80\n    targetPort: 8080\n",
		"001-app/templates/hook.yaml":         "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hook\n  annotations:\n    helm.sh/hook: post-install\n",
		"002-chart-app/Chart.yaml":            "apiVersion: v2\nname: chart-app\nversion: 1.0.0\n",
		"002-chart-app/values.yaml":           "image: nginx\n",
		"002-chart-app/templates/deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Chart.Name }}\nspec:\n  replicas: {{ .Values.chartApp.replicas }}\n  selector:\n    matchLabels: {app: x}\n  template:\n    metadata:\n      labels: {app: x}\n    spec:\n      containers:\n      - name: c\n        image: {{ .Values.image }}\n",
	}
	for p, c := range files {
		p = filepath.Join(mods, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tmp := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	cmd := exec.Command(bin, "start")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + tmp, "TMPDIR=" + tmp, "KUBE_CONFIG=" + e.c.Kubeconfig, "KUBECONFIG=" + e.c.Kubeconfig,
		"ADDON_OPERATOR_MODULES_DIR=" + mods, "ADDON_OPERATOR_GLOBAL_HOOKS_DIR=" + hooks, "ADDON_OPERATOR_NAMESPACE=" + e.ns,
		"ADDON_OPERATOR_CONFIG_MAP=addon-operator", "ADDON_OPERATOR_LISTEN_ADDRESS=127.0.0.1", "ADDON_OPERATOR_LISTEN_PORT=" + port,
		"ADDON_OPERATOR_TMP_DIR=" + filepath.Join(tmp, "work"), "DEBUG_UNIX_SOCKET=" + filepath.Join(tmp, "debug.socket"), "LOG_TYPE=json"}
	logf, err := os.Create(filepath.Join(tmp, "addon-operator.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			data, _ := os.ReadFile(logf.Name())
			t.Logf("addon-operator's log:\n%s", data)
		}
	}()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	eventually.Within(t, 3*time.Minute, "addon-operator's releases", func() (bool, string) {
		a, b := e.revisions("app"), e.revisions("chart-app")
		return slices.Equal(a, []string{"1:deployed"}) && slices.Equal(b, []string{"1:deployed"}), fmt.Sprintf("revisions: app %v, chart-app %v", a, b)
	})
	cmd.Process.Kill()
	cmd.Wait()
	set, err := module.Discover([]string{mods}, "", module.Options{})
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string]map[string]any{
		"app":       {"global": map[string]any{}, "app": map[string]any{"x": "1", "list": []any{"a", "b"}}},
		"chart-app": {"global": map[string]any{}, "chartApp": map[string]any{"replicas": 2}},
	}
	for _, m := range set.Modules {
		r, err := e.rnd.Render(t.Context(), m, vals[m.Name])
		if err != nil {
			t.Fatal(err)
		}
		cur, _ := e.store.Get(t.Context(), m.Name)
		t.Logf("%s: addon-operator's moduleChecksum %s, strata's %s", m.Name, cur.Checksum, r.Checksum)
		res, err := release.Converge(t.Context(), e.store, r)
		if err != nil {
			t.Fatal(err)
		}
		if res.Upgraded {
			t.Errorf("%s: upgraded after the swap: %s", m.Name, res.Why)
		}
	}
}
