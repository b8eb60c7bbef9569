package helmrender

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"
	"unicode"

	"helm.sh/helm/v4/pkg/chart/common"
	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	k8sversion "k8s.io/apimachinery/pkg/util/version"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/strata-dev/strata/internal/deadline"
	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/document/yamljson"
	"github.com/strata-dev/strata/internal/limits"
	"github.com/strata-dev/strata/internal/manifest"
)

// DefaultKubeVersion is the Kubernetes version templates see when the
// caller gives none: the version the helm v4.3.1 CLI assumes (one major
// version above its k8s.io/client-go, v0.37). It is fixed here because
// Helm's own default depends on how the binary was built (and is v1.20.0
// in test binaries).
const DefaultKubeVersion = "v1.37.0"

// HelmVersion is the version of the Helm SDK strata links (go.mod), which
// templates see in .Capabilities.HelmVersion as they would under the helm
// CLI of that version (see Capabilities).
const HelmVersion = "v4.3.1"

// ParseKubeVersion reads a Kubernetes version as Argo CD passes it to
// helm: it keeps only the numeric components, dropping what Kubernetes
// distributions append ("v1.29.3-eks-4f9a2b1" and "1.29.3+k3s1" are
// 1.29.3, "1.29+" is 1.29), by Kubernetes' generic version rules, then
// parses that as helm does. Without this a pre-release suffix would fail
// charts' semverCompare ">=1.21.0" checks that pass under Argo CD.
func ParseKubeVersion(v string) (*common.KubeVersion, error) {
	g, err := k8sversion.ParseGeneric(v)
	if err != nil {
		return nil, err
	}
	return common.ParseKubeVersion(g.String())
}

// Capabilities returns what templates see in .Capabilities under the helm
// CLI: Helm's defaults, with the Kubernetes version kv, apiVersions added
// to Helm's default API versions, and the Helm version a release build of
// HelmVersion reports.
func Capabilities(kv *common.KubeVersion, apiVersions []string) *common.Capabilities {
	caps := common.DefaultCapabilities.Copy()
	caps.KubeVersion = *kv
	// A new slice: Copy shares the defaults' backing array between requests.
	caps.APIVersions = slices.Concat(caps.APIVersions, common.VersionSet(apiVersions))
	// What a release build of helm reports (its ldflags stamp these);
	// linked as a library, Helm reports only its minor version.
	caps.HelmVersion.Version, caps.HelmVersion.GitTreeState = HelmVersion, "clean"
	return caps
}

// A Template runs a chart's templates client-only, as Helm's install
// action does on a client-only dry run (and so `helm template`): the
// chart's dependencies processed with the values (conditions, tags,
// imported values), the values checked against the chart's schema and
// given the release and capabilities, the templates run with no cluster
// (lookup returns nothing, no DNS). It returns the rendered files by
// template path, NOTES.txt files left out. Set its fields, then call Run.
type Template struct {
	// ReleaseName and Namespace are .Release.Name and .Release.Namespace;
	// the release is a first install (revision 1).
	ReleaseName, Namespace string
	// Capabilities are what .Capabilities says; nil is Capabilities of
	// DefaultKubeVersion.
	Capabilities *common.Capabilities
	// SkipSchema leaves the values unchecked against values.schema.json
	// (helm template --skip-schema-validation).
	SkipSchema bool
	// CheckKubeVersion refuses a chart whose Chart.yaml kubeVersion range
	// does not hold the Capabilities' Kubernetes version, as Helm's install
	// action does.
	CheckKubeVersion bool
	// MaxBytes, when positive, bounds what one call of a template function
	// that can build a value of any size may build (see boundedFuncs): the
	// rendered output's own bound.
	MaxBytes int
}

// Run renders ch with vals, the values Helm coalesces with the chart's
// (user values). Helm changes the chart it renders (dependencies
// processing): pass a chart no other render uses.
func (t *Template) Run(ctx context.Context, ch *chart.Chart, vals map[string]any) (map[string]string, error) {
	if err := chartutil.ProcessDependencies(ch, vals); err != nil {
		return nil, fmt.Errorf("chart dependencies processing failed: %w", err)
	}
	return t.render(ctx, ch, vals)
}

