package appset

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/google/go-cmp/cmp"
)

// TestLocalReposRevisions reads one git repository at a branch, a tag, a
// commit (full and abbreviated), an origin branch and HEAD.
func TestLocalReposRevisions(t *testing.T) {
	dir := t.TempDir()
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, dir, map[string]string{"v1/k": ""})
	c1 := gitCommit(t, repo, "c1")
	if _, err := repo.CreateTag("v1.0", c1, nil); err != nil {
		t.Fatal(err)
	}
	if err := repo.Storer.SetReference(plumbing.NewHashReference("refs/heads/release", c1)); err != nil {
		t.Fatal(err)
	}
	if err := repo.Storer.SetReference(plumbing.NewHashReference("refs/remotes/origin/feature", c1)); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{testRepoURL}}); err != nil {
		t.Fatal(err)
	}
	writeTree(t, dir, map[string]string{"v2/k": ""})
	c2 := gitCommit(t, repo, "c2")

	repos := &LocalRepos{}
	if err := repos.Map(testRepoURL, dir); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rev  string
		want []string
	}{
		{"", []string{"v1", "v2"}},
		{"HEAD", []string{"v1", "v2"}},
		{"master", []string{"v1", "v2"}},
		{"release", []string{"v1"}},
		{"refs/heads/release", []string{"v1"}},
		{"v1.0", []string{"v1"}},
		{"feature", []string{"v1"}},
		{c1.String(), []string{"v1"}},
		{c1.String()[:8], []string{"v1"}},
		{c2.String(), []string{"v1", "v2"}},
	} {
		got, err := repos.Directories(context.Background(), testRepoURL, c.rev)
		if err != nil {
			t.Errorf("Directories(%q): %v", c.rev, err)
			continue
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("Directories(%q) (-want +got):\n%s", c.rev, diff)
		}
	}
	_, err = repos.Directories(context.Background(), testRepoURL, "nope")
	if err == nil || !strings.Contains(err.Error(), `revision "nope" is neither a branch`) || !strings.Contains(err.Error(), "--repo "+testRepoURL+"=") {
		t.Errorf("unknown revision: error = %v", err)
	}
	// The work tree mode reads the files on disk, revision ignored.
	writeTree(t, dir, map[string]string{"v3/k": ""})
	wt := &LocalRepos{Worktree: true}
	if err := wt.Map(testRepoURL, dir); err != nil {
		t.Fatal(err)
	}
	got, err := wt.Directories(context.Background(), testRepoURL, "release")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"v1", "v2", "v3"}, got); diff != "" {
		t.Errorf("Worktree Directories (-want +got):\n%s", diff)
	}
}

func TestLocalReposErrors(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a/big.json": strings.Repeat(" ", 2000) + "{}", "a/small.json": "{}", "d/1/2/3/4/k": ""})
	ctx := context.Background()
	repos := &LocalRepos{Limits: RepoLimits{MaxFileBytes: 1000}}
	if err := repos.Map("https://other.example.com/x", dir); err != nil {
		t.Fatal(err)
	}
	_, err := repos.Files(ctx, testRepoURL, "HEAD", "*")
	if !errors.Is(err, ErrRepoNotMapped) || !strings.Contains(err.Error(), "--repo "+testRepoURL+"=DIR") || !strings.Contains(err.Error(), "mapped: https://other.example.com/x") {
		t.Errorf("unmapped: error = %v", err)
	}
	// URLs compare as Argo CD compares them.
	if _, err := repos.Files(ctx, "HTTPS://other.example.com/x.git/", "HEAD", "a/small.json"); err != nil {
		t.Errorf("normalized URL: %v", err)
	}
	_, err = repos.Files(ctx, "https://other.example.com/x", "HEAD", "a/*.json")
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "a/big.json") {
		t.Errorf("big file: error = %v", err)
	}
	for name, lim := range map[string]RepoLimits{
		"entries": {MaxEntries: 5},
		"depth":   {MaxDepth: 3},
		"files":   {MaxFiles: 1},
		"bytes":   {MaxBytes: 3},
	} {
		r := &LocalRepos{Limits: lim}
		if err := r.Map(testRepoURL, dir); err != nil {
			t.Fatal(err)
		}
		_, err := r.Files(ctx, testRepoURL, "HEAD", "a")
		if !errors.Is(err, ErrTooLarge) {
			t.Errorf("limit %s: error = %v, want ErrTooLarge", name, err)
		}
	}
	if err := repos.Map(testRepoURL, filepath.Join(dir, "a", "small.json")); err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Errorf("Map of a file: %v", err)
	}
	if err := repos.Map("https://other.example.com/x.git", dir); err == nil || !strings.Contains(err.Error(), "mapped twice") {
		t.Errorf("Map twice: %v", err)
	}
}

// TestLocalReposSymlinks: a link inside the repository is followed, one
// leading outside is an error, for a directory and for a git tree.
func TestLocalReposSymlinks(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret.json")
	if err := os.WriteFile(outside, []byte(`{"secret": "s"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"dir", "git"} {
		dir := t.TempDir()
		writeTree(t, dir, map[string]string{"a/real.json": `{"x": 1}`})
		for name, target := range map[string]string{"a/in.json": "real.json", "b/out.json": outside, "b/up.json": "../../secret.json"} {
			os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755)
			if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
		if mode == "git" {
			repo, err := git.PlainInit(dir, false)
			if err != nil {
				t.Fatal(err)
			}
			gitCommit(t, repo, "links")
		}
		repos := &LocalRepos{}
		if err := repos.Map(testRepoURL, dir); err != nil {
			t.Fatal(err)
		}
		files, err := repos.Files(context.Background(), testRepoURL, "HEAD", "a/*.json")
		if err != nil {
			t.Fatalf("%s: inside link: %v", mode, err)
		}
		if string(files["a/in.json"]) != `{"x": 1}` {
			t.Errorf("%s: a/in.json = %q", mode, files["a/in.json"])
		}
		for _, p := range []string{"b/out.json", "b/up.json"} {
			files, err := repos.Files(context.Background(), testRepoURL, "HEAD", p)
			if err == nil {
				t.Errorf("%s: %s read through a link out of the repository: %q", mode, p, files[p])
			}
		}
	}
}

// TestLocalReposWorktreeHidesDotGit: a checkout read as a directory, hidden
// directories included, never lists its .git.
func TestLocalReposWorktreeHidesDotGit(t *testing.T) {
	dir := testRepos(t, map[string]string{".github/workflows/ci.yaml": "", "app/k": ""})["git"]
	repos := &LocalRepos{Worktree: true, IncludeHiddenDirectories: true}
	if err := repos.Map(testRepoURL, dir); err != nil {
		t.Fatal(err)
	}
	got, err := repos.Directories(context.Background(), testRepoURL, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".github", ".github/workflows", "app", "uncommitted"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Directories (-want +got):\n%s", diff)
	}
	files, err := repos.Files(context.Background(), testRepoURL, "HEAD", "*")
	if err != nil {
		t.Fatal(err)
	}
	for f := range files {
		if strings.HasPrefix(f, ".git/") {
			t.Errorf("Files lists %s", f)
		}
	}
	if _, ok := files["zz-uncommitted.json"]; !ok {
		t.Errorf("the work tree's uncommitted file is missing: %v", files)
	}
}
