package helmplugin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/helmplugin"
	"github.com/strata-dev/strata/internal/helmplugin/paritytest"
	"github.com/strata-dev/strata/internal/params"
)

func str(s string) *string { return &s }

// TestRoundTrip checks the promise of the helm-parameters announcement:
// announcing, then setting every announced parameter to its announced
// value, renders the same manifests, for every parity case that renders.
func TestRoundTrip(t *testing.T) {
	files, err := filepath.Glob("testdata/parity/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	p := helmplugin.New(helmplugin.Options{})
	ctx := context.Background()
	tested := 0
	for _, file := range files {
		c := paritytest.Load(t, file)
		req := c.Request(t)
		want, err := p.Generate(ctx, req)
		if err != nil {
			continue // error cases: nothing to round-trip
		}
		tested++
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			anns, err := p.Announce(ctx, req)
			if err != nil {
				t.Fatalf("Announce: %v", err)
			}
			again := *req
			again.Parameters = fromAnnouncements(anns)
			got, err := p.Generate(ctx, &again)
			if err != nil {
				t.Fatalf("Generate with the announced values: %v", err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("setting every announced value changes the manifests (-before +after):\n%s", diff)
			}
			// And the announcement of that request announces the same.
			anns2, err := p.Announce(ctx, &again)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(anns, anns2); diff != "" {
				t.Errorf("the announcement changes once its values are set (-before +after):\n%s", diff)
			}
		})
	}
	if tested < 5 {
		t.Fatalf("only %d cases render; the round trip needs more", tested)
	}
}

// fromAnnouncements sets every announced parameter to its announced value,
// as a UI saving every field would.
func fromAnnouncements(anns []params.Announcement) []params.Parameter {
	var ps []params.Parameter
	for _, a := range anns {
		p := params.Parameter{Name: a.Name}
		switch a.CollectionType {
		case params.CollectionArray:
			p.Array = append([]string{}, a.Array...)
		case params.CollectionMap:
			p.Map = map[string]string{}
			for k, v := range a.Map {
				p.Map[k] = v
			}
		default:
			p.String = str(a.String)
		}
		ps = append(ps, p)
	}
	return ps
}

// TestAnnounce compares the announcement for the values-files case with
// testdata/announce.json (regenerated with -update), and checks that it is
// valid as Argo CD's repo-server and strata's params package read it.
func TestAnnounce(t *testing.T) {
	c := paritytest.Load(t, "testdata/parity/values-files.txtar")
	p := helmplugin.New(helmplugin.Options{})
	anns, err := p.Announce(context.Background(), c.Request(t))
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.MarshalIndent(anns, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	const golden = "testdata/announce.json"
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("announcement differs from %s (-want +got):\n%s", golden, diff)
	}
	decoded, warnings, err := params.ParseAnnouncements(got, golden)
	if err != nil || len(warnings) > 0 {
		t.Fatalf("the announcement is not valid: %v %v", err, warnings)
	}
	if diff := cmp.Diff(anns, decoded); diff != "" {
		t.Errorf("the announcement does not decode to itself (-announced +decoded):\n%s", diff)
	}
	byName := map[string]params.Announcement{}
	for _, a := range anns {
		byName[a.Name] = a
	}
	for name, want := range map[string]string{
		`dotted\.key`:   "changed", // dots in keys escaped
		"ports[1]":      "8443",    // list items
		"bigNumber":     "2000000",
		"ratio":         "0.25",
		"emptyList":     "[]",
		"emptyMap":      "{}",
		"nothing":       "null",
		"labels.inline": "yes",
	} {
		if got := byName["helm-parameters"].Map[name]; got != want {
			t.Errorf("helm-parameters[%q] = %q, want %q", name, got, want)
		}
	}
	if got := byName["release-name"].String; got != "shop" {
		t.Errorf("release-name = %q, want the app name shop", got)
	}
	if got := byName["namespace"].String; got != "shop-prod" {
		t.Errorf("namespace = %q, want the destination namespace shop-prod", got)
	}
	if got := byName["skip-crds"]; got.ItemType != params.ItemBoolean || got.String != "false" {
		t.Errorf("skip-crds = %+v, want a boolean announced false", got)
	}
}

