package paritytest_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// plugin makes a plugin.yaml of the given spec (indented by two spaces).
func plugin(name, spec string) string {
	return "apiVersion: argoproj.io/v1alpha1\nkind: ConfigManagementPlugin\nmetadata:\n  name: " + name + "\nspec:\n" + spec
}

// catOut prints the repository's out.txt as the plugin's output.
var catOut = plugin("cat-out", "  generate:\n    command: [cat, out.txt]\n")

// printEnv prints the variables Argo CD defines, and the plugin's own, as
// a ConfigMap: one NAME=value line each, sorted.
var printEnv = plugin("print-env", `  init:
    command: [sh, -c, 'env | grep -E "^(ARGOCD_|PARAM_|KUBE_)" > "$TMPDIR/init-env-$$" && test -s "$TMPDIR/init-env-$$"']
  generate:
    command: [sh, -c]
    args:
      - |
        printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: env\ndata:\n  env: |\n'
        env | grep -E '^(ARGOCD_APP_|ARGOCD_ENV_|PARAM_|KUBE_)' | LC_ALL=C sort | sed 's/^/    /'
`)

// printTree lists the repository as the commands see it: each path with
// its type and mode, and what each file (through links too) holds.
func printTree(name, extra string) string {
	return plugin(name, extra+`  generate:
    command: [sh, -c]
    args:
      - |
        cd "$(pwd)/$(echo "$ARGOCD_APP_SOURCE_PATH" | sed 's|[^/][^/]*|..|g')"
        printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: tree\ndata:\n  tree: |\n'
        find . -mindepth 1 -printf '%p %y %m\n' | LC_ALL=C sort | sed 's/^/    /'
        printf '  contents: |\n'
        find . -type f -o -type l | LC_ALL=C sort | while read -r f; do printf '    %s: %s\n' "$f" "$(cat "$f" 2>&1 | head -c 40 | tr -c '[:alnum:] ._:-' '?')"; done
`)
}

// A parityCase is one request, sent to both servers. want is the answer
// both give, as the repo-server reads it (see ask); when strata
// deliberately differs, argo is Argo CD's answer and why says why. errHas
// are substrings both error messages hold.
type parityCase struct {
	name   string
	plugin string
	files  map[string]string
	modes  map[string]fs.FileMode
	req    appRequest
	rpc    string
	want   string
	argo   string
	why    string
	errHas []string
	// sidecarEnv is added to both servers' own environment.
	sidecarEnv []string
	// same: only that both answer alike, and not with an error, is
	// checked (want is left empty): for answers long to write out.
	same bool
	// timeout is the request's deadline, as the repo-server's
	// (default a minute).
	timeout time.Duration
}

const cm = `apiVersion: v1
kind: ConfigMap
metadata:
  name: %s
`

// envCM is the printEnv plugin's ConfigMap for these variables (sorted
// here) and the standard ones of an Application at path, namespace ns.
func envCM(path, ns string, vars ...string) string {
	all := []string{
		"ARGOCD_APP_NAME=guestbook",
		"ARGOCD_APP_REVISION=0123456789abcdef0123456789abcdef01234567",
		"ARGOCD_APP_REVISION_SHORT=0123456",
		"ARGOCD_APP_REVISION_SHORT_8=01234567",
		"ARGOCD_APP_SOURCE_PATH=" + path,
		"ARGOCD_APP_SOURCE_REPO_URL=https://git.example.com/team/apps.git",
		"ARGOCD_APP_SOURCE_TARGET_REVISION=main",
		"KUBE_API_VERSIONS=v1,apps/v1,batch/v1,networking.k8s.io/v1",
		"KUBE_VERSION=v1.31.0",
	}
	if ns != "" {
		all = append(all, "ARGOCD_APP_NAMESPACE="+ns)
	}
	all = append(all, vars...)
	slices.Sort(all)
	b, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "env"},
		"data": map[string]any{"env": strings.Join(all, "\n") + "\n"}})
	if err != nil {
		panic(err)
	}
	return string(b)
}

func cmJSON(name string) string {
	return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `"}}`
}

func TestParity(t *testing.T) {
	ps := newPeerSet(t)
	for _, group := range [][]parityCase{outputCases(), envCases(), repoCases(), discoveryCases(), announceCases(), failureCases(), realWorldCases()} {
		for _, tc := range group {
			t.Run(tc.name, func(t *testing.T) {
				p := ps.get(t, tc.plugin, tc.sidecarEnv)
				dir := writeRepo(t, tc.files, tc.modes)
				tgz := packRepo(t, dir)
				md := tc.req.metadata()
				rpc := tc.rpc
				if rpc == "" {
					rpc = rpcGenerate
				}
				timeout := tc.timeout
				if timeout == 0 {
					timeout = time.Minute
				}
				askBoth := func(socket string) (string, string) {
					ctx, cancel := context.WithTimeout(context.Background(), timeout)
					defer cancel()
					return ask(ctx, socket, rpc, md, tgz)
				}
				argo, argoErr := askBoth(p.argo.socket)
				strata, strataErr := askBoth(p.strata.socket)
				t.Logf("%s: %s\nArgo CD: %s %s\nstrata:  %s %s", rpc, describe(md), argo, argoErr, strata, strataErr)
				if tc.same {
					if argo != strata || argo == "error" || tc.want != "" {
						t.Errorf("the answers differ, or are errors (-Argo CD +strata):\n%s\nArgo CD's error: %s\nstrata's error: %s", cmp.Diff(argo, strata), argoErr, strataErr)
					}
					return
				}
				wantArgo := tc.want
				if tc.argo != "" {
					wantArgo = tc.argo
					if tc.why == "" {
						t.Fatal("the case says strata differs but not why")
					}
				}
				if diff := cmp.Diff(wantArgo, argo); diff != "" {
					t.Errorf("Argo CD's sidecar answers otherwise than the case says (-want +Argo CD):\n%s\nits error: %s\nits log: %s", diff, argoErr, readLog(p.argo.log))
				}
				if diff := cmp.Diff(tc.want, strata); diff != "" {
					t.Errorf("strata answers otherwise (-want +strata):\n%s\nits error: %s\nits log: %s", diff, strataErr, readLog(p.strata.log))
				}
				for _, sub := range tc.errHas {
					if !strings.Contains(argoErr, sub) {
						t.Errorf("Argo CD's error %q lacks %q", argoErr, sub)
					}
					if !strings.Contains(strataErr, sub) {
						t.Errorf("strata's error %q lacks %q", strataErr, sub)
					}
				}
			})
		}
	}
}