// render is Run on a chart whose dependencies are processed.
func (t *Template) render(ctx context.Context, ch *chart.Chart, vals map[string]any) (map[string]string, error) {
	caps := t.Capabilities
	if caps == nil {
		kv, err := common.ParseKubeVersion(DefaultKubeVersion)
		if err != nil {
			return nil, err
		}
		caps = Capabilities(kv, nil)
	}
	opts := common.ReleaseOptions{Name: t.ReleaseName, Namespace: t.Namespace, Revision: 1, IsInstall: true}
	renderVals, err := commonutil.ToRenderValuesWithSchemaValidation(ch, vals, opts, caps, t.SkipSchema)
	if err != nil {
		return nil, err
	}
	if t.CheckKubeVersion && ch.Metadata.KubeVersion != "" && !chartutil.IsCompatibleRange(ch.Metadata.KubeVersion, caps.KubeVersion.String()) {
		return nil, fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", ch.Metadata.KubeVersion, caps.KubeVersion.Version)
	}
	// No client: lookup returns nothing, no DNS.
	var eng engine.Engine
	if t.MaxBytes > 0 {
		eng.CustomTemplateFuncs = boundedFuncs(t.MaxBytes)
	}
	files, err := eng.RenderWithContext(ctx, ch, renderVals)
	if err != nil {
		return nil, err
	}
	for name := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			delete(files, name)
		}
	}
	return files, nil
}

// Limits bound a Renderer's output. Zero fields take DefaultLimits'.
type Limits struct {
	// MaxManifests and MaxManifestBytes bound the rendered output (the
	// manifests, as JSON, Lists unpacked).
	MaxManifests     int
	MaxManifestBytes int
}

// DefaultLimits returns the limits a zero Limits field takes: Argo CD
// receives a plugin's output in one gRPC message of at most 100 MiB.
func DefaultLimits() Limits {
	return Limits{MaxManifests: 100_000, MaxManifestBytes: 96 << 20}
}

func (l Limits) withDefaults() Limits { return limits.Or(l, DefaultLimits()) }

// Options tune a Renderer.
type Options struct {
	Limits Limits
	// Timeout bounds one render (the wait for a slot and the templates'
	// run) on top of the context's; 0 is no bound but the context's.
	Timeout time.Duration
	// MaxConcurrent bounds the renders running at once; 0 is GOMAXPROCS.
	// Go templates cannot be interrupted: a render past its deadline is
	// abandoned, but keeps its slot until it ends, so runaway templates
	// cannot pile up.
	MaxConcurrent int
	// DocumentCacheBytes bounds what is kept of the rendered documents
	// read before (their text and JSON form, by the SHA-256 of the text);
	// 0 or a negative number keeps none.
	DocumentCacheBytes int64
	// Codecs is the reference switch of the fast YAML path (yamljson):
	// document.ReferenceCodecs reads every rendered document with
	// sigs.k8s.io/yaml only.
	Codecs document.Codecs
}

// A Renderer renders charts as `helm template` prints them and Argo CD
// reads them back (see Render), within its limits, a bounded number at a
// time, with a cache of the documents read before. It is safe for
// concurrent use.
type Renderer struct {
	opts Options
	lim  Limits
	sem  chan struct{}
	docs docCache
}

// New returns a Renderer with the given options.
func New(opts Options) *Renderer {
	n := opts.MaxConcurrent
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	return &Renderer{opts: opts, lim: opts.Limits.withDefaults(), sem: make(chan struct{}, n),
		docs: docCache{lru: NewCache[parsed](1<<20, opts.DocumentCacheBytes), codecs: opts.Codecs}}
}

// Stats returns the counters of the rendered documents' cache.
func (r *Renderer) Stats() CacheStats { return r.docs.lru.Stats() }

// A Release says how Render renders a chart.
type Release struct {
	// Name, Namespace, Capabilities, SkipSchema: see Template.
	Name, Namespace string
	Capabilities    *common.Capabilities
	SkipSchema      bool
	// SkipCRDs leaves the crds/ files out (helm template without
	// --include-crds); SkipTests the test hooks (--skip-tests).
	SkipCRDs, SkipTests bool
	// Printed, if not nil, receives helm template's output; the manifests
	// are then checked and counted but not returned.
	Printed *[]byte
}

