package operator_test

import (
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/strata-dev/strata/internal/eventually"
)

// TestKubernetesBindingsStartRetry: a module whose kubernetes bindings
// cannot start (a jqFilter fails on an object that exists; on a cluster, a
// list the API server refuses) fails its run, which is retried; the
// monitors that did start are stopped and the retry starts the bindings
// afresh, so that the run succeeds once the object is fixed.
func TestKubernetesBindingsStartRetry(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"config.yaml":                     "",
		"modules/values.yaml":             "aEnabled: false\n",
		"objects/cms.yaml":                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one, namespace: default}\n",
		"objects/numbers.yaml":            "apiVersion: v1\nkind: Secret\nmetadata: {name: n, namespace: default}\ndata: {n: not-a-number}\n",
		"modules/001-a/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
		"modules/001-a/hooks/watch.sh": `#!/bin/sh
if [ "$1" = --config ]; then cat <<'CFG'
configVersion: v1
kubernetes:
- name: cms
  apiVersion: v1
  kind: ConfigMap
- name: numbers
  apiVersion: v1
  kind: Secret
  jqFilter: '.data.n | tonumber'
CFG
exit 0; fi
`,
	}
	for name, data := range files {
		writeFile(t, filepath.Join(dir, name), []byte(data))
	}
	h := &harness{t: t, dir: dir}
	defer h.stop()
	h.start()
	writeFile(t, filepath.Join(dir, "config.yaml"), []byte("aEnabled: \"true\"\n"))
	failed := regexp.MustCompile(`(?m)^addon_operator_module_run_errors_total\{module="a"\} ([2-9]|\d\d+)$`)
	eventually.True(t, "module a's run failed twice", func() (bool, string) {
		rec := httptest.NewRecorder()
		h.eng.HTTPHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		return failed.MatchString(rec.Body.String()), rec.Body.String()
	})
	writeFile(t, filepath.Join(dir, "objects/numbers.yaml"), []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: n, namespace: default}\ndata: {n: \"1\"}\n"))
	h.wait("module a hooks/watch.sh kubernetes")
	h.wait("module a helm upgrade")
}
