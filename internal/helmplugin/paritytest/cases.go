// Package paritytest holds the Helm plugin's parity cases and compares
// them with the helm CLI. Its non-test code is test support: loading a case
// of internal/helmplugin/testdata/parity, the request Argo CD would send for
// it, and reading helm's output as Argo CD does; helmplugin's unit tests
// use it too. Its tests are integration tests: they run the helm CLI
// (testbin), so `make unit` leaves them out.
package paritytest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/strata-dev/strata/internal/params"
)

// A Case is one testdata/parity/*.txtar: the comment names the chart
// (a directory of testdata/repo, beside testdata/parity) and the request's
// environment; the parameters.json section holds ARGOCD_APP_PARAMETERS; the
// want section holds the manifests strata renders, as a YAML stream, or
// "error: ..." when it must fail.
//
//	chart: full
//	app: demo                  (the Application's name, default "demo")
//	namespace: team-a          (ARGOCD_APP_NAMESPACE, default "default")
//	env: KUBE_VERSION=v1.31.0  (a build environment entry; repeatable)
//	helm: skip-reason          (no comparison with the helm CLI, and why)
type Case struct {
	File, Chart, App, Namespace string
	Env                         []string
	NoHelm                      string
	Params                      []params.Parameter
	Want                        string
	ar                          *txtar.Archive
}

// Files lists the cases of the parity directory dir.
func Files(t testing.TB, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no cases in %s: %v", dir, err)
	}
	return files
}

// Load reads a case.
func Load(t testing.TB, file string) *Case {
	t.Helper()
	ar, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	c := &Case{File: file, App: "demo", Namespace: "default", ar: ar}
	for line := range strings.Lines(string(ar.Comment)) {
		key, val, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		val = strings.TrimSpace(val)
		switch key {
		case "chart":
			c.Chart = val
		case "app":
			c.App = val
		case "namespace":
			c.Namespace = val
		case "env":
			c.Env = append(c.Env, val)
		case "helm":
			c.NoHelm = val
		}
	}
	if c.Chart == "" {
		t.Fatalf("%s: no chart: line", file)
	}
	for _, f := range ar.Files {
		switch f.Name {
		case "parameters.json":
			if c.Params, err = params.ParseParameters(f.Data, file); err != nil {
				t.Fatal(err)
			}
		case "want":
			c.Want = string(f.Data)
		}
	}
	return c
}

// Request is the request Argo CD's repo-server would send for the case.
func (c *Case) Request(t testing.TB) *params.Request {
	t.Helper()
	root, err := filepath.Abs(filepath.Join(filepath.Dir(c.File), "..", "repo"))
	if err != nil {
		t.Fatal(err)
	}
	env := []string{
		"ARGOCD_APP_NAME=" + c.App,
		"ARGOCD_APP_NAMESPACE=" + c.Namespace,
		"ARGOCD_APP_PROJECT_NAME=default",
		"ARGOCD_APP_REVISION=0123456789abcdef0123456789abcdef01234567",
		"ARGOCD_APP_SOURCE_PATH=" + c.Chart,
	}
	return &params.Request{
		AppName:    c.App,
		RepoRoot:   root,
		AppPath:    filepath.Join(root, c.Chart),
		Env:        append(env, c.Env...),
		Parameters: c.Params,
	}
}

// WriteWant rewrites the case's want section (for -update).
func (c *Case) WriteWant(t testing.TB, got string) {
	var files []txtar.File
	for _, f := range c.ar.Files {
		if f.Name != "want" {
			files = append(files, f)
		}
	}
	c.ar.Files = append(files, txtar.File{Name: "want", Data: []byte(got)})
	if err := os.WriteFile(c.File, txtar.Format(c.ar), 0o644); err != nil {
		t.Fatal(err)
	}
}

// RunHelm runs the helm CLI with a private HOME, so no user configuration
// or plugin is read.
func RunHelm(t testing.TB, helm string, args []string) (stdout, stderr string, err error) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(helm, args...)
	cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin", "HELM_CACHE_HOME=" + home + "/cache",
		"HELM_CONFIG_HOME=" + home + "/config", "HELM_DATA_HOME=" + home + "/data", "KUBECONFIG=" + home + "/kubeconfig"}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.String(), errb.String(), err
}

// Normalise reads helm's output as Argo CD does: one line break dropped
// from its end (its exec helper trims it), split by Kubernetes' YAML reader
// (as YAMLOrJSONDecoder splits it), each document read with Kubernetes'
// YAML rules, empty ones dropped and Lists unpacked.
func Normalise(t testing.TB, out string) []string {
	t.Helper()
	var docs []string
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(strings.TrimSuffix(out, "\n"))))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("splitting helm's output: %v", err)
		}
		js, err := sigsyaml.YAMLToJSON(doc)
		if err != nil {
			t.Fatalf("helm printed invalid YAML: %v", err)
		}
		if s := strings.TrimSpace(string(js)); s == "null" || s == "" {
			continue
		}
		docs = append(docs, unpackList(t, js)...)
	}
}

// unpackList returns the documents of a List, recursively, or the
// document itself.
func unpackList(t testing.TB, js []byte) []string {
	var obj map[string]any
	if err := json.Unmarshal(js, &obj); err != nil {
		t.Fatal(err)
	}
	kind, _ := obj["kind"].(string)
	items, ok := obj["items"].([]any)
	if !strings.HasSuffix(kind, "List") || !ok {
		return []string{CanonicalJSON(t, js)}
	}
	var out []string
	for _, it := range items {
		b, err := json.Marshal(it)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, unpackList(t, b)...)
	}
	return out
}

// CanonicalJSON re-encodes a JSON document with sorted keys and its
// numbers as written.
func CanonicalJSON(t testing.TB, js []byte) string {
	t.Helper()
	var v any
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("invalid JSON %s: %v", js, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// YAMLStream prints manifests as a YAML stream, for golden files.
func YAMLStream(t testing.TB, manifests []string) string {
	t.Helper()
	var b strings.Builder
	for _, m := range manifests {
		y, err := sigsyaml.JSONToYAML([]byte(m))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "---\n%s", y)
	}
	return b.String()
}