// Render renders ch with vals as `helm template --include-crds` does
// (Template, with the kubeVersion check and the template functions
// bounded by Limits.MaxManifestBytes), and returns the manifests as Argo
// CD reads them from helm's output, as JSON objects: CRDs, manifests in
// install order, hooks (see printedText), empty documents dropped, Lists
// unpacked, each an object with apiVersion and kind, all within Limits.
// When the context or Options.Timeout ends first it returns an error at
// once; the abandoned render keeps its slot until it ends.
func (r *Renderer) Render(ctx context.Context, ch *chart.Chart, vals map[string]any, rel Release) ([]string, error) {
	if r.opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.opts.Timeout)
		defer cancel()
	}
	start := time.Now()
	select {
	case r.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting to render chart %q: %w", ch.Name(), context.Cause(ctx))
	}
	out, err := deadline.Run(ctx, 0, func(ctx context.Context) ([]string, error) {
		defer func() { <-r.sem }()
		return r.template(ctx, ch, vals, rel)
	})
	if stop := (*deadline.StoppedError)(nil); errors.As(err, &stop) {
		return nil, fmt.Errorf("rendering chart %q did not finish in %s: %w", ch.Name(), time.Since(start).Round(time.Millisecond), stop.Cause)
	}
	if err != nil {
		return nil, fmt.Errorf("rendering chart %q: %w", ch.Name(), err)
	}
	return out, nil
}

// template renders the chart as `helm template` does: Helm's install
// action, client-only (action.Install.RunWithContext with DryRunStrategy
// client, and the output of helm's template command), written out here on
// the same SDK calls so that only the rendering parts of Helm are linked
// in. It returns the documents helm template prints, in its order (CRDs,
// manifests in install order, hooks), as JSON objects.
func (r *Renderer) template(ctx context.Context, ch *chart.Chart, vals map[string]any, rel Release) ([]string, error) {
	if err := chartutil.ProcessDependencies(ch, vals); err != nil {
		return nil, fmt.Errorf("chart dependencies processing failed: %w", err)
	}
	// The CRD files do not depend on the values or the render (only on
	// which subcharts are enabled): read them meanwhile, as printed in the
	// middle of the output (the last file is read again below if it ends
	// the CRDs and manifests).
	var crds []chart.CRD
	if !rel.SkipCRDs {
		crds = ch.CRDObjects()
	}
	// For helm template's text (GenerateYAML) the manifests are checked
	// and counted, not kept.
	out := &output{lim: r.lim, cache: r.docs, drop: rel.Printed != nil}
	// Nor converted, where reading them tells all the checks need.
	out.cache.check = out.drop
	type crdResult struct {
		docs []*streamDoc
		last int // where the last file's documents start
		err  error
	}
	crdRead := make(chan crdResult, 1)
	go func() {
		var res crdResult
		for _, crd := range crds {
			docs, err := splitStream(printedCRD(crd.File.Data), crd.Filename, r.docs.codecs)
			if err != nil {
				res.err = err
				break
			}
			res.last = len(res.docs)
			res.docs = append(res.docs, docs...)
		}
		if res.err == nil {
			out.convertStreams(res.docs)
		}
		crdRead <- res
	}()
	tpl := Template{ReleaseName: rel.Name, Namespace: rel.Namespace, Capabilities: rel.Capabilities,
		SkipSchema: rel.SkipSchema, CheckKubeVersion: true, MaxBytes: r.lim.MaxManifestBytes}
	files, err := tpl.render(ctx, ch, vals)
	if err != nil {
		return nil, err
	}
	hooks, manifests, err := sortRendered(files, out.cache)
	if err != nil {
		return nil, err
	}
	if rel.SkipTests {
		hooks = slices.DeleteFunc(hooks, (*doc).isTest)
	}
	// Where helm template's output ends: after the last hook, else after
	// the manifests (see printedText).
	sectionEnd := endOfSection
	if len(hooks) == 0 {
		sectionEnd = endOfStream
	}
	crd := <-crdRead
	if crd.err != nil {
		return nil, crd.err
	}
	if last := len(crds) - 1; last >= 0 && len(manifests) == 0 {
		data := string(crds[last].File.Data)
		if text := printedText(data, sectionEnd); text != printedText(data, middle) {
			docs, err := splitStream(text, crds[last].Filename, r.docs.codecs)
			if err != nil {
				return nil, err
			}
			out.convertStreams(docs)
			crd.docs = append(crd.docs[:crd.last], docs...)
		}
	}
	err = out.account(crd.docs, manifests, hooks, sectionEnd)
	if errors.Is(err, errRecount) {
		// Counted by bounds of their JSON's length, the documents passed
		// the limit: they are converted and counted exactly.
		out.cache.check = false
		out.convertStreams(crd.docs)
		docs := slices.Concat(manifests, hooks)
		Parallel(len(docs), func(i int) { docs[i].parse(out.cache) })
		for _, d := range docs {
			if d.err != nil {
				return nil, d.err
			}
		}
		err = out.account(crd.docs, manifests, hooks, sectionEnd)
	}
	if err != nil {
		return nil, err
	}
	if rel.Printed != nil {
		*rel.Printed = printStream(crds, manifests, hooks)
	}
	if out.docs == nil {
		return []string{}, nil
	}
	return out.docs, nil
}

