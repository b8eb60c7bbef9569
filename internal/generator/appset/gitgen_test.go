package appset

// Cases ported from Argo CD's tests of the git generator
// (applicationset/generators/git_test.go) and of the repo-server's file
// listing (util/git/git_test.go TestLsFilesForGitFileGeneratorGlobbingPatterns),
// each run against a real directory and against a real git repository read
// at a commit. Where Argo CD's tests mock the repo-server with a listing a
// real walk cannot produce (app4 under p1 without p1 itself), the expected
// sets here are those of a real repository.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-cmp/cmp"
)

const testRepoURL = "https://git.example.com/org/repo.git"

// writeTree writes files (path: content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// gitCommit commits everything under the work tree of repo and returns
// the commit.
func gitCommit(t *testing.T, repo *git.Repository, msg string) plumbing.Hash {
	t.Helper()
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	h, err := wt.Commit(msg, &git.CommitOptions{Author: &object.Signature{Name: "t", Email: "t@example.com", When: time.Unix(1700000000, 0)}})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// testRepos returns the same files as a plain directory and as a git
// repository whose work tree, after the commit, holds an extra file and
// directory that must not be seen.
func testRepos(t *testing.T, files map[string]string) map[string]string {
	t.Helper()
	plain := t.TempDir()
	writeTree(t, plain, files)
	gitDir := t.TempDir()
	repo, err := git.PlainInit(gitDir, false)
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, gitDir, files)
	if len(files) == 0 {
		writeTree(t, gitDir, map[string]string{"README": ""})
	}
	gitCommit(t, repo, "c1")
	writeTree(t, gitDir, map[string]string{"uncommitted/config.json": `{"x": 1}`, "zz-uncommitted.json": "{}"})
	return map[string]string{"dir": plain, "git": gitDir}
}

type gitCase struct {
	name        string
	files       map[string]string // the repository
	gen         string            // the git generator's fields beyond repoURL and revision
	goTemplate  bool
	newGlobbing bool
	version     string
	want        string // JSON list of parameter sets
	wantErr     string
}

func testAppSet(goTemplate bool, gen string) string {
	var b strings.Builder
	b.WriteString("apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: s, namespace: argocd}\nspec:\n")
	if goTemplate {
		b.WriteString("  goTemplate: true\n")
	}
	b.WriteString("  generators:\n")
	b.WriteString(gen)
	b.WriteString("  template:\n    metadata: {name: x}\n    spec: {project: default, destination: {server: https://kubernetes.default.svc, namespace: x}, source: {repoURL: x}}\n")
	return b.String()
}

func gitGen(fields string) string {
	var b strings.Builder
	b.WriteString("  - git:\n      repoURL: " + testRepoURL + "\n      revision: HEAD\n")
	for _, l := range strings.Split(strings.TrimSpace(fields), "\n") {
		b.WriteString("      " + l + "\n")
	}
	return b.String()
}

// firstParams evaluates the first generator of the ApplicationSet in text.
func firstParams(t *testing.T, text string, r *Renderer) ([]map[string]any, []string, error) {
	t.Helper()
	a, err := Parse([]byte(text), "appset.yaml")
	if err != nil {
		return nil, nil, err
	}
	ctx := context.Background()
	lim := r.Limits.withDefaults()
	x := &run{r: r, a: a, lim: lim, v: r.Version.orLatest(), eng: newEngine(a.GoTemplate, a.GoTemplateOptions, lim, newBudget(ctx, lim))}
	sets, err := x.params(ctx, a.entries[0][0], nil, "")
	return sets, append(a.warnings, x.warnings...), err
}

