package cmpserver_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/cmpserver"
	"github.com/strata-dev/strata/internal/params"
)

// infoPlugin is a plugin that only describes itself: Local.Request reads
// nothing else of it.
type infoPlugin struct{ info cmpserver.Info }

func (p infoPlugin) Info() cmpserver.Info                               { return p.info }
func (infoPlugin) Match(context.Context, *params.Request) (bool, error) { return false, nil }
func (infoPlugin) Announce(context.Context, *params.Request) ([]params.Announcement, error) {
	return nil, nil
}
func (infoPlugin) Generate(context.Context, *params.Request) ([]string, error) { return nil, nil }

func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(content, "-> "); ok {
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLocalInPlace: a plugin that never writes the repository gets the
// checkout itself, once no symbolic link in it leads outside the root; any
// other plugin gets a private copy.
func TestLocalInPlace(t *testing.T) {
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"secret": "x"})
	for _, tc := range []struct {
		name    string
		files   map[string]string
		wantErr string
	}{
		{name: "plain", files: map[string]string{"app/Chart.yaml": "name: a", "other/v.yaml": "a: 1"}},
		{name: "links inside", files: map[string]string{"app/Chart.yaml": "name: a", "app/v.yaml": "-> ../other/v.yaml", "other/v.yaml": "a: 1", "app/dangling": "-> missing", "app/dir": "-> ../other"}},
		{name: "a link outside", files: map[string]string{"app/Chart.yaml": "name: a", "app/v.yaml": "-> " + filepath.Join(outside, "secret")}, wantErr: "symbolic link app/v.yaml leads outside the repository root"},
		{name: "a relative link outside", files: map[string]string{"app/Chart.yaml": "name: a", "app/sub/v.yaml": "-> ../../../x"}, wantErr: "symbolic link app/sub/v.yaml leads outside"},
		{name: "a dangling link outside", files: map[string]string{"app/Chart.yaml": "name: a", "app/d": "-> /nonexistent/x"}, wantErr: "symbolic link app/d leads outside"},
		{name: "a link outside in .git is not read", files: map[string]string{"app/Chart.yaml": "name: a", ".git/x": "-> " + outside}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			writeTree(t, root, tc.files)
			for _, readOnly := range []bool{true, false} {
				l := &cmpserver.Local{Plugin: infoPlugin{cmpserver.Info{Name: "p", ReadOnlyRepo: readOnly}}, RepoRoot: root, AppDir: filepath.Join(root, "app"), TempDir: t.TempDir()}
				req, cleanup, err := l.Request(context.Background())
				if err != nil {
					if tc.wantErr == "" || !strings.Contains(err.Error(), tc.wantErr) && readOnly {
						t.Fatalf("ReadOnlyRepo=%v: %v, want error %q", readOnly, err, tc.wantErr)
					}
					continue
				}
				defer cleanup()
				if tc.wantErr != "" {
					t.Fatalf("ReadOnlyRepo=%v: no error, want %q", readOnly, tc.wantErr)
				}
				inPlace := req.RepoRoot == root
				if inPlace != readOnly {
					t.Errorf("ReadOnlyRepo=%v: RepoRoot %s, checkout %s", readOnly, req.RepoRoot, root)
				}
				if req.AppPath != filepath.Join(req.RepoRoot, "app") {
					t.Errorf("AppPath = %s, want app in %s", req.AppPath, req.RepoRoot)
				}
				if _, err := os.Stat(filepath.Join(req.AppPath, "Chart.yaml")); err != nil {
					t.Error(err)
				}
				if !strings.Contains(strings.Join(req.Env, "\n"), "ARGOCD_APP_SOURCE_PATH=app") {
					t.Errorf("env %v lacks ARGOCD_APP_SOURCE_PATH=app", req.Env)
				}
			}
		})
	}
}

// TestLocalOutsideRoot: the application directory must be inside the
// repository root, in place or not.
func TestLocalOutsideRoot(t *testing.T) {
	root, other := t.TempDir(), t.TempDir()
	for _, readOnly := range []bool{true, false} {
		l := &cmpserver.Local{Plugin: infoPlugin{cmpserver.Info{Name: "p", ReadOnlyRepo: readOnly}}, RepoRoot: root, AppDir: other}
		if _, _, err := l.Request(context.Background()); err == nil || !strings.Contains(err.Error(), "is not inside the repository root") {
			t.Errorf("ReadOnlyRepo=%v: error %v, want not inside the repository root", readOnly, err)
		}
	}
}
