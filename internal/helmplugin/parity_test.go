package helmplugin_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/strata-dev/strata/internal/helmplugin"
	"github.com/strata-dev/strata/internal/params"
	"github.com/strata-dev/strata/internal/testbin"
)

var update = flag.Bool("update", false, "rewrite the want sections of testdata/parity/*.txtar")

// repoDir is the repository the test charts live in.
const repoDir = "testdata/repo"

// A parityCase is one testdata/parity/*.txtar: the comment names the chart
// (a directory of testdata/repo) and the request's environment; the
// parameters.json section holds ARGOCD_APP_PARAMETERS; the want section
// holds the manifests strata renders, as a YAML stream, or "error: ..." when
// it must fail.
//
//	chart: full
//	app: demo                  (the Application's name, default "demo")
//	namespace: team-a          (ARGOCD_APP_NAMESPACE, default "default")
//	env: KUBE_VERSION=v1.31.0  (a build environment entry; repeatable)
//	helm: skip-reason          (no comparison with the helm CLI, and why)
type parityCase struct {
	file, chart, app, namespace string
	env                         []string
	noHelm                      string
	params                      []params.Parameter
	ar                          *txtar.Archive
	want                        string
}

func loadCase(t *testing.T, file string) *parityCase {
	t.Helper()
	ar, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	c := &parityCase{file: file, app: "demo", namespace: "default", ar: ar}
	for line := range strings.Lines(string(ar.Comment)) {
		key, val, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		val = strings.TrimSpace(val)
		switch key {
		case "chart":
			c.chart = val
		case "app":
			c.app = val
		case "namespace":
			c.namespace = val
		case "env":
			c.env = append(c.env, val)
		case "helm":
			c.noHelm = val
		}
	}
	if c.chart == "" {
		t.Fatalf("%s: no chart: line", file)
	}
	for _, f := range ar.Files {
		switch f.Name {
		case "parameters.json":
			if c.params, err = params.ParseParameters(f.Data, file); err != nil {
				t.Fatal(err)
			}
		case "want":
			c.want = string(f.Data)
		}
	}
	return c
}

func (c *parityCase) request(t *testing.T) *params.Request {
	root, err := filepath.Abs(repoDir)
	if err != nil {
		t.Fatal(err)
	}
	env := []string{
		"ARGOCD_APP_NAME=" + c.app,
		"ARGOCD_APP_NAMESPACE=" + c.namespace,
		"ARGOCD_APP_PROJECT_NAME=default",
		"ARGOCD_APP_REVISION=0123456789abcdef0123456789abcdef01234567",
		"ARGOCD_APP_SOURCE_PATH=" + c.chart,
	}
	return &params.Request{
		AppName:    c.app,
		RepoRoot:   root,
		AppPath:    filepath.Join(root, c.chart),
		Env:        append(env, c.env...),
		Parameters: c.params,
	}
}

// TestParity renders each case with the plugin, compares the result with
// its golden file, and compares it document for document (or its error)
// with what the helm CLI of the same version prints for the command line
// Argo CD would build from the same parameters (helmArgs).
func TestParity(t *testing.T) {
	files, err := filepath.Glob("testdata/parity/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	helm := testbin.Path(t, "helm")
	p := helmplugin.New(helmplugin.Options{})
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			c := loadCase(t, file)
			req := c.request(t)
			manifests, genErr := p.Generate(context.Background(), req)
			got := ""
			if genErr != nil {
				got = "error: " + genErr.Error() + "\n"
			} else {
				got = yamlStream(t, manifests)
			}
			if *update {
				c.writeWant(t, got)
			} else if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("Generate differs from the want section of %s (-want +got):\n%s", file, diff)
			}
			if c.noHelm != "" {
				return
			}
			args := helmArgs(t, c, req)
			stdout, stderr, helmErr := runHelm(t, helm, args)
			if genErr != nil || helmErr != nil {
				compareErrors(t, genErr, helmErr, stderr, args)
				return
			}
			want := normalise(t, stdout)
			gotDocs := make([]string, len(manifests))
			for i, m := range manifests {
				gotDocs[i] = canonicalJSON(t, []byte(m))
			}
			if diff := cmp.Diff(want, gotDocs); diff != "" {
				t.Errorf("documents differ from helm %s (-helm +strata):\n%s", strings.Join(args, " "), diff)
			}
		})
	}
}

func (c *parityCase) writeWant(t *testing.T, got string) {
	var files []txtar.File
	for _, f := range c.ar.Files {
		if f.Name != "want" {
			files = append(files, f)
		}
	}
	c.ar.Files = append(files, txtar.File{Name: "want", Data: []byte(got)})
	if err := os.WriteFile(c.file, txtar.Format(c.ar), 0o644); err != nil {
		t.Fatal(err)
	}
}