// asJSON normalizes parameter sets to their JSON form.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func runGitCases(t *testing.T, cases []gitCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for mode, dir := range testRepos(t, c.files) {
				t.Run(mode, func(t *testing.T) {
					repos := &LocalRepos{NewGlobbing: c.newGlobbing}
					if err := repos.Map(testRepoURL, dir); err != nil {
						t.Fatal(err)
					}
					r := &Renderer{Repos: repos}
					if c.version != "" {
						v, _, err := ParseVersion(c.version)
						if err != nil {
							t.Fatal(err)
						}
						r.Version = v
					}
					got, _, err := firstParams(t, testAppSet(c.goTemplate, gitGen(c.gen)), r)
					if c.wantErr != "" {
						if err == nil || !strings.Contains(err.Error(), c.wantErr) {
							t.Fatalf("error = %v, want one containing %q", err, c.wantErr)
						}
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					var want any
					if err := json.Unmarshal([]byte(c.want), &want); err != nil {
						t.Fatalf("bad want: %v", err)
					}
					if got == nil {
						got = []map[string]any{}
					}
					if diff := cmp.Diff(want, asJSON(t, got)); diff != "" {
						t.Errorf("params (-want +got):\n%s", diff)
					}
				})
			}
		})
	}
}

var dirRepo = map[string]string{
	"app1/k.yaml": "", "app2/k.yaml": "", "app_3/k.yaml": "", "p1/app4/k.yaml": "",
	".hidden/app5/k.yaml": "",
}

