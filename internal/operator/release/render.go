package release

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/ignore"

	"github.com/strata-dev/strata/internal/deadline"
	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/helmrender"
	"github.com/strata-dev/strata/internal/operator/module"
)

// Defaults of Renderer.
const (
	// DefaultKubeVersion is the Kubernetes version templates see.
	DefaultKubeVersion = "v1.37.0"
	// DefaultCRDExtraLabels is ADDON_OPERATOR_CRD_EXTRA_LABELS' default.
	DefaultCRDExtraLabels = "heritage=addon-operator"
	// DefaultMaxBytes bounds a module's rendered output and chart files.
	DefaultMaxBytes = 64 << 20
	// DefaultTimeout bounds one render.
	DefaultTimeout = 2 * time.Minute
	// GeneratedChartVersion is the version of a generated chart.
	GeneratedChartVersion = "0.2.0"
)

// Directories of a module that a generated chart leaves out.
var generatedChartSkip = []string{"crds", "docs", "hooks", "images", "lib"}

// A Renderer renders module charts. Set its fields before the first
// Render; Render is safe for concurrent use.
type Renderer struct {
	// Namespace is the operator's namespace (ADDON_OPERATOR_NAMESPACE).
	Namespace string
	// KubeVersion is what .Capabilities.KubeVersion says; "" means
	// DefaultKubeVersion.
	KubeVersion string
	// Capabilities, when set, gives the capabilities templates see (a
	// cluster's: its version and API versions, as Helm installs with),
	// overriding KubeVersion.
	Capabilities func() *common.Capabilities
	// CRDExtraLabels are set on every CRD of crds/; nil means those of
	// DefaultCRDExtraLabels (see ParseLabels), empty none.
	CRDExtraLabels map[string]string
	// MaxBytes bounds a chart's files and its rendered output; 0 means
	// DefaultMaxBytes.
	MaxBytes int64
	// Timeout bounds one render; 0 means DefaultTimeout, negative none.
	Timeout time.Duration
	// ModuleChecksum makes Rendered.Checksum addon-operator's
	// moduleChecksum (see ModuleChecksum) instead of the sha256 of the
	// CRDs and manifests: what a Helm store compares with the release's
	// moduleChecksum label, so that a release addon-operator made is not
	// upgraded when nothing changed.
	ModuleChecksum bool
	// ResourceLabels are the labels a Helm store sets on every resource
	// of a release (addon-operator sets ADDON_OPERATOR_CRD_EXTRA_LABELS);
	// ModuleChecksum hashes the manifests labelled with them.
	ResourceLabels map[string]string
	// Codecs is the reference switch of the fast YAML path the rendered
	// documents are read with (helmrender.Sort).
	Codecs document.Codecs

	mu     sync.Mutex
	charts map[string]*loaded // by module path
}

// loaded is a module's chart and CRDs, read once.
type loaded struct {
	mu    sync.Mutex // renders of one chart run one at a time
	chart *chart.Chart
	deps  bool   // the chart has dependencies: reload it for each render
	crds  []byte // rendered crds/ stream, labels applied
	err   error
}

// A Rendered release: what Helm would install.
type Rendered struct {
	Name, Namespace string
	// CRDs is the YAML stream of the crds/ files, labelled.
	CRDs []byte
	// Manifests is the YAML stream of the rendered templates in Helm's
	// install order, each document headed by "# Source: <file>", hooks
	// last, as `helm template` prints them.
	Manifests []byte
	// Objects are the rendered objects, in Manifests' order.
	Objects []Object
	// Checksum is the sha256 of CRDs and Manifests, hex.
	Checksum string
	// ValuesChecksum is the sha256 of the values, hex.
	ValuesChecksum string
	// CRDsChecksum is the checksum of CRDs.
	CRDsChecksum string
	// NoChart is set when the module has neither Chart.yaml nor
	// templates/: there is nothing to render.
	NoChart bool

	// release is the non-hook manifests as Helm writes a release's
	// manifest, before post-rendering.
	release []byte
	src     *source
	// again renders the module again with the same values (after CRDs
	// changed the cluster's capabilities).
	again func(context.Context) (*Rendered, error)
}