// printStream returns what helm template prints (Helm's renderResources
// and the template command): each CRD file, then each manifest, as
// "---\n# Source: PATH\n" + its text + "\n", all of it trimmed of the
// white space at both ends and ended by one line break; then each hook
// the same way.
func printStream(crds []chart.CRD, manifests, hooks []*doc) []byte {
	n := 1
	for _, c := range crds {
		n += len(c.Filename) + len(c.File.Data) + 16
	}
	for _, d := range slices.Concat(manifests, hooks) {
		n += len(d.source) + len(d.text) + 16
	}
	b := make([]byte, 0, n)
	head := func(source string) {
		b = append(b, "---\n# Source: "...)
		b = append(b, source...)
		b = append(b, '\n')
	}
	for _, c := range crds {
		head(c.Filename)
		b = append(append(b, c.File.Data...), '\n')
	}
	for _, d := range manifests {
		head(d.source)
		b = append(append(b, d.text...), '\n')
	}
	b = append(bytes.TrimSpace(b), '\n')
	for _, d := range hooks {
		head(d.source)
		b = append(append(b, d.text...), '\n')
	}
	return b
}

// Where a document stands in helm template's output, which decides the
// text Argo CD reads for it (printedText).
type position int

const (
	middle       position = iota // followed by another document
	endOfSection                 // the last of the CRDs and manifests, hooks follow
	endOfStream                  // the last of the CRDs and manifests, no hook follows
	lastHook                     // the last hook printed, which ends the output
)

// printedText is the text Argo CD reads for a document helm template
// printed at the position pos. helm template (Helm's renderResources and
// the template command) prints every document, CRD file, manifest and
// hook, as "---\n# Source: PATH\n" + its text + "\n", except that the CRDs
// and manifests are printed together with the whitespace at their end
// trimmed and one line break added; the hooks follow. Argo CD runs helm,
// drops one line break from the end of the output
// (github.com/argoproj/pkg/exec.RunCommandExt) and splits it with
// Kubernetes' YAML reader, which reads it a line at a time and ends every
// line with "\n", the last one too, and "\r\n" too. So a block scalar
// that ends a template without a line break ends in one; the trailing
// blank lines of a "|+" block gain one, but the last of the manifests
// loses them and the last hook keeps them as they are.
func printedText(text string, pos position) string {
	switch pos {
	case endOfSection, endOfStream:
		text = strings.TrimRightFunc(text, unicode.IsSpace) + "\n"
	case lastHook:
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
	default:
		text += "\n"
	}
	if strings.Contains(text, "\r\n") {
		text = strings.ReplaceAll(text, "\r\n", "\n")
	}
	return text
}

// account adds the CRDs' documents, the manifests and the hooks, in
// helm template's order, the last of the manifests and hooks as printed
// at sectionEnd and lastHook.
func (o *output) account(crds []*streamDoc, manifests, hooks []*doc, sectionEnd position) error {
	o.docs, o.count, o.total, o.bounded = nil, 0, 0, false
	if err := o.addStreams(crds); err != nil {
		return err
	}
	for i, d := range manifests {
		end := middle
		if i == len(manifests)-1 {
			end = sectionEnd
		}
		if err := o.addDoc(d, end); err != nil {
			return err
		}
	}
	for i, d := range hooks {
		end := middle
		if i == len(hooks)-1 {
			end = lastHook
		}
		if err := o.addDoc(d, end); err != nil {
			return err
		}
	}
	return nil
}

// errRecount says that the documents read by yamljson.Check, counted by bounds
// of their JSON's length, pass MaxManifestBytes: they must be converted
// and counted again, exactly.
var errRecount = errors.New("the bounds of the manifests' lengths pass the limit")

// maxListNesting bounds how deep Lists inside Lists are unpacked.
const maxListNesting = 8