func TestGitDirectories(t *testing.T) {
	runGitCases(t, []gitCase{
		{
			name:  "happy flow - created apps",
			files: dirRepo,
			gen:   `directories: [{path: "*"}]`,
			want: `[
 {"path": "app1", "path.basename": "app1", "path.basenameNormalized": "app1", "path[0]": "app1"},
 {"path": "app2", "path.basename": "app2", "path.basenameNormalized": "app2", "path[0]": "app2"},
 {"path": "app_3", "path.basename": "app_3", "path.basenameNormalized": "app-3", "path[0]": "app_3"},
 {"path": "p1", "path.basename": "p1", "path.basenameNormalized": "p1", "path[0]": "p1"}]`,
		},
		{
			name:  "It prefixes path parameters with PathParamPrefix",
			files: dirRepo,
			gen:   "directories: [{path: \"*\"}]\npathParamPrefix: myRepo",
			want: `[
 {"myRepo.path": "app1", "myRepo.path.basename": "app1", "myRepo.path.basenameNormalized": "app1", "myRepo.path[0]": "app1"},
 {"myRepo.path": "app2", "myRepo.path.basename": "app2", "myRepo.path.basenameNormalized": "app2", "myRepo.path[0]": "app2"},
 {"myRepo.path": "app_3", "myRepo.path.basename": "app_3", "myRepo.path.basenameNormalized": "app-3", "myRepo.path[0]": "app_3"},
 {"myRepo.path": "p1", "myRepo.path.basename": "p1", "myRepo.path.basenameNormalized": "p1", "myRepo.path[0]": "p1"}]`,
		},
		{
			name:  "It filters application according to the paths",
			files: map[string]string{"app1/k": "", "p1/app2/k": "", "p1/p2/app3/k": "", "p1/p2/p3/app4/k": ""},
			gen:   `directories: [{path: "p1/*"}, {path: "p1/*/*"}]`,
			want: `[
 {"path": "p1/app2", "path.basename": "app2", "path[0]": "p1", "path[1]": "app2", "path.basenameNormalized": "app2"},
 {"path": "p1/p2", "path.basename": "p2", "path[0]": "p1", "path[1]": "p2", "path.basenameNormalized": "p2"},
 {"path": "p1/p2/app3", "path.basename": "app3", "path[0]": "p1", "path[1]": "p2", "path[2]": "app3", "path.basenameNormalized": "app3"},
 {"path": "p1/p2/p3", "path.basename": "p3", "path[0]": "p1", "path[1]": "p2", "path[2]": "p3", "path.basenameNormalized": "p3"}]`,
		},
		{
			name:  "It filters application according to the paths with Exclude",
			files: map[string]string{"app1/k": "", "app2/k": "", "p1/app2/k": "", "p1/app3/k": "", "p2/app3/k": ""},
			gen:   `directories: [{path: "p1/*", exclude: true}, {path: "*"}, {path: "*/*"}]`,
			want: `[
 {"path": "app1", "path.basename": "app1", "path[0]": "app1", "path.basenameNormalized": "app1"},
 {"path": "app2", "path.basename": "app2", "path[0]": "app2", "path.basenameNormalized": "app2"},
 {"path": "p1", "path.basename": "p1", "path[0]": "p1", "path.basenameNormalized": "p1"},
 {"path": "p2", "path.basename": "p2", "path[0]": "p2", "path.basenameNormalized": "p2"},
 {"path": "p2/app3", "path.basename": "app3", "path[0]": "p2", "path[1]": "app3", "path.basenameNormalized": "app3"}]`,
		},
		{
			name:  "Expecting same exclude behavior with different order",
			files: map[string]string{"app1/k": "", "app2/k": "", "p1/app2/k": "", "p1/app3/k": "", "p2/app3/k": ""},
			gen:   `directories: [{path: "*"}, {path: "*/*"}, {path: "p1/*", exclude: true}]`,
			want: `[
 {"path": "app1", "path.basename": "app1", "path[0]": "app1", "path.basenameNormalized": "app1"},
 {"path": "app2", "path.basename": "app2", "path[0]": "app2", "path.basenameNormalized": "app2"},
 {"path": "p1", "path.basename": "p1", "path[0]": "p1", "path.basenameNormalized": "p1"},
 {"path": "p2", "path.basename": "p2", "path[0]": "p2", "path.basenameNormalized": "p2"},
 {"path": "p2/app3", "path.basename": "app3", "path[0]": "p2", "path[1]": "app3", "path.basenameNormalized": "app3"}]`,
		},
		{
			name:  "Value variable interpolation",
			files: map[string]string{"app1/k": "", "p1/app2/k": ""},
			gen:   "directories: [{path: \"*/*\"}]\nvalues: {foo: bar, aaa: \"{{ path[0] }}\", no-op: \"{{ this-does-not-exist }}\"}",
			want: `[
 {"values.foo": "bar", "values.no-op": "{{ this-does-not-exist }}", "values.aaa": "p1", "path": "p1/app2", "path.basename": "app2", "path[0]": "p1", "path[1]": "app2", "path.basenameNormalized": "app2"}]`,
		},
		{
			name:  "handles an empty repository",
			files: map[string]string{},
			gen:   `directories: [{path: "*"}]`,
			want:  `[]`,
		},
		{
			name:  "walk order: parents first, siblings by name",
			files: map[string]string{"a/k": "", "a-c/k": "", "a/b/k": "", "B/k": ""},
			gen:   `directories: [{path: "*"}, {path: "*/*"}]`,
			want: `[
 {"path": "B", "path.basename": "B", "path[0]": "B", "path.basenameNormalized": "b"},
 {"path": "a", "path.basename": "a", "path[0]": "a", "path.basenameNormalized": "a"},
 {"path": "a/b", "path.basename": "b", "path[0]": "a", "path[1]": "b", "path.basenameNormalized": "b"},
 {"path": "a-c", "path.basename": "a-c", "path[0]": "a-c", "path.basenameNormalized": "a-c"}]`,
		},
		{
			name:  "hidden directories are not listed, even by name",
			files: dirRepo,
			gen:   `directories: [{path: ".hidden"}, {path: ".hidden/*"}]`,
			want:  `[]`,
		},
		{
			name:    "a bad pattern is an error",
			files:   dirRepo,
			gen:     `directories: [{path: "[a-"}]`,
			wantErr: `directories[0].path "[a-" is not a valid pattern`,
		},
		{
			name:       "goTemplate: happy flow - created apps",
			files:      map[string]string{"app1/k": "", "app_3/k": ""},
			gen:        `directories: [{path: "*"}]`,
			goTemplate: true,
			want: `[
 {"path": {"path": "app1", "basename": "app1", "basenameNormalized": "app1", "segments": ["app1"]}},
 {"path": {"path": "app_3", "basename": "app_3", "basenameNormalized": "app-3", "segments": ["app_3"]}}]`,
		},
		{
			name:       "goTemplate: It prefixes path parameters with PathParamPrefix, values",
			files:      map[string]string{"p1/app2/k": ""},
			gen:        "directories: [{path: \"*/*\"}]\npathParamPrefix: myRepo\nvalues: {seg: \"{{ index .myRepo.path.segments 0 }}\"}",
			goTemplate: true,
			want: `[
 {"myRepo": {"path": {"path": "p1/app2", "basename": "app2", "basenameNormalized": "app2", "segments": ["p1", "app2"]}}, "values": {"seg": "p1"}}]`,
		},
		{
			name:       "goTemplate: It filters application according to the paths with Exclude",
			files:      map[string]string{"app1/k": "", "p1/app2/k": "", "p2/app3/k": ""},
			gen:        `directories: [{path: "*/*"}, {path: "p1/*", exclude: true}]`,
			goTemplate: true,
			want: `[
 {"path": {"path": "p2/app3", "basename": "app3", "basenameNormalized": "app3", "segments": ["p2", "app3"]}}]`,
		},
	})
}

