//go:build linux

package clustertest

import (
	"bytes"
	"encoding/json"
	"maps"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestHelmPluginMatchesNativeHelm deploys one chart twice, with the same
// values files and parameters: through Argo CD's native Helm source (the
// helm CLI on the repo-server) and through strata's built-in Helm plugin.
// The objects the API server holds are the same, but for their namespace.
func TestHelmPluginMatchesNativeHelm(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const nativeNS, strataNS = "e2e-helm-native", "e2e-helm-strata"
	e.namespace(t, nativeNS)
	e.namespace(t, strataNS)
	t.Cleanup(func() { e.deleteApp(t, "helm-native"); e.deleteApp(t, "helm-strata") })

	e.apply(t, appGVR, e.application("helm-native", "chart", nativeNS, map[string]any{"helm": map[string]any{
		"releaseName": "e2e",
		"valueFiles":  []any{"values-prod.yaml"},
		"parameters":  []any{map[string]any{"name": "replicaCount", "value": "3"}, map[string]any{"name": "features[2]", "value": "metrics"}},
	}}))
	e.apply(t, appGVR, e.application("helm-strata", "chart", strataNS, map[string]any{"plugin": map[string]any{
		"name": helmPlugin,
		"parameters": []any{
			map[string]any{"name": "release-name", "string": "e2e"},
			map[string]any{"name": "values-files", "array": []any{"values-prod.yaml"}},
			map[string]any{"name": "helm-parameters", "map": map[string]any{"replicaCount": "3", "features[2]": "metrics"}},
		},
	}}))
	e.waitSynced(t, "helm-native")
	e.waitSynced(t, "helm-strata")

	want := map[string]string{"greeting": "hello from prod", "replicaCount": "3", "tier": "gold", "features": "audit,backup,metrics"}
	for _, ns := range []string{nativeNS, strataNS} {
		w := maps.Clone(want)
		w["namespace"] = ns
		cm := e.waitConfigMap(t, ns, "e2e-settings", w, "kubeVersion")
		if kv := cm.Data["kubeVersion"]; !strings.HasPrefix(kv, "v1.") {
			t.Errorf("kubeVersion %q in %s: want the destination cluster's", kv, ns)
		}
	}
	native, strata := e.objects(t, nativeNS), e.objects(t, strataNS)
	if native != strata {
		t.Errorf("the chart's objects differ between Argo CD's Helm source and strata's Helm plugin:\n--- native (%s)\n%s\n--- strata (%s)\n%s", nativeNS, native, strataNS, strata)
	}
}

// objects prints the chart's objects in ns comparably: kind, name, labels
// and content, the namespace written as NS and Argo CD's tracking
// annotation (which names the Application) left out.
func (e *env) objects(t *testing.T, ns string) string {
	t.Helper()
	ctx := t.Context()
	cm, err := e.cluster.Client.CoreV1().ConfigMaps(ns).Get(ctx, "e2e-settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sec, err := e.cluster.Client.CoreV1().Secrets(ns).Get(ctx, "e2e-credentials", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	role, err := e.cluster.Client.RbacV1().Roles(ns).Get(ctx, "e2e-reader", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	type obj struct {
		Kind   string
		Name   string
		Labels map[string]string
		Data   any
	}
	cmData := maps.Clone(cm.Data)
	cmData["namespace"] = strings.ReplaceAll(cmData["namespace"], ns, "NS")
	objs := []obj{
		{"ConfigMap", cm.Name, cm.Labels, cmData},
		{"Secret", sec.Name, sec.Labels, struct {
			Type corev1.SecretType
			Data map[string][]byte
		}{sec.Type, sec.Data}},
		{"Role", role.Name, role.Labels, role.Rules},
	}
	var b bytes.Buffer
	for _, o := range objs {
		data, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
		b.WriteByte('\n')
	}
	if role.Rules == nil || !reflect.DeepEqual(role.Rules[0].ResourceNames, []string{"e2e-settings"}) {
		t.Errorf("Role %s/e2e-reader rules %v: want resourceNames [e2e-settings]", ns, role.Rules)
	}
	return b.String()
}

// appDetails asks the repo-server for an application's details as the
// Argo CD UI does (GetAppDetails, through Argo CD's own client in
// hack/testbin/argocd) and returns the answer.
func (e *env) appDetails(t *testing.T, query map[string]any) map[string]any {
	t.Helper()
	q, err := json.Marshal(query)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), e.argocd, "app-details", "--repo-server", e.repoAddr)
	cmd.Stdin = bytes.NewReader(q)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("GetAppDetails %s: %v\n%s", q, err, stderr.String())
	}
	var res map[string]any
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("GetAppDetails answered %s: %v", out, err)
	}
	return res
}