// An Object is a rendered object's identity.
type Object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	Source     string `json:"source"` // the template file
	Hook       bool   `json:"hook,omitempty"`
}

// Release makes the release to store for a render, with a status.
func (r *Rendered) Release(status Status, description string) *Release {
	return &Release{
		Name: r.Name, Namespace: r.Namespace, Status: status,
		Checksum: r.Checksum, CRDsChecksum: r.CRDsChecksum, ValuesChecksum: r.ValuesChecksum,
		Description: description, CRDs: r.CRDs, Manifests: r.Manifests, src: r.src,
	}
}

// A RenderError is a module whose chart could not be rendered.
type RenderError struct {
	Module string
	Err    error
}

func (e *RenderError) Error() string { return "module " + e.Module + ": " + e.Err.Error() }
func (e *RenderError) Unwrap() error { return e.Err }

func (r *Renderer) maxBytes() int64 {
	if r.MaxBytes <= 0 {
		return DefaultMaxBytes
	}
	return r.MaxBytes
}

// Forget drops the cached chart of a module directory (after it changed).
func (r *Renderer) Forget(modulePath string) {
	r.mu.Lock()
	delete(r.charts, modulePath)
	r.mu.Unlock()
}

// load returns the module's cached chart, loading it the first time.
func (r *Renderer) load(m *module.Module) *loaded {
	r.mu.Lock()
	l := r.charts[m.Path]
	if l == nil {
		l = &loaded{}
		if r.charts == nil {
			r.charts = map[string]*loaded{}
		}
		r.charts[m.Path] = l
		l.mu.Lock()
		r.mu.Unlock()
		l.chart, l.err = loadChart(m, r.maxBytes())
		if l.err == nil && l.chart != nil {
			l.deps = len(l.chart.Metadata.Dependencies) > 0 || len(l.chart.Dependencies()) > 0
		}
		if l.err == nil {
			l.crds, l.err = r.crds(m)
		}
		if l.err != nil {
			// Not kept: the next render reads the module again.
			r.mu.Lock()
			if r.charts[m.Path] == l {
				delete(r.charts, m.Path)
			}
			r.mu.Unlock()
		}
		l.mu.Unlock()
		return l
	}
	r.mu.Unlock()
	return l
}

// Render renders a module's chart with values.
func (r *Renderer) Render(ctx context.Context, m *module.Module, values map[string]any) (*Rendered, error) {
	fail := func(err error) (*Rendered, error) { return nil, &RenderError{Module: m.Name, Err: err} }
	vsum, err := checksumJSON(values)
	if err != nil {
		return fail(fmt.Errorf("values: %w", err))
	}
	l := r.load(m)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return fail(l.err)
	}
	out := &Rendered{Name: m.Name, Namespace: r.Namespace, CRDs: l.crds, ValuesChecksum: vsum,
		CRDsChecksum: checksum(l.crds), src: &source{module: m, values: values, maxBytes: r.maxBytes()},
		again: func(ctx context.Context) (*Rendered, error) { return r.Render(ctx, m, values) }}
	if l.chart == nil {
		out.NoChart = true
		out.Checksum = checksum(out.CRDs, nil)
		return out, nil
	}
	ch := l.chart
	if l.deps {
		// Dependencies processing changes the chart: use a fresh one.
		if ch, err = loadChart(m, r.maxBytes()); err != nil {
			return fail(err)
		}
	}
	timeout := r.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	files, err := deadline.Run(ctx, timeout, func(ctx context.Context) (map[string]string, error) {
		return r.template(ctx, ch, m, values)
	})
	if stop := (*deadline.StoppedError)(nil); errors.As(err, &stop) {
		return fail(fmt.Errorf("rendering chart of %s stopped: %w", m.Path, stop.Cause))
	}
	if err != nil {
		return fail(fmt.Errorf("rendering chart of %s: %w", m.Path, err))
	}
	if err := out.assemble(files, r.maxBytes(), r.Codecs); err != nil {
		return fail(err)
	}
	out.Checksum = checksum(out.CRDs, out.Manifests)
	if r.ModuleChecksum {
		if out.Checksum, err = ModuleChecksum(out.release, r.ResourceLabels); err != nil {
			return fail(err)
		}
	}
	return out, nil
}