const prodConfig = `{
   "cluster": {"owner": "john.doe@example.com", "name": "production", "address": "https://kubernetes.default.svc"},
   "key1": "val1",
   "key2": {"key2_1": "val2_1", "key2_2": {"key2_2_1": "val2_2_1"}},
   "key3": 123
}`

const stagingConfig = `{"cluster": {"owner": "foo.bar@example.com", "name": "staging", "address": "https://kubernetes.default.svc"}}`

func TestGitFiles(t *testing.T) {
	runGitCases(t, []gitCase{
		{
			name:  "happy flow: create params from git files",
			files: map[string]string{"cluster-config/production/config.json": prodConfig, "cluster-config/staging/config.json": stagingConfig},
			gen:   `files: [{path: "**/config.json"}]`,
			want: `[
 {"cluster.owner": "john.doe@example.com", "cluster.name": "production", "cluster.address": "https://kubernetes.default.svc",
  "key1": "val1", "key2.key2_1": "val2_1", "key2.key2_2.key2_2_1": "val2_2_1", "key3": "123",
  "path": "cluster-config/production", "path.basename": "production", "path[0]": "cluster-config", "path[1]": "production",
  "path.basenameNormalized": "production", "path.filename": "config.json", "path.filenameNormalized": "config.json"},
 {"cluster.owner": "foo.bar@example.com", "cluster.name": "staging", "cluster.address": "https://kubernetes.default.svc",
  "path": "cluster-config/staging", "path.basename": "staging", "path[0]": "cluster-config", "path[1]": "staging",
  "path.basenameNormalized": "staging", "path.filename": "config.json", "path.filenameNormalized": "config.json"}]`,
		},
		{
			name:  "Value variable interpolation",
			files: map[string]string{"cluster-config/staging/config.json": stagingConfig},
			gen:   "files: [{path: \"**/config.json\"}]\nvalues: {aaa: \"{{ cluster.owner }}\", no-op: \"{{ this-does-not-exist }}\"}",
			want: `[
 {"cluster.owner": "foo.bar@example.com", "cluster.name": "staging", "cluster.address": "https://kubernetes.default.svc",
  "path": "cluster-config/staging", "path.basename": "staging", "path[0]": "cluster-config", "path[1]": "staging",
  "path.basenameNormalized": "staging", "path.filename": "config.json", "path.filenameNormalized": "config.json",
  "values.aaa": "foo.bar@example.com", "values.no-op": "{{ this-does-not-exist }}"}]`,
		},
		{
			name:    "test invalid JSON file returns error",
			files:   map[string]string{"cluster-config/production/config.json": "invalid json file"},
			gen:     `files: [{path: "**/config.json"}]`,
			wantErr: "file cluster-config/production/config.json of " + testRepoURL,
		},
		{
			name: "test JSON array",
			files: map[string]string{"cluster-config/production/config.json": `[
 {"cluster": {"owner": "john.doe@example.com", "name": "production", "address": "https://kubernetes.default.svc", "inner": {"one": "two"}}},
 {"cluster": {"owner": "john.doe@example.com", "name": "staging", "address": "https://kubernetes.default.svc"}}]`},
			gen: `files: [{path: "**/config.json"}]`,
			want: `[
 {"cluster.owner": "john.doe@example.com", "cluster.name": "production", "cluster.address": "https://kubernetes.default.svc", "cluster.inner.one": "two",
  "path": "cluster-config/production", "path.basename": "production", "path[0]": "cluster-config", "path[1]": "production",
  "path.basenameNormalized": "production", "path.filename": "config.json", "path.filenameNormalized": "config.json"},
 {"cluster.owner": "john.doe@example.com", "cluster.name": "staging", "cluster.address": "https://kubernetes.default.svc",
  "path": "cluster-config/production", "path.basename": "production", "path[0]": "cluster-config", "path[1]": "production",
  "path.basenameNormalized": "production", "path.filename": "config.json", "path.filenameNormalized": "config.json"}]`,
		},
		{
			name: "Test YAML flow",
			files: map[string]string{"cluster-config/production/config.yaml": `
cluster:
  owner: john.doe@example.com
  name: production
  address: https://kubernetes.default.svc
key1: val1
key2:
  key2_1: val2_1
  key2_2:
    key2_2_1: val2_2_1
`},
			gen: `files: [{path: "**/config.yaml"}]`,
			want: `[
 {"cluster.owner": "john.doe@example.com", "cluster.name": "production", "cluster.address": "https://kubernetes.default.svc",
  "key1": "val1", "key2.key2_1": "val2_1", "key2.key2_2.key2_2_1": "val2_2_1",
  "path": "cluster-config/production", "path.basename": "production", "path[0]": "cluster-config", "path[1]": "production",
  "path.basenameNormalized": "production", "path.filename": "config.yaml", "path.filenameNormalized": "config.yaml"}]`,
		},
		{
			name:  "test YAML array",
			files: map[string]string{"cluster-config/production/config.yaml": "- cluster: {name: production}\n- cluster: {name: staging}\n"},
			gen:   `files: [{path: "**/config.yaml"}]`,
			want: `[
 {"cluster.name": "production", "path": "cluster-config/production", "path.basename": "production", "path[0]": "cluster-config", "path[1]": "production",
  "path.basenameNormalized": "production", "path.filename": "config.yaml", "path.filenameNormalized": "config.yaml"},
 {"cluster.name": "staging", "path": "cluster-config/production", "path.basename": "production", "path[0]": "cluster-config", "path[1]": "production",
  "path.basenameNormalized": "production", "path.filename": "config.yaml", "path.filenameNormalized": "config.yaml"}]`,
		},
		{
			name:  "test empty YAML array (3.2 and later: no set)",
			files: map[string]string{"cluster-config/production/config.yaml": "[]"},
			gen:   `files: [{path: "**/config.yaml"}]`,
			want:  `[]`,
		},
		{
			name:    "test empty YAML array (before 3.2: one set)",
			files:   map[string]string{"cluster-config/production/config.yaml": "[]"},
			gen:     `files: [{path: "**/config.yaml"}]`,
			version: "3.1",
			want: `[{"path": "cluster-config/production", "path.basename": "production", "path[0]": "cluster-config", "path[1]": "production",
  "path.basenameNormalized": "production", "path.filename": "config.yaml", "path.filenameNormalized": "config.yaml"}]`,
		},
		{
			name:  "empty file returns path parameters",
			files: map[string]string{"path/dir/file_name.yaml": ""},
			gen:   `files: [{path: "path/dir/file_name.yaml"}]`,
			want: `[{"path": "path/dir", "path.basename": "dir", "path.filename": "file_name.yaml", "path.basenameNormalized": "dir",
  "path.filenameNormalized": "file-name.yaml", "path[0]": "path", "path[1]": "dir"}]`,
		},
		{
			name:  "path parameter are prefixed",
			files: map[string]string{"path/dir/file_name.yaml": "foo:\n  bar: baz\n"},
			gen:   "files: [{path: \"path/dir/file_name.yaml\"}]\npathParamPrefix: myRepo",
			want: `[{"foo.bar": "baz", "myRepo.path": "path/dir", "myRepo.path.basename": "dir", "myRepo.path.filename": "file_name.yaml",
  "myRepo.path.basenameNormalized": "dir", "myRepo.path.filenameNormalized": "file-name.yaml", "myRepo.path[0]": "path", "myRepo.path[1]": "dir"}]`,
		},
		{
			name:       "goTemplate: file parameters are added to params with go template",
			files:      map[string]string{"path/dir/file_name.yaml": "foo:\n  bar: baz\nnum: 3\nn: 4\n"},
			gen:        "files: [{path: \"path/dir/file_name.yaml\"}]\nvalues: {somekey: \"{{.path.basename}}\"}",
			goTemplate: true,
			want: `[{"values": {"somekey": "dir"}, "foo": {"bar": "baz"}, "num": 3, "false": 4,
  "path": {"path": "path/dir", "basename": "dir", "filename": "file_name.yaml", "basenameNormalized": "dir",
           "filenameNormalized": "file-name.yaml", "segments": ["path", "dir"]}}]`,
		},
		{
			name:       "goTemplate: path parameter are prefixed with go template and values",
			files:      map[string]string{"path/dir/file_name.yaml": "foo:\n  bar: baz\n"},
			gen:        "files: [{path: \"path/dir/file_name.yaml\"}]\npathParamPrefix: myRepo\nvalues: {somekey: \"{{.myRepo.path.basename}}\"}",
			goTemplate: true,
			want: `[{"foo": {"bar": "baz"}, "values": {"somekey": "dir"},
  "myRepo": {"path": {"path": "path/dir", "basename": "dir", "filename": "file_name.yaml", "basenameNormalized": "dir",
             "filenameNormalized": "file-name.yaml", "segments": ["path", "dir"]}}}]`,
		},
		{
			name:  "a file's path key is overridden by the path parameters",
			files: map[string]string{"a/c.json": `{"path": "mine", "values": {"x": "y"}}`},
			gen:   "files: [{path: a/c.json}]\nvalues: {v: \"{{path}}\"}",
			want: `[{"path": "a", "path.basename": "a", "path.filename": "c.json", "path.basenameNormalized": "a",
  "path.filenameNormalized": "c.json", "path[0]": "a", "values.x": "y", "values.v": "a"}]`,
		},
	})
}

