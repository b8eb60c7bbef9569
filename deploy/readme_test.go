package deploy_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/strvals"
	"sigs.k8s.io/yaml"

	"github.com/strata-dev/strata/deploy/deploytest"
)

// readmeInstall returns README.md's "## Install" section.
func readmeInstall(t *testing.T) string {
	t.Helper()
	data := string(readFile(t, "README.md"))
	_, sec, ok := strings.Cut(data, "\n## Install\n")
	if !ok {
		t.Fatal("README.md has no ## Install section")
	}
	if i := strings.Index(sec, "\n## "); i >= 0 {
		sec = sec[:i]
	}
	return sec
}

// blocks returns the fenced code blocks of lang in text.
func blocks(text, lang string) []string {
	var out []string
	for _, part := range strings.Split(text, "```"+lang+"\n")[1:] {
		body, _, _ := strings.Cut(part, "```")
		out = append(out, body)
	}
	return out
}

const (
	repoURL   = "https://github.com/strata-dev/strata//"
	chartRef  = "oci://ghcr.io/strata-dev/charts/strata"
	rawValues = "https://raw.githubusercontent.com/strata-dev/strata/"
)

var refParam = regexp.MustCompile(`\?ref=(v[0-9][^'"\s]*)$`)

// TestReadmeInstall runs every install command of README.md on this
// checkout: each `kubectl apply -k` as the kustomize build it does (remote
// references to this repository and to Argo CD's install.yaml read from
// here and testdata), each `helm install` of strata's chart as the Helm
// render it does, and checks that they name the chart's version.
func TestReadmeInstall(t *testing.T) {
	sec := readmeInstall(t)
	ch := deploytest.LoadChart(t)
	version := ch.Metadata.AppVersion
	ref := func(t *testing.T, url string) string {
		t.Helper()
		m := refParam.FindStringSubmatch(url)
		if m == nil || m[1] != version {
			t.Errorf("%s: not pinned to ?ref=%s, the chart's appVersion", url, version)
			return url
		}
		return strings.TrimSuffix(url, m[0])
	}
	// The kustomization for Argo CD's install.yaml and its `kubectl apply -k .`.
	ks := blocks(sec, "yaml")
	if len(ks) != 1 {
		t.Fatalf("README's Install has %d yaml blocks, want the one kustomization", len(ks))
	}
	var k map[string]any
	if err := yaml.UnmarshalStrict([]byte(ks[0]), &k); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	deploytest.ArgoCDInstall(t, dir, false)
	res, _ := k["resources"].([]any)
	if len(res) != 1 || res[0] != deploytest.ArgoCDInstallURL {
		t.Errorf("the kustomization's resources are %v, want Argo CD's %s", res, deploytest.ArgoCDInstallURL)
	}
	k["resources"] = []any{"install.yaml"}
	var components []string
	comps, _ := k["components"].([]any)
	for i, c := range comps {
		url, _ := c.(string)
		path, ok := strings.CutPrefix(ref(t, url), repoURL)
		if !ok {
			t.Fatalf("component %s is not this repository's", url)
		}
		components = append(components, path)
		rel, err := filepath.Rel(dir, deploytest.Path(t, path))
		if err != nil {
			t.Fatal(err)
		}
		comps[i] = filepath.ToSlash(rel)
	}
	out, err := yaml.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), out, 0o644); err != nil {
		t.Fatal(err)
	}
	objs := deploytest.Build(t, dir)
	d := deploytest.Deployment(t, objs, "argocd-repo-server")
	for _, name := range []string{"strata-cmp", "strata-helm"} {
		if container(d.Spec.Template.Spec.Containers, name) == nil {
			t.Errorf("README's kustomization gives argocd-repo-server no %s (components %v)", name, components)
		}
	}

	var kubectl, helm, argocd int
	for _, b := range blocks(sec, "shell") {
		for _, line := range strings.Split(strings.TrimSpace(b), "\n") {
			args := strings.Fields(strings.ReplaceAll(line, "'", ""))
			switch {
			case len(args) == 4 && strings.Join(args[:3], " ") == "kubectl apply -k" && args[3] == ".":
				kubectl++ // the kustomization above
			case len(args) == 4 && strings.Join(args[:3], " ") == "kubectl apply -k":
				kubectl++
				path, ok := strings.CutPrefix(ref(t, args[3]), repoURL)
				if !ok {
					t.Errorf("%s: not this repository", line)
					continue
				}
				if objs := deploytest.Build(t, deploytest.Path(t, path)); len(objs) == 0 {
					t.Errorf("%s builds nothing", line)
				}
			case len(args) > 3 && strings.Join(args[:2], " ") == "helm install":
				helm++
				runHelmInstall(t, line, args[2:])
			case len(args) > 3 && strings.Join(args[:3], " ") == "helm upgrade --install" && args[3] == "argocd":
				argocd++
				f := args[len(args)-1]
				path, ok := strings.CutPrefix(f, rawValues+version+"/")
				if !ok || args[len(args)-2] != "-f" {
					t.Errorf("%s: want -f %s%s/<path>", line, rawValues, version)
					continue
				}
				// Argo CD's chart is not at hand; the file is the one
				// TestArgoCDValues keeps equal to the components.
				if _, err := os.Stat(deploytest.Path(t, path)); err != nil {
					t.Errorf("%s: %v", line, err)
				}
			default:
				t.Errorf("README's Install: a command the test does not run: %s", line)
			}
		}
	}
	if kubectl < 5 || helm < 1 || argocd != 1 {
		t.Errorf("README's Install: %d kubectl, %d helm install, %d argo-cd commands checked; want the kustomization, four servers, the chart and Argo CD's chart", kubectl, helm, argocd)
	}
}

// runHelmInstall renders `helm install NAME CHART [flags]` as it would.
func runHelmInstall(t *testing.T, line string, args []string) {
	t.Helper()
	ch := deploytest.LoadChart(t)
	name, ref := args[0], args[1]
	if ref != chartRef {
		t.Errorf("%s: chart %s, want %s", line, ref, chartRef)
	}
	vals := map[string]any{}
	namespace := "default"
	for i := 2; i < len(args); i++ {
		switch args[i] {
		case "--version":
			i++
			if args[i] != ch.Metadata.Version {
				t.Errorf("%s: --version %s, but the chart is %s", line, args[i], ch.Metadata.Version)
			}
		case "--namespace", "-n":
			i++
			namespace = args[i]
		case "--create-namespace":
		case "--set":
			i++
			if err := strvals.ParseInto(args[i], vals); err != nil {
				t.Errorf("%s: --set %s: %v", line, args[i], err)
			}
		default:
			t.Errorf("%s: a flag the test does not know: %s", line, args[i])
		}
	}
	if objs := deploytest.Render(t, ch, name, namespace, vals); len(deploytest.OfKind(objs, "Deployment")) == 0 {
		t.Errorf("%s renders no Deployment", line)
	}
}
