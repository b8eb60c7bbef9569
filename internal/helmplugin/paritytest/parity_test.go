package paritytest_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/google/go-cmp/cmp"
	k8sversion "k8s.io/apimachinery/pkg/util/version"

	"github.com/strata-dev/strata/internal/helmplugin"
	"github.com/strata-dev/strata/internal/helmplugin/paritytest"
	"github.com/strata-dev/strata/internal/params"
	"github.com/strata-dev/strata/internal/testbin"
)

// TestParity renders each case with the plugin and compares the result,
// document for document (or its error), with what the helm CLI of the same
// version prints for the command line Argo CD would build from the same
// parameters (helmArgs), and the local CLI's YAML output (GenerateYAML)
// with helm's output byte for byte. helmplugin's TestParityWant checks the
// want sections, without helm.
func TestParity(t *testing.T) {
	files := paritytest.Files(t, "../testdata/parity")
	helm := testbin.Path(t, "helm")
	p := helmplugin.New(helmplugin.Options{})
	for _, file := range files {
		c := paritytest.Load(t, file)
		if c.NoHelm != "" {
			t.Logf("%s: not compared with helm: %s", file, c.NoHelm)
			continue
		}
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			req := c.Request(t)
			manifests, genErr := p.Generate(context.Background(), req)
			args := helmArgs(t, c, req)
			stdout, stderr, helmErr := paritytest.RunHelm(t, helm, args)
			if genErr != nil || helmErr != nil {
				compareErrors(t, genErr, helmErr, stderr, args)
				return
			}
			want := paritytest.Normalise(t, stdout)
			gotDocs := make([]string, len(manifests))
			for i, m := range manifests {
				gotDocs[i] = paritytest.CanonicalJSON(t, []byte(m))
			}
			if diff := cmp.Diff(want, gotDocs); diff != "" {
				t.Errorf("documents differ from helm %s (-helm +strata):\n%s", strings.Join(args, " "), diff)
			}
			// The local CLI's YAML output is helm's own, byte for byte.
			text, err := p.GenerateYAML(context.Background(), req)
			if err != nil {
				t.Fatalf("GenerateYAML failed where Generate did not: %v", err)
			}
			if diff := cmp.Diff(stdout, string(text)); diff != "" {
				t.Errorf("GenerateYAML's text differs from helm %s's output (-helm +strata):\n%s", strings.Join(args, " "), diff)
			}
		})
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
func helmArgs(t *testing.T, c *paritytest.Case, req *params.Request) []string {
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
	release := c.App
	if i := strings.LastIndexByte(release, '_'); i >= 0 {
		release = release[i+1:]
	}
	args := []string{"template", req.AppPath, "--name-template", str("release-name", release)}
	args = append(args, "--namespace", str("namespace", env["ARGOCD_APP_NAMESPACE"]))
	if kv := str("kube-version", env["KUBE_VERSION"]); kv != "" {
		// Argo CD keeps a version's numbers only (Kubernetes' generic
		// version rules): v1.29.3-eks-x is 1.29.3.
		v, err := k8sversion.ParseGeneric(kv)
		if err != nil {
			t.Fatalf("Argo CD would refuse the kube version %q: %v", kv, err)
		}
		args = append(args, "--kube-version", v.String())
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
		args = append(args, argoValuesFiles(t, req, p.Array, envsubst, str("ignore-missing-value-files", "") == "true")...)
	}
	if v := str("values", ""); v != "" {
		f := filepath.Join(t.TempDir(), "inline-values.yaml")
		if err := os.WriteFile(f, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--values", f)
	}
	apis := strings.Split(env["KUBE_API_VERSIONS"], ",")
	if p := get("api-versions"); p != nil && len(p.Array) > 0 {
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

// argoValuesFiles turns valueFiles into helm's --values flags as Argo CD's
// Helm source does: build variables substituted in each entry, the path
// resolved (relative to the application, an absolute one to the
// repository's root), a glob pattern expanded in place by doublestar's
// FilepathGlob (files named by another entry left out of it), each file
// passed once where it first appears, and missing files and unmatched
// patterns skipped with ignore-missing-value-files.
func argoValuesFiles(t *testing.T, req *params.Request, entries []string, envsubst func(string) string, ignoreMissing bool) []string {
	resolve := func(f string) string {
		f = envsubst(f)
		if filepath.IsAbs(f) {
			return filepath.Join(req.RepoRoot, f)
		}
		return filepath.Join(req.AppPath, f)
	}
	isGlob := func(p string) bool { return strings.ContainsAny(p, "*?[") }
	explicit := map[string]bool{}
	for _, f := range entries {
		if p := resolve(f); !isGlob(p) {
			explicit[p] = true
		}
	}
	var args []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			args = append(args, "--values", p)
		}
	}
	for _, f := range entries {
		p := resolve(f)
		if !isGlob(p) {
			if _, err := os.Stat(p); err != nil && ignoreMissing {
				continue
			}
			add(p)
			continue
		}
		matches, err := doublestar.FilepathGlob(p)
		if err != nil {
			t.Fatalf("Argo CD would refuse the pattern %q: %v", f, err)
		}
		if len(matches) == 0 && !ignoreMissing {
			t.Fatalf("Argo CD would refuse the pattern %q: it matches no file", f)
		}
		for _, m := range matches {
			if !explicit[m] {
				add(m)
			}
		}
	}
	return args
}