// globRepo is the repository of Argo CD's TestLsFilesForGitFileGeneratorGlobbingPatterns.
var globRepo = map[string]string{
	"cluster-charts/cluster1/mychart/charts/mysubchart/values.yaml": "env: testing",
	"cluster-charts/cluster1/mychart/values.yaml":                   "env: staging",
	"cluster-charts/cluster1/myotherchart/values.yaml":              "env: prod",
	"cluster-charts/cluster2/values.yaml":                           "env: dev",
	"some-path/values.yaml":                                         "env: p",
	"some-path/staging/values.yaml":                                 "env: s",
	"cluster-config/engineering/production/config.json":             "{}",
	"cluster-config/engineering/dev/config.json":                    "{}",
	"p1/p2/config.json":                                             "{}",
	"p1/app2/config.json":                                           "{}",
	"p1/app3/config.json":                                           "{}",
	"p1/config.json":                                                "{}",
}

func TestGitFileGlobbing(t *testing.T) {
	cases := []struct {
		pattern  string
		newGlob  bool
		expected []string
	}{
		{"**/config.json", true, []string{"cluster-config/engineering/dev/config.json", "cluster-config/engineering/production/config.json", "p1/app2/config.json", "p1/app3/config.json", "p1/config.json", "p1/p2/config.json"}},
		{"**/config.json", false, []string{"cluster-config/engineering/dev/config.json", "cluster-config/engineering/production/config.json", "p1/app2/config.json", "p1/app3/config.json", "p1/config.json", "p1/p2/config.json"}},
		{"some-path/*.yaml", true, []string{"some-path/values.yaml"}},
		{"some-path/*.yaml", false, []string{"some-path/staging/values.yaml", "some-path/values.yaml"}},
		{"p1/**/config.json", true, []string{"p1/app2/config.json", "p1/app3/config.json", "p1/config.json", "p1/p2/config.json"}},
		{"p1/**/config.json", false, []string{"p1/app2/config.json", "p1/app3/config.json", "p1/p2/config.json"}},
		{"cluster-config/**/config.json", true, []string{"cluster-config/engineering/dev/config.json", "cluster-config/engineering/production/config.json"}},
		{"cluster-config/**/config.json", false, []string{"cluster-config/engineering/dev/config.json", "cluster-config/engineering/production/config.json"}},
		{"cluster-config/*/dev/config.json", true, []string{"cluster-config/engineering/dev/config.json"}},
		{"cluster-config/*/dev/config.json", false, []string{"cluster-config/engineering/dev/config.json"}},
		{"cluster-charts/*/*/values.yaml", true, []string{"cluster-charts/cluster1/mychart/values.yaml", "cluster-charts/cluster1/myotherchart/values.yaml"}},
		{"cluster-charts/*/*/values.yaml", false, []string{"cluster-charts/cluster1/mychart/charts/mysubchart/values.yaml", "cluster-charts/cluster1/mychart/values.yaml", "cluster-charts/cluster1/myotherchart/values.yaml"}},
		// git pathspecs: a directory names every file below it; ./ and "." as git reads them.
		{"p1/app2", false, []string{"p1/app2/config.json"}},
		{"./p1/app2/", false, []string{"p1/app2/config.json"}},
		{"p1/[a-b]pp?/*.json", false, []string{"p1/app2/config.json", "p1/app3/config.json"}},
		{"p1/[!a]*", false, []string{"p1/config.json", "p1/p2/config.json"}},
		{"p1/app[[:digit:]]/config.json", false, []string{"p1/app2/config.json", "p1/app3/config.json"}},
	}
	repos := testRepos(t, globRepo)
	for _, c := range cases {
		for mode, dir := range repos {
			repos := &LocalRepos{NewGlobbing: c.newGlob}
			if err := repos.Map(testRepoURL, dir); err != nil {
				t.Fatal(err)
			}
			files, err := repos.Files(context.Background(), testRepoURL, "HEAD", c.pattern)
			if err != nil {
				t.Fatalf("%s Files(%q, new=%v): %v", mode, c.pattern, c.newGlob, err)
			}
			var got []string
			for f := range files {
				got = append(got, f)
			}
			sortStrings(got)
			if diff := cmp.Diff(c.expected, got); diff != "" {
				t.Errorf("%s Files(%q, new globbing %v) (-want +got):\n%s", mode, c.pattern, c.newGlob, diff)
			}
		}
	}
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// TestGitHiddenAndVersions: --include-hidden-directories lists hidden
// directories; files' exclude is ignored (an include) before 3.1.
func TestGitHiddenAndVersions(t *testing.T) {
	for mode, dir := range testRepos(t, dirRepo) {
		repos := &LocalRepos{IncludeHiddenDirectories: true}
		if err := repos.Map(testRepoURL, dir); err != nil {
			t.Fatal(err)
		}
		got, err := repos.Directories(context.Background(), testRepoURL, "HEAD")
		if err != nil {
			t.Fatal(err)
		}
		want := []string{".hidden", ".hidden/app5", "app1", "app2", "app_3", "p1", "p1/app4"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: hidden directories (-want +got):\n%s", mode, diff)
		}
	}
	files := map[string]string{"a/config.json": `{"n": "a"}`, "b/config.json": `{"n": "b"}`}
	gen := gitGen("files: [{path: \"*/config.json\"}, {path: b/config.json, exclude: true}]")
	for _, c := range []struct {
		version string
		want    []string
		warn    bool
	}{{"3.1", []string{"a"}, false}, {"3.0", []string{"a", "b"}, true}} {
		dirs := testRepos(t, files)
		repos := &LocalRepos{}
		if err := repos.Map(testRepoURL, dirs["git"]); err != nil {
			t.Fatal(err)
		}
		v, _, _ := ParseVersion(c.version)
		sets, warnings, err := firstParams(t, testAppSet(false, gen), &Renderer{Repos: repos, Version: v})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range sets {
			got = append(got, s["n"].(string))
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s: files (-want +got):\n%s", c.version, diff)
		}
		warned := strings.Contains(strings.Join(warnings, "\n"), "files[1].exclude is ignored: Argo CD 3.0 has no exclude for files")
		if warned != c.warn {
			t.Errorf("%s: warnings %q", c.version, warnings)
		}
	}
}
