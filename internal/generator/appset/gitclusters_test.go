package appset

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/document"
)

// gitClustersSet is an ApplicationSet combining a git generator and a
// clusters generator with kind (matrix or merge), in either template mode.
func gitClustersSet(kind string, goTemplate bool, git, clusters string) string {
	var b strings.Builder
	b.WriteString("apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: s, namespace: argocd}\nspec:\n")
	fmt.Fprintf(&b, "  goTemplate: %v\n  generators:\n  - %s:\n", goTemplate, kind)
	if kind == "merge" {
		b.WriteString("      mergeKeys: [name]\n")
	}
	b.WriteString("      generators:\n      - " + clusters + "\n      - git: {repoURL: " + testRepoURL + ", revision: HEAD, " + git + "}\n")
	name, server, path := "'{{path.basename}}-{{nameNormalized}}'", "'{{server}}'", "'{{path}}'"
	if goTemplate {
		name, server, path = "'{{.path.basename}}-{{.nameNormalized}}'", "'{{.server}}'", "'{{.path.path}}'"
	}
	if kind == "merge" {
		if goTemplate {
			name = "'r{{.replicas}}-{{.nameNormalized}}'"
		} else {
			name = "'r{{replicas}}-{{nameNormalized}}'"
		}
	}
	fmt.Fprintf(&b, "  template:\n    metadata: {name: %s}\n    spec: {project: default, destination: {server: %s, namespace: x}, source: {repoURL: x, path: %s}}\n", name, server, path)
	return b.String()
}

func renderNames(t *testing.T, text string, r *Renderer) []string {
	t.Helper()
	a, err := Parse([]byte(text), "appset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Render(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, app := range res.Applications {
		names = append(names, app["metadata"].(map[string]any)["name"].(string)+" "+lookup(app, pathOf("spec", "destination", "server")).(string))
	}
	return names
}

// TestGitClusters combines git and clusters generators in a matrix and a
// merge, in both template modes, with a git repository and a directory.
func TestGitClusters(t *testing.T) {
	objs := &Objects{}
	if err := objs.Load([]byte(clusterSecretsYAML), "secrets.yaml"); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"apps/web/k.yaml": "", "apps/api/k.yaml": "",
		"clusters/staging/config.json": `{"name": "staging-01", "replicas": 1}`,
		"clusters/prod/config.json":    `{"name": "production_01/west", "replicas": 3}`,
		"clusters/gone/config.json":    `{"name": "gone", "replicas": 9}`,
	}
	for mode, dir := range testRepos(t, files) {
		repos := &LocalRepos{}
		if err := repos.Map(testRepoURL, dir); err != nil {
			t.Fatal(err)
		}
		r := &Renderer{Repos: repos, Objects: objs, Namespace: "namespace"}
		for _, goTemplate := range []bool{false, true} {
			matrix := renderNames(t, gitClustersSet("matrix", goTemplate, "directories: [{path: apps/*}]", "clusters: {selector: {matchLabels: {org: foo}}}"), r)
			want := []string{"api-staging-01 https://staging-01.example.com", "web-staging-01 https://staging-01.example.com"}
			if diff := cmp.Diff(want, matrix); diff != "" {
				t.Errorf("%s goTemplate=%v matrix (-want +got):\n%s", mode, goTemplate, diff)
			}
			merge := renderNames(t, gitClustersSet("merge", goTemplate, "files: [{path: clusters/*/config.json}]", "clusters: {selector: {matchExpressions: [{key: environment, operator: Exists}]}}"), r)
			want = []string{"r3-production-01-west https://production-01.example.com", "r1-staging-01 https://staging-01.example.com"}
			if diff := cmp.Diff(want, merge); diff != "" {
				t.Errorf("%s goTemplate=%v merge (-want +got):\n%s", mode, goTemplate, diff)
			}
		}
	}
}

func pathOf(keys ...string) document.Path {
	var p document.Path
	for _, k := range keys {
		p = append(p, document.Key(k))
	}
	return p
}

func benchSignature() *object.Signature {
	return &object.Signature{Name: "b", Email: "b@example.com", When: time.Unix(1700000000, 0)}
}

// benchRepo writes dirs app directories, as a plain directory or a
// committed git repository, once per benchmark binary.
func benchRepo(b *testing.B, dirs int, asGit bool) string {
	b.Helper()
	dir := b.TempDir()
	for i := 0; i < dirs; i++ {
		p := filepath.Join(dir, "apps", fmt.Sprintf("app-%04d", i))
		if err := os.MkdirAll(p, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "kustomization.yaml"), []byte("resources: []\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if asGit {
		repo, err := git.PlainInit(dir, false)
		if err != nil {
			b.Fatal(err)
		}
		wt, _ := repo.Worktree()
		if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
			b.Fatal(err)
		}
		if _, err := wt.Commit("apps", &git.CommitOptions{Author: benchSignature()}); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

func benchClusters(n int) []byte {
	var s strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&s, "---\napiVersion: v1\nkind: Secret\nmetadata: {name: c%02d, namespace: argocd, labels: {argocd.argoproj.io/secret-type: cluster, env: prod, region: r%d}}\nstringData: {name: cluster-%02d, server: 'https://c%02d.example.com', project: default}\n", i, i%4, i, i)
	}
	return []byte(s.String())
}

// BenchmarkGitClusters renders git (1,000 directories) × clusters (50
// Secrets), the most common ApplicationSet: 50,000 Applications, from a
// plain directory and from a git repository read through go-git (each
// iteration reads the repository afresh).
func BenchmarkGitClusters(b *testing.B) {
	const text = `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: bench, namespace: argocd}
spec:
  goTemplate: true
  generators:
  - matrix:
      generators:
      - git: {repoURL: https://github.com/example/gitops.git, revision: HEAD, directories: [{path: apps/*}]}
      - clusters: {selector: {matchLabels: {env: prod}}}
  template:
    metadata:
      name: '{{ .path.basename }}-{{ .nameNormalized }}'
      labels: {region: '{{ index .metadata.labels "region" }}'}
    spec:
      project: '{{ .project }}'
      source: {repoURL: https://github.com/example/gitops.git, targetRevision: HEAD, path: '{{ .path.path }}'}
      destination: {server: '{{ .server }}', namespace: '{{ .path.basename }}'}
`
	objs := &Objects{}
	if err := objs.Load(benchClusters(50), "clusters.yaml"); err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"dir", "git"} {
		b.Run(mode, func(b *testing.B) {
			dir := benchRepo(b, 1000, mode == "git")
			for b.Loop() {
				repos := &LocalRepos{}
				if err := repos.Map("https://github.com/example/gitops.git", dir); err != nil {
					b.Fatal(err)
				}
				a, err := Parse([]byte(text), "bench.yaml")
				if err != nil {
					b.Fatal(err)
				}
				r := &Renderer{Repos: repos, Objects: objs, Limits: Limits{MaxParamSets: 100000}}
				res, err := r.Render(context.Background(), a)
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Applications) != 50000 {
					b.Fatalf("%d Applications, want 50000", len(res.Applications))
				}
			}
		})
	}
}