// TestReleaseNameFromApplication: the release name defaults to the
// Application's name, which the repo-server sends as ARGOCD_APP_NAME; the
// stream's metadata names the app by its directory (found under the real
// Argo CD: ManifestRequestMetadata.appName is the path's base name).
func TestReleaseNameFromApplication(t *testing.T) {
	c := paritytest.Load(t, "testdata/parity/values-files.txtar")
	p := helmplugin.New(helmplugin.Options{})
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"ARGOCD_APP_NAME=details-helm"}, "details-helm"},
		{[]string{"ARGOCD_APP_NAME=team-a_web"}, "web"}, // apps in any namespace
		{nil, "chart"}, // no Application name: the metadata's
	} {
		req := c.Request(t)
		req.AppName = "chart"
		req.Env = append(slices.DeleteFunc(slices.Clone(req.Env), func(kv string) bool {
			return strings.HasPrefix(kv, "ARGOCD_APP_NAME=")
		}), tc.env...)
		anns, err := p.Announce(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range anns {
			if a.Name == "release-name" && a.String != tc.want {
				t.Errorf("env %v: release-name %q, want %q", tc.env, a.String, tc.want)
			}
		}
	}
}

// TestUnchangedEntriesKeepTypes: an entry set to the value a key already
// has does not retype it (a string "true" stays a string, a float stays a
// float), while the same text set on a key that differs is a --set.
func TestUnchangedEntriesKeepTypes(t *testing.T) {
	c := paritytest.Load(t, "testdata/parity/defaults.txtar")
	p := helmplugin.New(helmplugin.Options{})
	ctx := context.Background()
	base := c.Request(t)
	want, err := p.Generate(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	same := *base
	// enabledString is the string "true"; bigNumber the float 1e+06.
	same.Parameters = []params.Parameter{{Name: "helm-parameters", Map: map[string]string{"enabledString": "true", "bigNumber": "1000000"}}}
	got, err := p.Generate(ctx, &same)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entries at their current values changed the manifests (-want +got):\n%s", diff)
	}
	changed := *base
	changed.Parameters = []params.Parameter{{Name: "helm-parameters", Map: map[string]string{"bigNumber": "1000001"}}}
	got, err = p.Generate(ctx, &changed)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(got, "\n"), `"big-number":"1000001"`) {
		t.Errorf("a changed entry was not applied: %v", got)
	}
}