// compareErrors checks that both failed, and that strata's message carries
// helm's: "rendering chart NAME: " + what helm prints after "Error: ".
func compareErrors(t *testing.T, genErr, helmErr error, stderr string, args []string) {
	t.Helper()
	switch {
	case genErr == nil:
		t.Fatalf("helm %s failed (%v), strata did not:\n%s", strings.Join(args, " "), helmErr, stderr)
	case helmErr == nil:
		t.Fatalf("strata failed, helm %s did not: %v", strings.Join(args, " "), genErr)
	}
	msg := strings.TrimSpace(stderr)
	msg = strings.TrimPrefix(msg, "Error: ")
	msg, _, _ = strings.Cut(msg, "\n\nUse --debug flag")
	_, ours, ok := strings.Cut(genErr.Error(), ": ")
	if !ok || strings.TrimSpace(ours) != msg {
		t.Errorf("error differs from helm's:\nhelm:   %s\nstrata: %s", msg, genErr)
	}
}

// helmArgs builds the helm template command line Argo CD's native Helm
// source builds for the request (see the facts on Argo CD's Helm source),
// independently of the plugin's code.
func helmArgs(t *testing.T, c *parityCase, req *params.Request) []string {
	env := map[string]string{}
	for _, kv := range req.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	envsubst := func(s string) string {
		return os.Expand(s, func(k string) string {
			if k == "$" {
				return "$"
			}
			return env[k]
		})
	}
	get := func(name string) *params.Parameter {
		var found *params.Parameter
		for i := range req.Parameters {
			if req.Parameters[i].Name == name {
				found = &req.Parameters[i]
			}
		}
		return found
	}
	str := func(name, def string) string {
		if p := get(name); p != nil && p.String != nil && *p.String != "" {
			return *p.String
		}
		return def
	}
	release := c.app
	if i := strings.LastIndexByte(release, '_'); i >= 0 {
		release = release[i+1:]
	}
	args := []string{"template", req.AppPath, "--name-template", str("release-name", release)}
	args = append(args, "--namespace", str("namespace", env["ARGOCD_APP_NAMESPACE"]))
	if kv := str("kube-version", env["KUBE_VERSION"]); kv != "" {
		args = append(args, "--kube-version", kv)
	}
	setFlag := func(flag, name string, value func(string) string) {
		if p := get(name); p != nil {
			keys := make([]string, 0, len(p.Map))
			for k := range p.Map {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				args = append(args, flag, k+"="+value(p.Map[k]))
			}
		}
	}
	escape := func(v string) string {
		v = envsubst(v)
		if strings.HasPrefix(v, "{") && strings.HasSuffix(v, "}") {
			return v
		}
		var b strings.Builder
		for i := 0; i < len(v); i++ {
			if v[i] == ',' && (i == 0 || v[i-1] != '\\') {
				b.WriteByte('\\')
			}
			b.WriteByte(v[i])
		}
		return b.String()
	}
	setFlag("--set", "helm-parameters", escape)
	setFlag("--set-string", "helm-string-parameters", escape)
	setFlag("--set-file", "file-parameters", func(p string) string { return filepath.Join(req.AppPath, envsubst(p)) })
	if p := get("values-files"); p != nil {
		for _, f := range p.Array {
			path := filepath.Join(req.AppPath, f)
			if filepath.IsAbs(f) {
				path = filepath.Join(req.RepoRoot, f)
			}
			if _, err := os.Stat(path); err != nil && str("ignore-missing-value-files", "") == "true" {
				continue
			}
			args = append(args, "--values", path)
		}
	}
	if v := str("values", ""); v != "" {
		f := filepath.Join(t.TempDir(), "inline-values.yaml")
		if err := os.WriteFile(f, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--values", f)
	}
	apis := strings.Split(env["KUBE_API_VERSIONS"], ",")
	if p := get("api-versions"); p != nil && p.Array != nil {
		apis = p.Array
	}
	for _, a := range apis {
		if a != "" {
			args = append(args, "--api-versions", a)
		}
	}
	if str("skip-crds", "false") != "true" {
		args = append(args, "--include-crds")
	}
	if str("skip-schema-validation", "false") == "true" {
		args = append(args, "--skip-schema-validation")
	}
	if str("skip-tests", "false") == "true" {
		args = append(args, "--skip-tests")
	}
	return args
}

// runHelm runs the helm CLI with a private HOME, so no user configuration
// or plugin is read.
func runHelm(t testing.TB, helm string, args []string) (stdout, stderr string, err error) {
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

// normalise reads helm's output as Argo CD does: one line break dropped
// from its end (its exec helper trims it), split by Kubernetes' YAML reader
// (as YAMLOrJSONDecoder splits it), each document read with Kubernetes'
// YAML rules, empty ones dropped and Lists unpacked.
func normalise(t testing.TB, out string) []string {
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

func unpackList(t testing.TB, js []byte) []string {
	var obj map[string]any
	if err := json.Unmarshal(js, &obj); err != nil {
		t.Fatal(err)
	}
	kind, _ := obj["kind"].(string)
	items, ok := obj["items"].([]any)
	if !strings.HasSuffix(kind, "List") || !ok {
		return []string{canonicalJSON(t, js)}
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

func canonicalJSON(t testing.TB, js []byte) string {
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

// yamlStream prints manifests as a YAML stream, for golden files.
func yamlStream(t *testing.T, manifests []string) string {
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