// template renders the chart's templates as `helm template` does,
// client-only, with the capabilities the Renderer gives (a cluster's, or
// Helm's defaults with KubeVersion, as Helm linked as a library reports
// them).
func (r *Renderer) template(ctx context.Context, ch *chart.Chart, m *module.Module, values map[string]any) (map[string]string, error) {
	var caps *common.Capabilities
	if r.Capabilities != nil {
		caps = r.Capabilities().Copy()
	} else {
		kv := r.KubeVersion
		if kv == "" {
			kv = DefaultKubeVersion
		}
		kver, err := common.ParseKubeVersion(kv)
		if err != nil {
			return nil, fmt.Errorf("kube version %q: %w", kv, err)
		}
		caps = common.DefaultCapabilities.Copy()
		caps.KubeVersion = *kver
	}
	t := helmrender.Template{ReleaseName: m.Name, Namespace: r.Namespace, Capabilities: caps,
		// addon-operator renders with Helm's install action, which checks it.
		CheckKubeVersion: true}
	return t.Run(ctx, ch, values)
}

// assemble orders the rendered files and writes the manifest stream.
func (out *Rendered) assemble(files map[string]string, max int64, codecs document.Codecs) error {
	hooks, manifests, err := helmrender.Sort(files, codecs)
	if err != nil {
		return fmt.Errorf("rendered manifests: %w", err)
	}
	var b bytes.Buffer
	write := func(d helmrender.Document, hook bool) error {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", d.Source, strings.TrimSpace(d.Text))
		if int64(b.Len()) > max {
			return fmt.Errorf("rendered manifests are larger than the limit of %d bytes", max)
		}
		out.Objects = append(out.Objects, Object{APIVersion: d.APIVersion, Kind: d.Kind, Name: d.Name, Source: d.Source, Hook: hook})
		return nil
	}
	var rel bytes.Buffer
	for _, m := range manifests {
		if err := write(m, false); err != nil {
			return err
		}
		fmt.Fprintf(&rel, "---\n# Source: %s\n%s\n", m.Source, m.Text)
	}
	out.release = rel.Bytes()
	for _, h := range hooks {
		if err := write(h, true); err != nil {
			return err
		}
	}
	out.Manifests = b.Bytes()
	return nil
}