// output collects the manifests, within the limits.
type output struct {
	lim   Limits
	docs  []string
	count int // manifests added
	total int // their bytes
	cache docCache
	// drop checks and counts the manifests without keeping them.
	drop bool
	// bounded: total holds bounds of the lengths of documents yamljson.Check
	// read (see within).
	bounded bool
}

// addDoc adds a rendered document printed at pos (see printedText). Its
// JSON form was read from its text as printed in the middle of the
// output; at the end, where the text Argo CD reads differs, it is read
// again when that can change it (a block scalar may end it).
func (o *output) addDoc(d *doc, pos position) error {
	if pos == middle || !mayEndInBlockScalar(d.text) {
		return o.addJSON(d.json, &d.parsed, d.source)
	}
	text := printedText(d.text, pos)
	if text == printedText(d.text, middle) {
		return o.addJSON(d.json, &d.parsed, d.source) // read as it is printed
	}
	if o.cache.checking() {
		if head, bound, err := yamljson.Check(text); err == nil {
			return o.addJSON("", &parsed{kind: head.Kind, version: head.Version, checked: true, bound: bound}, d.source)
		}
	}
	js, head, err := convertDoc([]byte(text), o.cache.codecs)
	if err != nil {
		return fmt.Errorf("YAML parse error on %s: %w", d.source, err)
	}
	return o.addJSON(string(js), &parsed{json: string(js), kind: head.Kind, version: head.Version}, d.source)
}

// printedCRD is printedText(string(data), middle), in one copy of data.
func printedCRD(data []byte) string {
	if bytes.IndexByte(data, '\r') >= 0 {
		return printedText(string(data), middle)
	}
	var b strings.Builder
	b.Grow(len(data) + 1)
	b.Write(data)
	b.WriteByte('\n')
	return b.String()
}

// A streamDoc is a document of a CRD file: its text and the source it
// names, and what reading it gave.
type streamDoc struct {
	text   string
	source string
	json   string
	head   *parsed // the JSON's kind and version, when reading it told them
	err    error
}

// splitStream splits a YAML stream into documents as Kubernetes' YAML
// reader does (manifest.SplitReader), as Argo CD reads helm's output. A
// "# Source: " comment at the start of a document names its source.
func splitStream(stream string, source string, codecs document.Codecs) ([]*streamDoc, error) {
	texts, err := manifest.SplitReader(stream, codecs)
	if err != nil {
		return nil, fmt.Errorf("%s: splitting the YAML documents: %w", where(source), err)
	}
	docs := make([]*streamDoc, len(texts))
	for i, text := range texts {
		if s := sourceOf(text); s != "" {
			source = s
		}
		docs[i] = &streamDoc{text: text, source: source}
	}
	return docs, nil
}

// convertStreams reads the documents of CRD files, in parallel.
func (o *output) convertStreams(docs []*streamDoc) {
	Parallel(len(docs), func(i int) {
		d := docs[i]
		if d.json, d.head, d.err = o.streamJSON(d.text); d.err != nil {
			d.err = fmt.Errorf("%s: the document is not valid YAML: %w", where(d.source), d.err)
		}
	})
}

// addStreams adds the documents of CRD files read by convertStreams (see
// addJSON), in order.
func (o *output) addStreams(docs []*streamDoc) error {
	for _, d := range docs {
		if d.err != nil {
			return d.err
		}
		if err := o.addJSON(d.json, d.head, d.source); err != nil {
			return err
		}
	}
	return nil
}

// streamJSON converts a document of a CRD file as sigs.k8s.io/yaml does,
// through the document cache: the CRDs of a chart are the same at every
// render, and often its largest documents. It returns the document's kind
// and version too when the fast path read them as encoding/json reads them
// from the JSON (see yamljson.ToJSONFast), else nil: addJSON reads them.
func (o *output) streamJSON(text string) (string, *parsed, error) {
	if o.cache.checking() {
		if head, bound, err := yamljson.Check(text); err == nil {
			return "", &parsed{kind: head.Kind, version: head.Version, headed: true, checked: true, bound: bound}, nil
		}
	}
	doc := []byte(text)
	var key [32]byte
	if o.cache.lru != nil {
		h := sha256.New()
		h.Write([]byte("crd\x00")) // apart from the rendered documents' entries
		h.Write(doc)
		h.Sum(key[:0])
		if p, ok := o.cache.lru.Get(key); ok {
			if p.headed {
				return p.json, &p, nil
			}
			return p.json, nil, nil
		}
	}
	var (
		js     []byte
		head   yamljson.Head
		headed bool
		err    error = yamljson.ErrNotFast
	)
	if o.cache.codecs.Fast() {
		js, head, headed, err = yamljson.ToJSONFast(doc)
	}
	if err != nil {
		// The head did not read, or the fast path failed: the reference.
		if js, err = sigsyaml.YAMLToJSON(doc); err != nil {
			return "", nil, err
		}
		headed = false
	}
	p := parsed{json: string(js)}
	if headed {
		p.kind, p.version, p.headed = head.Kind, head.Version, true
	}
	o.cache.lru.Add(key, int64(len(doc)+len(js)+docOverhead), p)
	if headed {
		return p.json, &p, nil
	}
	return p.json, nil, nil
}

