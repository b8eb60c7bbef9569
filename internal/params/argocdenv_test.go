package params_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/params"
)

func TestBuildEnv(t *testing.T) {
	repo := t.TempDir()
	app := filepath.Join(repo, "apps", "web")
	if err := os.MkdirAll(app, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(repo, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		dir      string
		repoRoot string
		environ  []string
		want     *params.Request
		wantErr  string
	}{
		{
			name: "no environment: the directory is the repository",
			dir:  app,
			want: &params.Request{RepoRoot: app, AppPath: app},
		},
		{
			name: "source path gives the root; only Argo CD's variables are kept",
			dir:  app,
			environ: []string{
				"HOME=/root", "ARGOCD_APP_NAME=web", "ARGOCD_APP_SOURCE_PATH=apps/web",
				"ARGOCD_ENV_FOO=1", "KUBE_VERSION=1.31", "KUBE_API_VERSIONS=v1", "KUBECONFIG=x",
				"PARAM_X=1", `ARGOCD_APP_PARAMETERS=[{"name":"x","string":"1"}]`,
			},
			want: &params.Request{
				AppName: "web", RepoRoot: repo, AppPath: app,
				Env: []string{"ARGOCD_APP_NAME=web", "ARGOCD_APP_SOURCE_PATH=apps/web",
					"ARGOCD_ENV_FOO=1", "KUBE_VERSION=1.31", "KUBE_API_VERSIONS=v1"},
				Parameters: []params.Parameter{{Name: "x", String: ptr("1")}},
			},
		},
		{
			name:    "source path . is the directory",
			dir:     app,
			environ: []string{"ARGOCD_APP_SOURCE_PATH=."},
			want:    &params.Request{RepoRoot: app, AppPath: app, Env: []string{"ARGOCD_APP_SOURCE_PATH=."}},
		},
		{
			name:     "an explicit root wins over the source path",
			dir:      app,
			repoRoot: "/elsewhere",
			environ:  []string{"ARGOCD_APP_SOURCE_PATH=not/this"},
			want:     &params.Request{RepoRoot: "/elsewhere", AppPath: app, Env: []string{"ARGOCD_APP_SOURCE_PATH=not/this"}},
		},
		{
			name:    "the first of duplicate entries wins, as in os.Getenv",
			dir:     app,
			environ: []string{"ARGOCD_APP_NAME=a", "ARGOCD_APP_NAME=b"},
			want:    &params.Request{AppName: "a", RepoRoot: app, AppPath: app, Env: []string{"ARGOCD_APP_NAME=a", "ARGOCD_APP_NAME=b"}},
		},
		{
			name:    "source path not ending the directory",
			dir:     app,
			environ: []string{"ARGOCD_APP_SOURCE_PATH=apps/api"},
			wantErr: `does not end in ARGOCD_APP_SOURCE_PATH "apps/api"`,
		},
		{
			name:    "source path leaving the repository",
			dir:     app,
			environ: []string{"ARGOCD_APP_SOURCE_PATH=../web"},
			wantErr: `does not end in ARGOCD_APP_SOURCE_PATH "../web"`,
		},
		{
			name:    "bad parameters",
			dir:     app,
			environ: []string{"ARGOCD_APP_PARAMETERS=[{}]"},
			wantErr: "ARGOCD_APP_PARAMETERS",
		},
		{name: "missing directory", dir: filepath.Join(repo, "nope"), wantErr: "is not a directory"},
		{name: "a file", dir: file, wantErr: "is not a directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := params.BuildEnv(tc.dir, tc.repoRoot, tc.environ)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("BuildEnv() = %#v\nwant %#v", got, tc.want)
			}
		})
	}
}