// loadChart loads a module's chart: its Chart.yaml chart, or one generated
// from its files. A module with neither Chart.yaml nor templates/ has no
// chart (nil, nil).
func loadChart(m *module.Module, max int64) (*chart.Chart, error) {
	if m.HasChart {
		ch, err := loader.LoadDir(m.Path)
		if err != nil {
			return nil, fmt.Errorf("loading chart %s: %w", m.Path, err)
		}
		return ch, nil
	}
	if fi, err := os.Stat(filepath.Join(m.Path, "templates")); err != nil || !fi.IsDir() {
		return nil, nil
	}
	files := []*archive.BufferedFile{{
		Name: "Chart.yaml",
		Data: fmt.Appendf(nil, "apiVersion: v2\nname: %s\nversion: %s\n", m.Name, GeneratedChartVersion),
	}}
	rules := ignore.Empty()
	if data, err := document.ReadFile(filepath.Join(m.Path, ignore.HelmIgnore), 1<<20); err == nil {
		if rules, err = ignore.Parse(bytes.NewReader(data)); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(m.Path, ignore.HelmIgnore), err)
		}
	}
	rules.AddDefaults()
	var total int64
	err := filepath.WalkDir(m.Path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == m.Path {
			return nil
		}
		rel, _ := filepath.Rel(m.Path, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			if slices.Contains(generatedChartSkip, d.Name()) && filepath.Dir(rel) == "." || rules.Ignore(filepath.ToSlash(rel), fi) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || rel == module.EnabledScriptFile || rules.Ignore(filepath.ToSlash(rel), fi) {
			return nil
		}
		data, err := document.ReadFile(p, max-total)
		if err != nil {
			return fmt.Errorf("chart files of %s are larger than the limit of %d bytes: %w", m.Path, max, err)
		}
		total += int64(len(data))
		files = append(files, &archive.BufferedFile{Name: filepath.ToSlash(rel), Data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading module files: %w", err)
	}
	ch, err := loader.LoadFiles(files)
	if err != nil {
		return nil, fmt.Errorf("loading the generated chart of %s: %w", m.Path, err)
	}
	return ch, nil
}

// crds reads the module's CRD files into one stream, labelled.
func (r *Renderer) crds(m *module.Module) ([]byte, error) {
	labels := r.CRDExtraLabels
	if labels == nil {
		labels, _ = ParseLabels(DefaultCRDExtraLabels)
	}
	var b bytes.Buffer
	for _, f := range m.CRDs {
		data, err := document.ReadFile(f, r.maxBytes())
		if err != nil {
			return nil, err
		}
		docs, err := document.Loader{Limits: document.Limits{MaxBytes: r.maxBytes()}}.ParseDocuments(data, f)
		if err != nil {
			return nil, err
		}
		for i, d := range docs {
			obj, ok := d.Value.(map[string]any)
			if !ok || obj["kind"] != "CustomResourceDefinition" {
				line, _ := d.Pos.At()
				return nil, &document.LoadError{Source: f, Line: line, Err: document.ErrSyntax,
					Msg: fmt.Sprintf("document %d is %s, not a CustomResourceDefinition; crds/ holds CRDs only (name other files with a prefix of ADDON_OPERATOR_CRD_FILTER_PREFIXES)", i+1, kindOf(d.Value))}
			}
			if len(labels) > 0 {
				meta, _ := obj["metadata"].(map[string]any)
				if meta == nil {
					meta = map[string]any{}
					obj["metadata"] = meta
				}
				l, _ := meta["labels"].(map[string]any)
				if l == nil {
					l = map[string]any{}
					meta["labels"] = l
				}
				for k, v := range labels {
					l[k] = v
				}
			}
			text, err := document.MarshalYAML(obj)
			if err != nil {
				return nil, err
			}
			rel, _ := filepath.Rel(m.Path, f)
			fmt.Fprintf(&b, "---\n# Source: %s\n%s", filepath.ToSlash(rel), text)
		}
		if int64(b.Len()) > r.maxBytes() {
			return nil, fmt.Errorf("CRDs of %s are larger than the limit of %d bytes", m.Path, r.maxBytes())
		}
	}
	return b.Bytes(), nil
}

func kindOf(v any) string {
	if m, ok := v.(map[string]any); ok {
		if k, ok := m["kind"].(string); ok && k != "" {
			return "a " + k
		}
	}
	return document.Describe(v)
}

// ParseLabels reads labels written as ADDON_OPERATOR_CRD_EXTRA_LABELS
// writes them: "key=value,key2=value2". An empty string is no labels.
func ParseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" {
			return nil, fmt.Errorf("CRD extra label %q: write key=value pairs separated by commas, like heritage=addon-operator", kv)
		}
		out[k] = v
	}
	return out, nil
}

func checksum(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write(p)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// checksumJSON hashes the JSON encoding of values (keys sorted).
func checksumJSON(values map[string]any) (string, error) {
	h := sha256.New()
	enc := json.NewEncoder(h)
	if err := enc.Encode(values); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ValuesChecksum is the checksum Rendered.ValuesChecksum holds for values.
func ValuesChecksum(values map[string]any) (string, error) { return checksumJSON(values) }