// addJSON adds a document (in JSON, read with Kubernetes' YAML rules as
// Argo CD reads it): an empty one is dropped, a List is unpacked, and
// anything else must be an object with apiVersion and kind.
func (o *output) addJSON(js string, p *parsed, source string) error {
	if p != nil && p.checked {
		// An object with apiVersion and kind, not a List.
		return o.within(p.bound, true, source)
	}
	if emptyJSON(js) {
		return nil
	}
	kind, version := "", ""
	if p != nil {
		kind, version = p.kind, p.version
	} else {
		var head yamljson.Head
		if js[0] != '{' || json.Unmarshal([]byte(js), &head) != nil {
			return unpack([]byte(js), source, 0, o.add) // says what is wrong
		}
		kind, version = head.Kind, head.Version
	}
	if strings.HasSuffix(kind, "List") {
		return unpack([]byte(js), source, 0, o.add)
	}
	if kind == "" || version == "" {
		return fmt.Errorf("%s: a rendered document has no apiVersion or kind: %s", where(source), clip(js, 120))
	}
	return o.add(js, source)
}

func (o *output) add(m string, source string) error {
	if err := o.within(len(m), false, source); err != nil {
		return err
	}
	if !o.drop {
		o.docs = append(o.docs, strings.TrimSpace(m))
	}
	return nil
}

// within counts a manifest of n bytes of JSON (at most n bytes, if
// bounded) within the limits.
func (o *output) within(n int, bounded bool, source string) error {
	o.total += n
	o.bounded = o.bounded || bounded
	if o.total > o.lim.MaxManifestBytes {
		if o.bounded {
			return errRecount
		}
		return fmt.Errorf("the rendered manifests are larger than %d bytes (at %s)", o.lim.MaxManifestBytes, where(source))
	}
	if o.count >= o.lim.MaxManifests {
		return fmt.Errorf("the chart renders more than %d manifests", o.lim.MaxManifests)
	}
	o.count++
	return nil
}

func where(source string) string {
	if source == "" {
		return "the chart"
	}
	return source
}

// unpack checks one JSON document and adds it, or the items of a List.
func unpack(js []byte, source string, depth int, add func(string, string) error) error {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var obj any
	if err := dec.Decode(&obj); err != nil {
		return fmt.Errorf("%s: %w", where(source), err)
	}
	m, ok := obj.(map[string]any)
	if !ok {
		return fmt.Errorf("%s: a rendered document is not a Kubernetes object (a map with apiVersion and kind): %s", where(source), clip(string(js), 120))
	}
	kind, _ := m["kind"].(string)
	apiVersion, _ := m["apiVersion"].(string)
	if kind == "" || apiVersion == "" {
		return fmt.Errorf("%s: a rendered document has no apiVersion or kind: %s", where(source), clip(string(js), 120))
	}
	items, isList := manifest.ListItems(m)
	if !isList {
		return add(string(js), source)
	}
	if depth >= maxListNesting {
		return fmt.Errorf("%s: Lists nested more than %d deep", where(source), maxListNesting)
	}
	for _, it := range items {
		b, err := json.Marshal(it)
		if err != nil {
			return fmt.Errorf("%s: %w", where(source), err)
		}
		if err := unpack(b, source, depth+1, add); err != nil {
			return err
		}
	}
	return nil
}

// sourceOf returns the template named by a "# Source: " comment at the
// start of a document.
func sourceOf(doc string) string {
	for _, line := range strings.SplitN(doc, "\n", 4) {
		line = strings.TrimSpace(line)
		if s, ok := strings.CutPrefix(line, "# Source: "); ok {
			return s
		}
		if len(line) > 0 && line[0] != '#' && line != "---" {
			break
		}
	}
	return ""
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "..."
}
