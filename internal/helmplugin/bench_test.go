package helmplugin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/helmplugin"
	"github.com/strata-dev/strata/internal/helmplugin/paritytest"
	"github.com/strata-dev/strata/internal/params"
	"github.com/strata-dev/strata/internal/testbin"
)

// The benchmarks measure strata beside the tool users would run otherwise,
// in the same run (make bench-helm prints the ratios):
//
//   - RenderSubchart / HelmTemplateSubchart: one render of Helm's own
//     `subchart` test chart, strata's plugin in-process and warm, against
//     a `helm template` process (what Argo CD's repo-server runs).
//   - Render200 / HelmTemplate200: the same for a generated chart of 200
//     templates; Render200Cold with the plugin's chart and document caches
//     off.
//   - RenderSubchartWorker, Render200Worker: RenderSubchart and Render200
//     in a render worker process, as `strata cmp serve` renders.
//   - Announce5000 (cache warm), Announce5000Cold / YqJqAnnounce5000: the
//     parameters announcement for a values.yaml of 5,000 leaves, against
//     the proposal's `yq e -o=p values.yaml | jq ...` pipeline (two
//     processes, a pipe).
//
// Before timing, each pair is checked to give the same result.

func benchRequest(b *testing.B, root, app string) *params.Request {
	b.Helper()
	root, err := filepath.Abs(root)
	if err != nil {
		b.Fatal(err)
	}
	return &params.Request{AppName: "bench", RepoRoot: root, AppPath: filepath.Join(root, app),
		Env: []string{"ARGOCD_APP_NAME=bench", "ARGOCD_APP_NAMESPACE=default"}}
}

