package cli_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/strata-dev/strata/internal/cli"
)

// tgz packs files (path: contents) as a chart archive.
func tgz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, data := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestCmpGenerateHelmDependencies: strata cmp generate --builtin helm
// fetches a dependency Chart.yaml lists from the chart repository Helm's
// configuration names ($HELM_REPOSITORY_CONFIG or the flag), and refuses
// one it does not name unless --helm-allow-unlisted-repositories.
func TestCmpGenerateHelmDependencies(t *testing.T) {
	archive := tgz(t, map[string]string{
		"leaf/Chart.yaml":               "apiVersion: v2\nname: leaf\nversion: 1.2.3\n",
		"leaf/templates/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-leaf\ndata:\n  version: {{ .Chart.Version | quote }}\n",
	})
	var fetched atomic.Int64
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	mux.HandleFunc("/index.yaml", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "apiVersion: v1\nentries:\n  leaf:\n    - apiVersion: v2\n      name: leaf\n      version: 1.2.3\n      digest: %x\n      urls: [%s/leaf-1.2.3.tgz]\n", sha256.Sum256(archive), srv.URL)
	})
	mux.HandleFunc("/leaf-1.2.3.tgz", func(w http.ResponseWriter, r *http.Request) {
		fetched.Add(1)
		w.Write(archive)
	})

	root := t.TempDir()
	app := filepath.Join(root, "app")
	writeFile(t, filepath.Join(app, "Chart.yaml"), fmt.Sprintf("apiVersion: v2\nname: umbrella\nversion: 0.1.0\ndependencies:\n  - name: leaf\n    version: ~1.2.0\n    repository: %s\n", srv.URL))
	cfgDir := t.TempDir()
	listed := filepath.Join(cfgDir, "repositories.yaml")
	writeFile(t, listed, fmt.Sprintf("apiVersion: v1\nrepositories:\n  - name: charts\n    url: %s\n", srv.URL))
	empty := filepath.Join(cfgDir, "empty.yaml")
	writeFile(t, empty, "apiVersion: v1\nrepositories: []\n")
	t.Setenv("HELM_REPOSITORY_CACHE", t.TempDir())
	t.Setenv("HELM_REGISTRY_CONFIG", filepath.Join(cfgDir, "none.json"))

	run := func(args ...string) (string, string, int) {
		var stdout, stderr bytes.Buffer
		code := cli.Main(context.Background(), append([]string{"cmp", "generate", app, "--builtin", "helm", "--repo-root", root, "--app-name", "demo"}, args...), strings.NewReader(""), &stdout, &stderr)
		return stdout.String(), stderr.String(), code
	}
	t.Setenv("HELM_REPOSITORY_CONFIG", listed)
	out, errOut, code := run()
	if code != 0 || !strings.Contains(out, "name: demo-leaf") || !strings.Contains(out, `version: "1.2.3"`) {
		t.Fatalf("from $HELM_REPOSITORY_CONFIG: exit %d\n%s\n%s", code, out, errOut)
	}
	_, errOut, code = run("--helm-repository-config", empty)
	if code == 0 || !strings.Contains(errOut, `dependency "leaf" version "~1.2.0" from repository "`+srv.URL+`"`) || !strings.Contains(errOut, "--helm-allow-unlisted-repositories") {
		t.Fatalf("unlisted: exit %d\n%s", code, errOut)
	}
	out, errOut, code = run("--helm-repository-config", empty, "--helm-allow-unlisted-repositories")
	if code != 0 || !strings.Contains(out, "name: demo-leaf") {
		t.Fatalf("unlisted allowed: exit %d\n%s\n%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(app, "charts")); !os.IsNotExist(err) {
		t.Errorf("charts/ was written into the checkout: %v", err)
	}
	if n := fetched.Load(); n != 2 {
		t.Errorf("the archive was fetched %d times by two successful runs", n)
	}
}

func writeFile(t *testing.T, p, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCmpGenerateRemoteChart: cmp generate --builtin helm renders a chart
// named as helm template takes one from a repository (REPO/CHART,
// --version), with values files from anywhere on disk.
func TestCmpGenerateRemoteChart(t *testing.T) {
	archives := map[string][]byte{}
	for _, v := range []string{"1.2.3", "1.3.0"} {
		archives[v] = tgz(t, map[string]string{
			"leaf/Chart.yaml":               "apiVersion: v2\nname: leaf\nversion: " + v + "\n",
			"leaf/values.yaml":              "color: none\n",
			"leaf/templates/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  version: {{ .Chart.Version | quote }}\n  color: {{ .Values.color | quote }}\n",
		})
	}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	mux.HandleFunc("/index.yaml", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "apiVersion: v1\nentries:\n  leaf:\n")
		for _, v := range []string{"1.3.0", "1.2.3"} {
			fmt.Fprintf(w, "    - apiVersion: v2\n      name: leaf\n      version: %s\n      digest: %x\n      urls: [%s/leaf-%s.tgz]\n", v, sha256.Sum256(archives[v]), srv.URL, v)
		}
	})
	for v, a := range archives {
		mux.HandleFunc("/leaf-"+v+".tgz", func(w http.ResponseWriter, r *http.Request) { w.Write(a) })
	}
	cfgDir := t.TempDir()
	writeFile(t, filepath.Join(cfgDir, "repositories.yaml"), fmt.Sprintf("apiVersion: v1\nrepositories:\n  - name: charts\n    url: %s\n", srv.URL))
	writeFile(t, filepath.Join(cfgDir, "blue.yaml"), "color: blue\n")
	t.Setenv("HELM_REPOSITORY_CONFIG", filepath.Join(cfgDir, "repositories.yaml"))
	t.Setenv("HELM_REPOSITORY_CACHE", t.TempDir())
	t.Setenv("HELM_REGISTRY_CONFIG", filepath.Join(cfgDir, "none.json"))
	t.Chdir(cfgDir)
	run := func(args ...string) (string, string, int) {
		var stdout, stderr bytes.Buffer
		code := cli.Main(context.Background(), append([]string{"cmp", "generate"}, args...), strings.NewReader(""), &stdout, &stderr)
		return stdout.String(), stderr.String(), code
	}
	out, errOut, code := run("demo", "charts/leaf", "--builtin", "helm", "--version", "~1.2.0", "-f", "blue.yaml")
	if code != 0 || !strings.Contains(out, "name: demo") || !strings.Contains(out, `version: "1.2.3"`) || !strings.Contains(out, `color: "blue"`) {
		t.Fatalf("charts/leaf --version ~1.2.0 -f blue.yaml: exit %d\n%s\n%s", code, out, errOut)
	}
	if out, errOut, code = run("charts/leaf", "--builtin", "helm"); code != 0 || !strings.Contains(out, `version: "1.3.0"`) {
		t.Fatalf("charts/leaf, the newest: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"charts/leaf", "--builtin", "helm", "--print-parameters"}, "a chart from a repository"},
		{[]string{"nope/leaf", "--builtin", "helm"}, `no repository named "nope"`},
		{[]string{"charts/leaf", "--builtin", "helm", "--version", "9.x"}, "no version"},
		{[]string{".", "--builtin", "helm", "--version", "1.0.0"}, "--version applies to a chart from a repository"},
	} {
		if _, errOut, code := run(tc.args...); code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stderr %q, want %q", tc.args, code, errOut, tc.want)
		}
	}
}
