package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/cli"
)

// helmFlagsRepo is a repository with a chart whose templates show every
// value the flags can set.
var helmFlagsRepo = map[string]string{
	".git/HEAD":                 "ref: refs/heads/main\n",
	"apps/web/Chart.yaml":       "apiVersion: v2\nname: web\nversion: 0.1.0\n",
	"apps/web/values.yaml":      "replicas: 1\nimage:\n  tag: \"1.0\"\nlabels: {}\nnote: \"\"\nhosts: []\n",
	"apps/web/values-prod.yaml": "replicas: 3\n",
	"apps/web/templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
  namespace: {{ .Release.Namespace }}
data:
  replicas: {{ .Values.replicas | quote }}
  tag: {{ .Values.image.tag | quote }}
  labels: {{ .Values.labels | toJson | quote }}
  note: {{ .Values.note | quote }}
  hosts: {{ .Values.hosts | toJson | quote }}
`,
	"apps/web/templates/tests/t.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n  annotations:\n    helm.sh/hook: test\n",
	"apps/web/crds/crd.yaml":          "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: things.example.com\n",
	"shared/labels.yaml":              "labels:\n  team: shop\n",
	"shared/note.txt":                 "from a file",
}

func runStrata(t *testing.T, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	t.Chdir(dir)
	var o, e bytes.Buffer
	code = cli.Main(context.Background(), args, nil, &o, &e)
	return o.String(), e.String(), code
}

// TestHelmFlags: helm template's flags on cmp generate --builtin helm
// render what helm would, and equal the plugin parameters
// --print-parameters prints: rendering with those parameters gives the
// same manifests.
func TestHelmFlags(t *testing.T) {
	repo := t.TempDir()
	writeFiles(t, repo, helmFlagsRepo)
	tests := []struct {
		name  string
		args  []string
		want  []string // substrings of the manifests
		avoid []string
	}{
		{"values file", []string{"-f", "apps/web/values-prod.yaml"}, []string{`replicas: "3"`}, nil},
		{"values files in order, outside the chart", []string{"--values", "apps/web/values-prod.yaml", "-f", "shared/labels.yaml"}, []string{`replicas: "3"`, `labels: "{\"team\":\"shop\"}"`}, nil},
		{"set after files", []string{"-f", "apps/web/values-prod.yaml", "--set", "replicas=5,image.tag=2.0"}, []string{`replicas: "5"`, `tag: "2.0"`}, nil},
		{"set with escaped comma and a list", []string{"--set", `note=a\,b,hosts={x,y}`}, []string{`note: "a,b"`, `hosts: "[\"x\",\"y\"]"`}, nil},
		{"set-string", []string{"--set-string", "image.tag=3"}, []string{`tag: "3"`}, nil},
		{"set-file", []string{"--set-file", "note=shared/note.txt"}, []string{`note: "from a file"`}, nil},
		{"set-json", []string{"--set-json", `labels={"a":"b"}`}, []string{`labels: "{\"a\":\"b\"}"`}, nil},
		{"release name as helm's first argument, namespace", []string{"-n", "shop"}, []string{"name: rel\n  namespace: shop"}, nil},
		{"skip-tests and skip-crds", []string{"--skip-tests", "--skip-crds"}, nil, []string{"kind: Pod", "CustomResourceDefinition"}},
		{"include-crds is the default", []string{"--include-crds"}, []string{"CustomResourceDefinition", "kind: Pod"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := []string{"cmp", "generate"}
			if tc.name == "release name as helm's first argument, namespace" {
				base = append(base, "rel")
			}
			base = append(base, "apps/web", "--builtin", "helm")
			out, errOut, code := runStrata(t, repo, append(base, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, a := range tc.avoid {
				if strings.Contains(out, a) {
					t.Errorf("output has %q:\n%s", a, out)
				}
			}
			// The same render from the parameters the flags equal.
			ps, errOut, code := runStrata(t, repo, append(append(base, tc.args...), "--print-parameters", "-o", "json")...)
			if code != 0 {
				t.Fatalf("--print-parameters: exit %d: %s", code, errOut)
			}
			file := filepath.Join(t.TempDir(), "params.json")
			if err := os.WriteFile(file, []byte(ps), 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"cmp", "generate", "apps/web", "--builtin", "helm", "--parameters", file}
			for i, a := range tc.args {
				if a == "-n" {
					args = append(args, "-n", tc.args[i+1])
				}
			}
			again, errOut, code := runStrata(t, repo, args...)
			if code != 0 {
				t.Fatalf("with --parameters %s: exit %d: %s", ps, code, errOut)
			}
			if again != out {
				t.Errorf("the flags and the parameters they print render differently:\nparameters: %s\nflags:\n%s\nparameters:\n%s", ps, out, again)
			}
		})
	}
}

func TestHelmFlagsPrintParameters(t *testing.T) {
	repo := t.TempDir()
	writeFiles(t, repo, helmFlagsRepo)
	out, errOut, code := runStrata(t, repo, "cmp", "parameters", "rel", "apps/web", "--builtin", "helm",
		"-f", "apps/web/values-prod.yaml", "-f", "shared/labels.yaml", "--set", "a=1,b=2", "--set-string", "c=3",
		"--set-file", "note=shared/note.txt", "--skip-tests", "--param", "kube-version=1.30", "--print-parameters")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := `- name: kube-version
  string: "1.30"
- array:
    - values-prod.yaml
    - ../../shared/labels.yaml
  name: values-files
- map:
    a: "1"
    b: "2"
  name: helm-parameters
- map:
    c: "3"
  name: helm-string-parameters
- map:
    note: ../../shared/note.txt
  name: file-parameters
- name: release-name
  string: rel
- name: skip-tests
  string: "true"
`
	if out != want {
		t.Errorf("--print-parameters:\n%s\nwant:\n%s", out, want)
	}
}

func TestHelmFlagsErrors(t *testing.T) {
	repo := t.TempDir()
	writeFiles(t, repo, helmFlagsRepo)
	outside := filepath.Join(t.TempDir(), "v.yaml")
	if err := os.WriteFile(outside, []byte("a: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "plugin.yaml"), []byte("apiVersion: argoproj.io/v1alpha1\nkind: ConfigManagementPlugin\nmetadata:\n  name: p\nspec:\n  generate:\n    command: [cat, m.yaml]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	web := []string{"apps/web", "--builtin", "helm"}
	tests := []struct {
		name string
		args []string // after cmp generate
		want string
	}{
		{"file outside the repository", append(web, "-f", outside), "the file is outside the repository"},
		{"a URL", append(web, "-f", "https://example.com/v.yaml"), "the plugin never fetches values files"},
		{"stdin", append(web, "-f", "-"), "standard input is not a file of the repository"},
		{"missing file", append(web, "-f", "apps/web/nope.yaml"), "--values apps/web/nope.yaml: no such file or directory"},
		{"set without a value", append(web, "--set", "a=1,b"), `--set "a=1,b": "b" is not KEY=VALUE`},
		{"crds both ways", append(web, "--include-crds", "--skip-crds"), "--include-crds and --skip-crds: give one"},
		{"bad json", append(web, "--set-json", "a={"), "--set-json"},
		{"two release names", append([]string{"y"}, append(web, "--release-name", "x")...), `release name "y" and --release-name "x": give one`},
		{"helm flags on a plugin.yaml", []string{"apps/web", "--config", "plugin.yaml", "--set", "a=1", "-f", "apps/web/values-prod.yaml"}, "--values, --set: Helm's flags apply with --builtin helm"},
		{"two arguments on a plugin.yaml", []string{"rel", "apps/web", "--config", "plugin.yaml"}, `unexpected argument "apps/web" after APPDIR`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := runStrata(t, repo, append([]string{"cmp", "generate"}, tc.args...)...)
			if code == 0 || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want an error with %q", code, errOut, tc.want)
			}
		})
	}
}

// TestHelmExplain: --explain says, for each value the chart gets, which
// values file and line or parameter set it and what it overrode.
func TestHelmExplain(t *testing.T) {
	repo := t.TempDir()
	writeFiles(t, repo, helmFlagsRepo)
	out, errOut, code := runStrata(t, repo, "cmp", "generate", "apps/web", "--builtin", "helm",
		"-f", "apps/web/values-prod.yaml", "--set", "replicas=5,image.tag=2.0", "--explain")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"image.tag = \"2.0\"\n    set by helm-parameters image.tag=2.0 [layer 3]\n    overrode \"1.0\" from apps/web/values.yaml:3 [layer 1]\n",
		"replicas = 5\n    set by helm-parameters replicas=5 [layer 4]\n    overrode 1 from apps/web/values.yaml:1 [layer 1]\n    overrode 3 from apps/web/values-prod.yaml:1 [layer 2]\n",
		"note = \"\"\n    set by apps/web/values.yaml:5 [layer 1]\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("--explain lacks\n%s\ngot:\n%s", want, out)
		}
	}
	out, errOut, code = runStrata(t, repo, "cmp", "generate", "apps/web", "--builtin", "helm", "--set-string", "replicas=7", "--explain=replicas", "-o", "json")
	if code != 0 || !strings.Contains(out, `"path": "replicas"`) || !strings.Contains(out, `"layer": "helm-string-parameters replicas=7"`) {
		t.Errorf("--explain=replicas -o json: exit %d\n%s%s", code, out, errOut)
	}
	if err := os.WriteFile(filepath.Join(repo, "plugin.yaml"), []byte("apiVersion: argoproj.io/v1alpha1\nkind: ConfigManagementPlugin\nmetadata:\n  name: p\nspec:\n  generate:\n    command: [cat, m.yaml]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runStrata(t, repo, "cmp", "generate", "apps/web", "--config", "plugin.yaml", "--explain"); code == 0 || !strings.Contains(errOut, "--explain applies with --builtin helm") {
		t.Errorf("--explain with a plugin.yaml: exit %d, %s", code, errOut)
	}
}
