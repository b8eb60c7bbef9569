package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// manifests is the m.yaml the command plugin prints (`cat m.yaml`): three
// ConfigMaps.
const manifests = `apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
data:
  replicas: "3"
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-env
data:
  ENV: prod
  LOG_LEVEL: info
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-flags
data:
  feature.x: "on"
`

// manifestCount is the number of manifests in m.yaml.
const manifestCount = 3

// A repo is a generated repository: its files, and the tar.gz the
// repo-server would stream, packed once.
type repo struct {
	name    string
	appDir  string // the application's directory, slash-separated
	files   map[string][]byte
	content int64  // bytes of file content
	tgz     []byte // the tar.gz
	sum     string // its SHA-256, hex
}

// builder collects a repository's files.
type builder struct {
	files map[string][]byte
	rng   *rand.Rand
}

func newBuilder(seed uint64) *builder {
	return &builder{files: map[string][]byte{}, rng: rand.New(rand.NewPCG(seed, 1))}
}

func (b *builder) add(name string, body []byte) { b.files[name] = body }

// text returns n bytes of pseudo-random base64 text in 76-column lines,
// which gzip shrinks by only a quarter.
func (b *builder) text(n int) []byte {
	const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	body := make([]byte, n)
	for i := range body {
		if i%77 == 76 {
			body[i] = '\n'
		} else {
			body[i] = letters[b.rng.Uint32()&63]
		}
	}
	return body
}

// pack tars and gzips the files in name order, directories first, with
// the fixed modes and times the repo-server's tar would give them.
func (b *builder) pack(name, appDir string) (*repo, error) {
	r := &repo{name: name, appDir: appDir, files: b.files}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	mtime := time.Unix(1_700_000_000, 0)
	dirs := map[string]bool{}
	var names []string
	for n := range b.files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		var parents []string
		for d := path.Dir(n); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
			parents = append(parents, d)
		}
		for i := len(parents) - 1; i >= 0; i-- {
			if err := tw.WriteHeader(&tar.Header{Name: parents[i] + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: mtime}); err != nil {
				return nil, err
			}
		}
		body := b.files[n]
		if err := tw.WriteHeader(&tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body)), ModTime: mtime}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(body); err != nil {
			return nil, err
		}
		r.content += int64(len(body))
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	r.tgz = buf.Bytes()
	sum := sha256.Sum256(r.tgz)
	r.sum = hex.EncodeToString(sum[:])
	return r, nil
}

// writeTo writes the repository's files under dir, as a checkout.
func (r *repo) writeTo(dir string) error {
	for n, body := range r.files {
		p := filepath.Join(dir, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, body, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// monorepo returns a repository of files files: the application
// apps/web (m.yaml and 9 templates), the rest 100 to a directory under
// apps/app-NNN/templates. Every file but m.yaml is 2.6–8 KB (5.3 KB on
// average) of pseudo-random text, so the tar.gz of 20,000 files is about
// 78 MiB. The same arguments give the same bytes.
func monorepo(files int) (*repo, error) {
	const avg = 5300
	b := newBuilder(uint64(files))
	b.add("apps/web/m.yaml", []byte(manifests))
	for i := range min(files, 10) - 1 {
		b.add(fmt.Sprintf("apps/web/templates/t-%d.yaml", i), b.text(avg/2+b.rng.IntN(avg)))
	}
	for i := range max(files-10, 0) {
		b.add(fmt.Sprintf("apps/app-%03d/templates/file-%02d.yaml", i/100, i%100), b.text(avg/2+b.rng.IntN(avg)))
	}
	return b.pack(fmt.Sprintf("%d files", files), "apps/web")
}

// helmTemplate is a template of a Helm-style chart: small files of the
// kind charts are made of. NAME and N vary per file.
const helmTemplate = `{{- if .Values.NAME.enabled }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "chart.fullname" . }}-NAME
  labels:
    {{- include "chart.labels" . | nindent 4 }}
    app.kubernetes.io/component: NAME
spec:
  replicas: {{ .Values.NAME.replicas | default 1 }}
  selector:
    matchLabels:
      {{- include "chart.selectorLabels" . | nindent 6 }}
      app.kubernetes.io/component: NAME
  template:
    metadata:
      labels:
        {{- include "chart.selectorLabels" . | nindent 8 }}
        app.kubernetes.io/component: NAME
    spec:
      containers:
        - name: NAME
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
          ports:
            - containerPort: {{ add 8000 N }}
          env:
            {{- range $k, $v := .Values.NAME.env }}
            - name: {{ $k }}
              value: {{ $v | quote }}
            {{- end }}
{{- end }}
`

// helmStyle adds to b 4 charts of 53 templates each, with their
// Chart.yaml and values.yaml, under charts/: 220 small files.
func helmStyle(b *builder) {
	for c := range 4 {
		dir := fmt.Sprintf("charts/chart-%d", c)
		b.add(dir+"/Chart.yaml", fmt.Appendf(nil, "apiVersion: v2\nname: chart-%d\nversion: 1.%d.0\n", c, c))
		var values strings.Builder
		values.WriteString("image:\n  repository: nginx\n  tag: \"1.27\"\n")
		for t := range 53 {
			name := fmt.Sprintf("svc%02d", t)
			fmt.Fprintf(&values, "%s:\n  enabled: true\n  replicas: %d\n  env:\n    A: \"1\"\n", name, t%3+1)
			if t == 0 {
				b.add(dir+"/templates/_helpers.tpl", []byte(`{{- define "chart.fullname" -}}{{ .Release.Name }}-{{ .Chart.Name }}{{- end }}
{{- define "chart.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}
{{- define "chart.labels" -}}
{{ include "chart.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}
`))
				continue
			}
			body := strings.NewReplacer("NAME", name, " N ", fmt.Sprintf(" %d ", t)).Replace(helmTemplate)
			b.add(fmt.Sprintf("%s/templates/%s.yaml", dir, name), []byte(body))
		}
		b.add(dir+"/values.yaml", []byte(values.String()))
	}
}

// helmStyleRepo is the ~220-file repository of 4 charts; the command
// plugin's application is chart-0, with an m.yaml added.
func helmStyleRepo() (*repo, error) {
	b := newBuilder(220)
	helmStyle(b)
	b.add("charts/chart-0/m.yaml", []byte(manifests))
	return b.pack("~220 small files, Helm-style", "charts/chart-0")
}

// helmRepo is the same ~220-file repository with Helm's `subchart` test
// chart (read from subchartDir) at apps/subchart, which the built-in Helm
// plugin renders, and a chart whose values.yaml has 5,000 leaves at
// apps/values, whose parameters it announces.
func helmRepo(subchartDir string) (*repo, error) {
	b := newBuilder(221)
	helmStyle(b)
	err := filepath.WalkDir(subchartDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(subchartDir, p)
		if err != nil {
			return err
		}
		body, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		b.add("apps/subchart/"+filepath.ToSlash(rel), body)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading Helm's subchart test chart: %w", err)
	}
	b.add("apps/values/Chart.yaml", []byte("apiVersion: v2\nname: values\nversion: 1.0.0\n"))
	b.add("apps/values/values.yaml", []byte(values5000()))
	return b.pack("Helm's subchart chart in a ~220-file repository", "apps/subchart")
}

// values5000 is a values.yaml of 5,000 leaves: 250 groups of 20 keys of
// mixed types.
func values5000() string {
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
	return v.String()
}