func TestMatch(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"chart", "plain", "linked", "dir"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(root, "chart", "Chart.yaml"), "name: x\n")
	write(t, filepath.Join(root, "plain", "values.yaml"), "a: 1\n")
	if err := os.Symlink("../chart/Chart.yaml", filepath.Join(root, "linked", "Chart.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "dir", "Chart.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := helmplugin.New(helmplugin.Options{})
	for dir, want := range map[string]bool{"chart": true, "plain": false, "linked": false, "dir": false} {
		got, err := p.Match(context.Background(), &params.Request{RepoRoot: root, AppPath: filepath.Join(root, dir)})
		if err != nil || got != want {
			t.Errorf("Match(%s) = %v, %v; want %v", dir, got, err, want)
		}
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// hostileRepo makes a repository with a small chart, and a secret file
// beside the repository that nothing may read.
func hostileRepo(t *testing.T) (root string, outside string) {
	t.Helper()
	dir := t.TempDir()
	root = filepath.Join(dir, "repo")
	outside = filepath.Join(dir, "secret.yaml")
	write(t, outside, "stolen: true\n")
	write(t, filepath.Join(root, "app", "Chart.yaml"), "apiVersion: v2\nname: app\nversion: 0.1.0\n")
	write(t, filepath.Join(root, "app", "values.yaml"), "a: 1\n")
	write(t, filepath.Join(root, "app", "templates", "cm.yaml"),
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: {{ .Values.a | quote }}\n  stolen: {{ .Values.stolen | quote }}\n  text: {{ .Values.text | quote }}\n")
	return root, outside
}

// TestHostileParameters: paths that lead outside the repository (by .., by
// absolute path, through symbolic links), values past the limits and
// deep --set paths are refused with errors naming the parameter.
func TestHostileParameters(t *testing.T) {
	root, outside := hostileRepo(t)
	write(t, filepath.Join(root, "other", "README"), "not a chart\n")
	if err := os.Symlink(outside, filepath.Join(root, "other", "link.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(root, "dirlink")); err != nil {
		t.Fatal(err)
	}
	deep := strings.Repeat("a.", 40) + "b"
	huge := strings.Repeat("x", 2<<20)
	tests := []struct {
		name string
		ps   []params.Parameter
		lim  helmplugin.Limits
		want string // in the error
	}{
		{"values file up and out", []params.Parameter{{Name: "values-files", Array: []string{"../../secret.yaml"}}}, helmplugin.Limits{},
			`parameter "values-files": array[0]: "../../secret.yaml" leads outside the repository`},
		{"values file absolute", []params.Parameter{{Name: "values-files", Array: []string{outside}}}, helmplugin.Limits{},
			`parameter "values-files": array[0]: values file`},
		{"values file through a link", []params.Parameter{{Name: "values-files", Array: []string{"../other/link.yaml"}}}, helmplugin.Limits{},
			`parameter "values-files": array[0]: other/link.yaml cannot be read inside the repository`},
		{"values file through a directory link", []params.Parameter{{Name: "values-files", Array: []string{"../dirlink/secret.yaml"}}}, helmplugin.Limits{},
			`parameter "values-files": array[0]: dirlink/secret.yaml cannot be read inside the repository`},
		{"values file via variable", []params.Parameter{{Name: "values-files", Array: []string{"$ARGOCD_APP_NAME"}}}, helmplugin.Limits{},
			`parameter "values-files": array[0]: "../../secret.yaml" leads outside the repository`},
		{"values file pattern up and out", []params.Parameter{{Name: "values-files", Array: []string{"../../*.yaml"}}}, helmplugin.Limits{},
			`parameter "values-files": array[0]: "../../*.yaml" leads outside the repository`},
		{"values file pattern through a directory link", []params.Parameter{{Name: "values-files", Array: []string{"../dirlink/*.yaml"}}}, helmplugin.Limits{},
			`parameter "values-files": array[0]: values file pattern "../dirlink/*.yaml" matches no file in the repository (dirlink/*.yaml)`},
		{"values file pattern through a file link", []params.Parameter{{Name: "values-files", Array: []string{"../other/*.yaml"}}}, helmplugin.Limits{},
			`parameter "values-files": array[0]: other/link.yaml cannot be read inside the repository`},
		{"values file pattern invalid", []params.Parameter{{Name: "values-files", Array: []string{"[a-.yaml"}}}, helmplugin.Limits{},
			`parameter "values-files": array[0]: values file pattern "[a-.yaml" is not a valid glob pattern`},
		{"values file pattern past the limit", []params.Parameter{{Name: "values-files", Array: []string{"**/*.yaml"}}}, helmplugin.Limits{MaxValuesFiles: 2},
			`parameter "values-files": array[0]: values file pattern "**/*.yaml" matches more than the limit of 2 values files`},
		{"values file patterns past the limit together", []params.Parameter{{Name: "values-files", Array: []string{"**/*.yaml", "more.yaml"}}}, helmplugin.Limits{MaxValuesFiles: 3},
			`parameter "values-files": array[1]: more than the limit of 3 values files once the patterns are expanded`},
		{"values file URL", []params.Parameter{{Name: "values-files", Array: []string{"https://example.com/values.yaml"}}}, helmplugin.Limits{},
			`is a URL; strata renders without network access`},
		{"file parameter up and out", []params.Parameter{{Name: "file-parameters", Map: map[string]string{"text": "../../secret.yaml"}}}, helmplugin.Limits{},
			`parameter "file-parameters": map["text"]: "../../secret.yaml" leads outside the repository`},
		{"file parameter through a link", []params.Parameter{{Name: "file-parameters", Map: map[string]string{"text": "../other/link.yaml"}}}, helmplugin.Limits{},
			`parameter "file-parameters": map["text"]: other/link.yaml cannot be read inside the repository`},
		{"file parameter via variable", []params.Parameter{{Name: "file-parameters", Map: map[string]string{"text": "$ARGOCD_APP_NAME"}}}, helmplugin.Limits{},
			`parameter "file-parameters": map["text"]: "../../secret.yaml" leads outside the repository`},
		{"deep set path", []params.Parameter{{Name: "helm-parameters", Map: map[string]string{deep: "1"}}}, helmplugin.Limits{},
			`parameter "helm-parameters": map["a.a.a.a.`},
		{"huge inline values", []params.Parameter{{Name: "values", String: str("a: " + huge)}}, helmplugin.Limits{MaxValuesBytes: 1 << 20},
			`parameter "values": 2097155 bytes, more than the limit of 1048576`},
		{"huge parameters", []params.Parameter{{Name: "helm-parameters", Map: map[string]string{"text": huge}}}, helmplugin.Limits{MaxParameterBytes: 1 << 20},
			`parameter "helm-parameters": the parameters hold more than 1048576 bytes in all`},
		{"too many values files", []params.Parameter{{Name: "values-files", Array: []string{"a", "b", "c"}}}, helmplugin.Limits{MaxValuesFiles: 2},
			`parameter "values-files": 3 values files, more than the limit of 2`},
		{"too many entries", []params.Parameter{{Name: "helm-parameters", Map: map[string]string{"a": "1", "b": "2", "c": "3"}}}, helmplugin.Limits{MaxItems: 2},
			`parameter "helm-parameters": map: 3 entries, more than the limit of 2`},
		{"bad release name", []params.Parameter{{Name: "release-name", String: str("Not_Valid")}}, helmplugin.Limits{},
			`parameter "release-name": release name "Not_Valid"`},
		{"bad kube version", []params.Parameter{{Name: "kube-version", String: str("one point thirty")}, {Name: "release-name", String: str("ok")}}, helmplugin.Limits{},
			`parameter "kube-version": invalid kube version "one point thirty"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := helmplugin.New(helmplugin.Options{Limits: tc.lim})
			req := &params.Request{AppName: "../../secret.yaml", RepoRoot: root, AppPath: filepath.Join(root, "app"),
				Env: []string{"ARGOCD_APP_NAME=../../secret.yaml"}, Parameters: tc.ps}
			out, err := p.Generate(context.Background(), req)
			if err == nil {
				t.Fatalf("Generate succeeded: %v", out)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Generate error = %q, want it to contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "stolen") {
				t.Errorf("the error leaks the outside file: %v", err)
			}
		})
	}
}

// TestChartLinks: a chart holding a symbolic link out of the repository is
// refused before Helm's loader (which follows links) reads it.
func TestChartLinks(t *testing.T) {
	root, outside := hostileRepo(t)
	if err := os.Symlink(outside, filepath.Join(root, "app", "templates", "stolen.yaml")); err != nil {
		t.Fatal(err)
	}
	p := helmplugin.New(helmplugin.Options{})
	_, err := p.Generate(context.Background(), &params.Request{AppName: "x", RepoRoot: root, AppPath: filepath.Join(root, "app")})
	if err == nil || !strings.Contains(err.Error(), "chart file app/templates/stolen.yaml is a symbolic link leading outside the repository") {
		t.Errorf("Generate error = %v, want the link refused", err)
	}
}

// TestRenderTimeout: a template that runs long is abandoned at the deadline
// with an error saying so; no timing is asserted.
func TestRenderTimeout(t *testing.T) {
	root, _ := hostileRepo(t)
	write(t, filepath.Join(root, "app", "templates", "slow.yaml"),
		"{{- range until 100000000 }}{{- end }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: slow\n")
	p := helmplugin.New(helmplugin.Options{Timeout: time.Millisecond})
	_, err := p.Generate(context.Background(), &params.Request{AppName: "x", RepoRoot: root, AppPath: filepath.Join(root, "app")})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), `rendering chart "app" did not finish`) {
		t.Errorf("Generate error = %v, want a deadline error", err)
	}
}

// TestUnknownParametersIgnored: names the plugin does not accept are left
// alone (another plugin wrapping it may announce them), not an error.
func TestUnknownParametersIgnored(t *testing.T) {
	root, _ := hostileRepo(t)
	p := helmplugin.New(helmplugin.Options{})
	req := &params.Request{AppName: "x", RepoRoot: root, AppPath: filepath.Join(root, "app"),
		Parameters: []params.Parameter{{Name: "value-files", Array: []string{"nope.yaml"}}, {Name: "name-prefix", String: str("p-")}}}
	if _, err := p.Generate(context.Background(), req); err != nil {
		t.Errorf("Generate: %v", err)
	}
}

// generateBoth runs Generate and GenerateYAML (the local CLI's YAML
// output, which checks the manifests as Generate does without keeping
// them) and returns their errors.
func generateBoth(p *helmplugin.Plugin, req *params.Request) []error {
	_, genErr := p.Generate(context.Background(), req)
	_, yamlErr := p.GenerateYAML(context.Background(), req)
	return []error{genErr, yamlErr}
}

// TestOutputLimits: a chart rendering more than the limits allow fails
// with an error saying so, in Generate and GenerateYAML.
func TestOutputLimits(t *testing.T) {
	root, _ := hostileRepo(t)
	write(t, filepath.Join(root, "app", "templates", "many.yaml"),
		"{{- range until 20 }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{{ . }}\n{{- end }}\n")
	req := &params.Request{AppName: "x", RepoRoot: root, AppPath: filepath.Join(root, "app")}
	p := helmplugin.New(helmplugin.Options{Limits: helmplugin.Limits{MaxManifests: 10}})
	for _, err := range generateBoth(p, req) {
		if err == nil || !strings.Contains(err.Error(), "the chart renders more than 10 manifests") {
			t.Errorf("error = %v, want the manifest limit", err)
		}
	}
	p = helmplugin.New(helmplugin.Options{Limits: helmplugin.Limits{MaxManifestBytes: 500}})
	for _, err := range generateBoth(p, req) {
		if err == nil || !strings.Contains(err.Error(), "the rendered manifests are larger than 500 bytes") {
			t.Errorf("error = %v, want the size limit", err)
		}
	}
	// Around the limit GenerateYAML, which counts the documents by bounds
	// of their JSON's length (several times the JSON), counts them exactly
	// again, as Generate does: the same successes and errors.
	manifests, err := helmplugin.New(helmplugin.Options{}).Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, m := range manifests {
		total += len(m)
	}
	failed, passed := false, false
	for _, limit := range []int{total - 40, total - 1, total, total + 1, 2 * total} {
		p := helmplugin.New(helmplugin.Options{Limits: helmplugin.Limits{MaxManifestBytes: limit}})
		errs := generateBoth(p, req)
		if fmt.Sprint(errs[0]) != fmt.Sprint(errs[1]) {
			t.Errorf("limit %d: Generate error = %v, GenerateYAML error = %v", limit, errs[0], errs[1])
		}
		failed, passed = failed || errs[0] != nil, passed || errs[0] == nil
	}
	if !failed || !passed {
		t.Errorf("limits around %d bytes: want some to fail and some to pass (failed %v, passed %v)", total, failed, passed)
	}
}

// TestNotKubernetesObject: a template rendering something that is not an
// object with apiVersion and kind fails, naming the template.
func TestNotKubernetesObject(t *testing.T) {
	root, _ := hostileRepo(t)
	write(t, filepath.Join(root, "app", "templates", "odd.yaml"), "just: data\n")
	p := helmplugin.New(helmplugin.Options{})
	for _, err := range generateBoth(p, &params.Request{AppName: "x", RepoRoot: root, AppPath: filepath.Join(root, "app")}) {
		if err == nil || !strings.Contains(err.Error(), "app/templates/odd.yaml: a rendered document has no apiVersion or kind") {
			t.Errorf("error = %v, want the template named", err)
		}
	}
}

// TestCacheNotShared: values parsed once and cached are never changed by a
// request that sets values on top of them.
func TestCacheNotShared(t *testing.T) {
	c := paritytest.Load(t, "testdata/parity/defaults.txtar")
	p := helmplugin.New(helmplugin.Options{})
	ctx := context.Background()
	announced := func(ps []params.Parameter) map[string]string {
		req := c.Request(t)
		req.Parameters = ps
		anns, err := p.Announce(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return anns[2].Map
	}
	before := announced(nil)
	set := announced([]params.Parameter{{Name: "helm-parameters", Map: map[string]string{"replicas": "9", "image.tag": "x", "labels.new": "y"}},
		{Name: "values-files", Array: []string{"values-prod.yaml"}}, {Name: "helm-string-parameters", Map: map[string]string{"labels.team": "z"}}})
	if set["replicas"] != "9" || set["labels.new"] != "y" || set["labels.team"] != "z" {
		t.Errorf("the parameters were not applied: %v", set)
	}
	announced([]params.Parameter{{Name: "values-files", Array: []string{"values-prod.yaml"}}})
	if after := announced(nil); !cmp.Equal(before, after) {
		t.Errorf("a request changed the cached values (-before +after):\n%s", cmp.Diff(before, after))
	}
}