func benchRender(b *testing.B, req *params.Request, opts helmplugin.Options) {
	p := helmplugin.New(opts)
	defer p.Close()
	ctx := context.Background()
	if _, err := p.Generate(ctx, req); err != nil { // warm
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := p.Generate(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

func benchHelm(b *testing.B, req *params.Request) {
	helm := testbin.Path(b, "helm")
	args := []string{"template", req.AppPath, "--name-template", "bench", "--namespace", "default", "--include-crds"}
	out, stderr, err := paritytest.RunHelm(b, helm, args)
	if err != nil {
		b.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	// Same documents as strata, or the comparison is meaningless.
	manifests, err := helmplugin.New(helmplugin.Options{}).Generate(context.Background(), req)
	if err != nil {
		b.Fatal(err)
	}
	var got []string
	for _, m := range manifests {
		got = append(got, paritytest.CanonicalJSON(b, []byte(m)))
	}
	if diff := cmp.Diff(paritytest.Normalise(b, out), got); diff != "" {
		b.Fatalf("strata and helm render differently (-helm +strata):\n%s", diff)
	}
	home := b.TempDir()
	b.ResetTimer()
	for b.Loop() {
		cmd := exec.Command(helm, args...)
		cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin", "HELM_CACHE_HOME=" + home + "/cache",
			"HELM_CONFIG_HOME=" + home + "/config", "HELM_DATA_HOME=" + home + "/data"}
		if out, err := cmd.Output(); err != nil || len(out) == 0 {
			b.Fatalf("helm template: %v", err)
		}
	}
}

func BenchmarkRenderSubchart(b *testing.B) {
	benchRender(b, benchRequest(b, "testdata/bench", "subchart"), helmplugin.Options{})
}

// BenchmarkRenderSubchartWorker is RenderSubchart in a render worker
// process, as `strata cmp serve` renders by default (Options.Workers):
// the request and the manifests cross two pipes.
func BenchmarkRenderSubchartWorker(b *testing.B) {
	benchRender(b, benchRequest(b, "testdata/bench", "subchart"), helmplugin.Options{MaxConcurrent: 1, Workers: testWorkers(b, 0)})
}

func BenchmarkHelmTemplateSubchart(b *testing.B) {
	benchHelm(b, benchRequest(b, "testdata/bench", "subchart"))
}

// chart200 writes a chart of 200 templates (Deployments, Services and
// ConfigMaps using helpers, ranges and conditionals) under dir.
func chart200(b *testing.B) string {
	dir := b.TempDir()
	app := filepath.Join(dir, "big")
	mustWrite := func(name, content string) {
		p := filepath.Join(app, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	mustWrite("Chart.yaml", "apiVersion: v2\nname: big\nversion: 1.0.0\n")
	var values strings.Builder
	values.WriteString("image:\n  repository: nginx\n  tag: \"1.27\"\nlabels:\n  team: web\n  tier: backend\nservices:\n")
	for i := range 200 {
		fmt.Fprintf(&values, "  svc%03d:\n    enabled: true\n    replicas: %d\n    port: %d\n    env:\n      A: \"1\"\n      B: \"two\"\n", i, i%5+1, 8000+i)
	}
	mustWrite("values.yaml", values.String())
	mustWrite("templates/_helpers.tpl", `{{- define "big.labels" -}}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- range $k, $v := .Values.labels }}
{{ $k }}: {{ $v | quote }}
{{- end }}
{{- end -}}
`)
	for i := range 200 {
		name := fmt.Sprintf("svc%03d", i)
		var tpl string
		switch i % 3 {
		case 0:
			tpl = `{{- $s := index .Values.services "NAME" }}
{{- if $s.enabled }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-NAME
  labels:
    {{- include "big.labels" . | nindent 4 }}
spec:
  replicas: {{ $s.replicas }}
  template:
    spec:
      containers:
        - name: NAME
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
          env:
            {{- range $k, $v := $s.env }}
            - name: {{ $k }}
              value: {{ $v | quote }}
            {{- end }}
{{- end }}
`
		case 1:
			tpl = `{{- $s := index .Values.services "NAME" }}
apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-NAME
  labels:
    {{- include "big.labels" . | nindent 4 }}
spec:
  ports:
    - port: {{ $s.port }}
      targetPort: {{ $s.port }}
`
		default:
			tpl = `{{- $s := index .Values.services "NAME" }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-NAME
  labels:
    {{- include "big.labels" . | nindent 4 }}
data:
  config.json: {{ $s | toJson | quote }}
  checksum: {{ $s | toYaml | sha256sum | quote }}
`
		}
		mustWrite("templates/"+name+".yaml", strings.ReplaceAll(tpl, "NAME", name))
	}
	return dir
}

// BenchmarkRender200 renders warm: the chart and the documents it renders
// were seen before and come from the plugin's caches (keyed by SHA-256),
// as when the sidecar renders a chart again. The templates run every time.
func BenchmarkRender200(b *testing.B) {
	benchRender(b, benchRequest(b, chart200(b), "big"), helmplugin.Options{})
}

// BenchmarkRender200Worker is Render200 in a render worker process.
func BenchmarkRender200Worker(b *testing.B) {
	benchRender(b, benchRequest(b, chart200(b), "big"), helmplugin.Options{MaxConcurrent: 1, Workers: testWorkers(b, 0)})
}

// BenchmarkRender200Cold renders with the chart and document caches off:
// every render loads the chart and reads every rendered document.
func BenchmarkRender200Cold(b *testing.B) {
	benchRender(b, benchRequest(b, chart200(b), "big"), helmplugin.Options{ChartCacheEntries: -1, DocumentCacheBytes: -1})
}

func BenchmarkHelmTemplate200(b *testing.B) {
	benchHelm(b, benchRequest(b, chart200(b), "big"))
}

// chart5000 writes a chart whose values.yaml has 5,000 leaves: 250 groups
// of 20 keys of mixed types.
func chart5000(b *testing.B) string {
	dir := b.TempDir()
	app := filepath.Join(dir, "values")
	if err := os.MkdirAll(filepath.Join(app, "templates"), 0o755); err != nil {
		b.Fatal(err)
	}
	var v strings.Builder
	for g := range 250 {
		fmt.Fprintf(&v, "group%03d:\n", g)
		for k := range 20 {
			switch k % 4 {
			case 0:
				fmt.Fprintf(&v, "  key%02d: value-%d-%d\n", k, g, k)
			case 1:
				fmt.Fprintf(&v, "  key%02d: %d\n", k, g*100+k)
			case 2:
				fmt.Fprintf(&v, "  key%02d: %t\n", k, k%3 == 0)
			default:
				fmt.Fprintf(&v, "  key%02d: \"quoted %d\"\n", k, k)
			}
		}
	}
	for name, content := range map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: values\nversion: 1.0.0\n",
		"values.yaml": v.String(),
	} {
		if err := os.WriteFile(filepath.Join(app, name), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// BenchmarkAnnounce5000 is the announcement warm: the values.yaml was
// parsed before and comes from the cache (keyed by its SHA-256), as for a
// chart announced again, say at another revision.
func BenchmarkAnnounce5000(b *testing.B) { benchAnnounce(b, 0) }

// BenchmarkAnnounce5000Cold parses values.yaml every time (no cache).
func BenchmarkAnnounce5000Cold(b *testing.B) { benchAnnounce(b, -1) }

// BenchmarkAnnounce5000Worker is Announce5000 as cmp serve makes it: in a
// render worker process (the worker's cache warm).
func BenchmarkAnnounce5000Worker(b *testing.B) {
	benchAnnounceWith(b, helmplugin.Options{MaxConcurrent: 1, Workers: testWorkers(b, 0)})
}

func benchAnnounce(b *testing.B, cacheEntries int) {
	benchAnnounceWith(b, helmplugin.Options{CacheEntries: cacheEntries})
}

func benchAnnounceWith(b *testing.B, opts helmplugin.Options) {
	req := benchRequest(b, chart5000(b), "values")
	p := helmplugin.New(opts)
	b.Cleanup(func() { p.Close() })
	ctx := context.Background()
	anns, err := p.Announce(ctx, req)
	if err != nil {
		b.Fatal(err)
	}
	for _, a := range anns {
		if a.Name == "helm-parameters" && len(a.Map) != 5000 {
			b.Fatalf("announced %d values, want 5000", len(a.Map))
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := p.Announce(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// yqJQ is the proposal's get-parameters.sh (example 3): yq prints the
// values as properties, jq turns them into an announcement. In the
// proposal the program sits in a shell script in single quotes, where
// split("\\n") reaches jq as a backslash and an n, and splits nothing; the
// newline is written here as jq needs it.
const yqJQ = `
  [{
    name: "helm-parameters",
    title: "Helm Parameters",
    collectionType: "map",
    map: split("\n") | map(capture("(?<key>.*) = (?<value>.*)")) | from_entries
  }]`

// pipeline runs `yq e -o=p values.yaml | jq --slurp --raw-input PROGRAM` in
// dir, two processes joined by a pipe, no shell.
func pipeline(yq, jq, dir string) ([]byte, error) {
	y := exec.Command(yq, "e", "-o=p", "values.yaml")
	y.Dir = dir
	j := exec.Command(jq, "--slurp", "--raw-input", yqJQ)
	j.Dir = dir
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	y.Stdout, j.Stdin = w, r
	var out bytes.Buffer
	j.Stdout = &out
	if err := y.Start(); err != nil {
		return nil, err
	}
	if err := j.Start(); err != nil {
		return nil, err
	}
	w.Close()
	r.Close()
	if err := y.Wait(); err != nil {
		return nil, fmt.Errorf("yq: %w", err)
	}
	if err := j.Wait(); err != nil {
		return nil, fmt.Errorf("jq: %w", err)
	}
	return out.Bytes(), nil
}

// mikefarahYQ finds the Go yq (github.com/mikefarah/yq/v4) the proposal
// uses; Debian's yq package is a different program.
func mikefarahYQ(b *testing.B) string {
	yq, err := exec.LookPath("yq")
	if err == nil {
		if out, _ := exec.Command(yq, "--version").Output(); strings.Contains(string(out), "mikefarah") {
			return yq
		}
	}
	b.Fatalf("the benchmark needs the Go yq (github.com/mikefarah/yq/v4) on PATH: make bench-helm installs it into .cache/genbin")
	return ""
}

func BenchmarkYqJqAnnounce5000(b *testing.B) {
	yq := mikefarahYQ(b)
	jq, err := exec.LookPath("jq")
	if err != nil {
		b.Fatalf("the benchmark needs jq on PATH (apt-get install jq): %v", err)
	}
	req := benchRequest(b, chart5000(b), "values")
	out, err := pipeline(yq, jq, req.AppPath)
	if err != nil {
		b.Fatal(err)
	}
	var anns []params.Announcement
	if err := json.Unmarshal(out, &anns); err != nil || len(anns) != 1 || len(anns[0].Map) != 5000 {
		b.Fatalf("the pipeline announced %d entries (%v), want 5000", len(anns), err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := pipeline(yq, jq, req.AppPath); err != nil {
			b.Fatal(err)
		}
	}
}
