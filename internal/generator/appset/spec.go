package appset

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/strata-dev/strata/internal/document"
)

// MaxFileBytes bounds the size of an ApplicationSet file.
const MaxFileBytes = 8 << 20

// fileLimits bound what an ApplicationSet or manifest file may expand to:
// far beyond any real one, far below what would take the machine down.
var fileLimits = document.Limits{MaxBytes: MaxFileBytes, MaxDepth: 256, MaxNodes: 1 << 20}

// Errors wrapped by Parse and Render, for errors.Is.
var (
	// ErrInvalid marks an ApplicationSet the controller would reject or
	// that cannot be rendered as written.
	ErrInvalid = errors.New("invalid ApplicationSet")
	// ErrUnsupported marks a generator that needs an SCM provider's API
	// (scmProvider, pullRequest).
	ErrUnsupported = errors.New("generator not supported locally")
)

// ApplicationSet is a parsed argoproj.io/v1alpha1 ApplicationSet, ready to
// render.
type ApplicationSet struct {
	Name      string
	Namespace string
	Source    string // the file it was read from, for errors

	// GoTemplate and GoTemplateOptions are spec.goTemplate and
	// spec.goTemplateOptions.
	GoTemplate        bool
	GoTemplateOptions []string

	pos                *document.Pos
	entries            [][]*generator // one list per spec.generators entry: one generator per kind set in it
	template           map[string]any // spec.template, nil when absent
	templatePatch      *string
	preserveOnDeletion bool
	applyNested        bool
	warnings           []string
}

// Warnings lists what Parse found suspicious but the controller accepts,
// such as a template on a nested generator, which it ignores.
func (a *ApplicationSet) Warnings() []string { return a.warnings }

// The documents below mirror the ApplicationSet CRD: document.Decode checks
// a file against them strictly, so a misspelt field is an error with its
// line. Fields rendering does not evaluate are typed `any`.

type appSetDoc struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   map[string]any `json:"metadata"`
	Spec       *specDoc       `json:"spec"`
	Status     any            `json:"status"`
}

type specDoc struct {
	GoTemplate                   bool           `json:"goTemplate"`
	GoTemplateOptions            []string       `json:"goTemplateOptions"`
	Generators                   []generatorDoc `json:"generators"`
	Template                     *templateDoc   `json:"template"`
	TemplatePatch                *string        `json:"templatePatch"`
	SyncPolicy                   *syncPolicyDoc `json:"syncPolicy"`
	ApplyNestedSelectors         bool           `json:"applyNestedSelectors"`
	Strategy                     any            `json:"strategy"`
	PreservedFields              any            `json:"preservedFields"`
	IgnoreApplicationDifferences any            `json:"ignoreApplicationDifferences"`
}

type syncPolicyDoc struct {
	PreserveResourcesOnDeletion bool `json:"preserveResourcesOnDeletion"`
	ApplicationsSync            any  `json:"applicationsSync"`
}

type templateDoc struct {
	Metadata *templateMetaDoc `json:"metadata"`
	Spec     map[string]any   `json:"spec"`
}

type templateMetaDoc struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	Finalizers  []string          `json:"finalizers"`
}

// generatorDoc is one entry of spec.generators, or of a matrix or merge
// generator's generators.
type generatorDoc struct {
	List                    *listDoc            `json:"list"`
	Clusters                *clustersDoc        `json:"clusters"`
	Git                     *gitDoc             `json:"git"`
	SCMProvider             any                 `json:"scmProvider"`
	ClusterDecisionResource *clusterDecisionDoc `json:"clusterDecisionResource"`
	PullRequest             any                 `json:"pullRequest"`
	Plugin                  *pluginDoc          `json:"plugin"`
	Matrix                  *matrixDoc          `json:"matrix"`
	Merge                   *mergeDoc           `json:"merge"`
	Selector                *labelSelectorDoc   `json:"selector"`
}

type listDoc struct {
	Elements     []any        `json:"elements"`
	ElementsYaml string       `json:"elementsYaml"`
	Template     *templateDoc `json:"template"`
}

type pluginDoc struct {
	ConfigMapRef        configMapRefDoc   `json:"configMapRef"`
	Input               pluginInputDoc    `json:"input"`
	Values              map[string]string `json:"values"`
	RequeueAfterSeconds *int64            `json:"requeueAfterSeconds"`
	Template            *templateDoc      `json:"template"`
}

type configMapRefDoc struct {
	Name string `json:"name"`
}

type pluginInputDoc struct {
	Parameters map[string]any `json:"parameters"`
}

type matrixDoc struct {
	Generators []generatorDoc `json:"generators"`
	Template   *templateDoc   `json:"template"`
}

type mergeDoc struct {
	Generators []generatorDoc `json:"generators"`
	MergeKeys  []string       `json:"mergeKeys"`
	Template   *templateDoc   `json:"template"`
}

type labelSelectorDoc struct {
	MatchLabels      map[string]string        `json:"matchLabels"`
	MatchExpressions []selectorRequirementDoc `json:"matchExpressions"`
}

type selectorRequirementDoc struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values"`
}

// generator is one generator ready to evaluate.
type generator struct {
	path      string // spec.generators[1].matrix.generators[0].plugin
	entryPath string // spec.generators[1].matrix.generators[0]
	kind      string // list, plugin, matrix or merge
	depth     int    // 0 for spec.generators, 1 for their children, 2 below

	list      *listDoc
	plugin    *pluginDoc
	git       *gitDoc
	clusters  *clustersDoc
	decision  *clusterDecisionDoc
	children  []*generator
	mergeKeys []string
	selector  *selector

	template     map[string]any // the generator's own template, nil when absent
	templatePath string

	raw map[string]any // the entry as written, for matrix interpolation
	pos *document.Pos  // of the entry
}

// Parse decodes an ApplicationSet from YAML or JSON. source names the file
// in errors.
//
// The file is read as kubectl and the argocd CLI read manifests: YAML 1.1
// scalars (an unquoted yes is true, 012 is 10; see yaml11).
func Parse(data []byte, source string) (*ApplicationSet, error) {
	tree, pos, err := parseOneYAML11(data, source, fileLimits, true)
	if err != nil {
		return nil, err
	}
	return fromTree(tree, pos, source)
}

// ParseAll decodes every ApplicationSet of a YAML stream (documents
// separated by ---), as Parse decodes one. A stream without any is an
// error; so are two with the same namespace and name.
func ParseAll(data []byte, source string) ([]*ApplicationSet, error) {
	docs, err := parseYAML11(data, source, fileLimits, true)
	if err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		return nil, invalidf(source, nil, "the file holds no ApplicationSet")
	}
	sets := make([]*ApplicationSet, 0, len(docs))
	seen := map[[2]string]int{}
	for _, d := range docs {
		a, err := fromTree(d.Value, d.Pos, source)
		if err != nil {
			return nil, err
		}
		key := [2]string{a.Namespace, a.Name}
		if first, dup := seen[key]; dup {
			return nil, invalidf(source, d.Pos, "ApplicationSet %q is defined twice (first at line %d)", a.Name, first)
		}
		seen[key] = d.Pos.Line
		sets = append(sets, a)
	}
	return sets, nil
}

// fromTree decodes one parsed ApplicationSet document.
func fromTree(tree any, pos *document.Pos, source string) (*ApplicationSet, error) {
	var err error
	root, ok := tree.(map[string]any)
	if !ok {
		return nil, invalidf(source, pos, "the file must hold one ApplicationSet manifest (a map), but it holds %s", document.Describe(tree))
	}
	var doc appSetDoc
	if err := document.Decode(root, pos, source, &doc); err != nil {
		return nil, explainTypeError(err, root, pos, source)
	}
	if doc.APIVersion != "argoproj.io/v1alpha1" || doc.Kind != "ApplicationSet" {
		return nil, invalidf(source, pos, "apiVersion %q, kind %q: expected an argoproj.io/v1alpha1 ApplicationSet", doc.APIVersion, doc.Kind)
	}
	if doc.Spec == nil {
		return nil, invalidf(source, pos, "spec is missing")
	}
	a := &ApplicationSet{
		Source:            source,
		GoTemplate:        doc.Spec.GoTemplate,
		GoTemplateOptions: doc.Spec.GoTemplateOptions,
		pos:               pos,
		templatePatch:     doc.Spec.TemplatePatch,
		applyNested:       doc.Spec.ApplyNestedSelectors,
	}
	if doc.Spec.SyncPolicy != nil {
		a.preserveOnDeletion = doc.Spec.SyncPolicy.PreserveResourcesOnDeletion
	}
	if a.Name, err = metaString(doc.Metadata, "name", source, pos); err != nil {
		return nil, err
	}
	if a.Namespace, err = metaString(doc.Metadata, "namespace", source, pos); err != nil {
		return nil, err
	}
	for i, opt := range a.GoTemplateOptions {
		if !validOption(opt) {
			return nil, invalidf(source, pos.Lookup(document.Path{document.Key("spec"), document.Key("goTemplateOptions"), document.Index(i)}),
				"spec.goTemplateOptions[%d]: unknown option %q; use missingkey=default, missingkey=invalid, missingkey=zero or missingkey=error", i, opt)
		}
	}
	spec := root["spec"].(map[string]any)
	specPos := pos.Key("spec")
	if t, ok := spec["template"].(map[string]any); ok {
		if err := checkTemplate(t, specPos.Key("template"), source, "spec.template"); err != nil {
			return nil, err
		}
		a.template = t
	}
	if a.template == nil && a.templatePatch == nil {
		return nil, invalidf(source, specPos, "spec.template is missing")
	}
	rawGens, _ := spec["generators"].([]any)
	if len(rawGens) == 0 {
		return nil, invalidf(source, specPos, "spec.generators is empty: give at least one generator")
	}
	for i, g := range rawGens {
		path := fmt.Sprintf("spec.generators[%d]", i)
		gens, err := a.decodeEntry(g, specPos.Key("generators").Item(i), path, 0)
		if err != nil {
			return nil, err
		}
		a.entries = append(a.entries, gens)
	}
	return a, nil
}

// metaString reads a string field of metadata.
func metaString(meta map[string]any, key, source string, pos *document.Pos) (string, error) {
	v, ok := meta[key]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", invalidf(source, pos.Lookup(document.Path{document.Key("metadata"), document.Key(key)}), "metadata.%s must be a string, not %s", key, document.Describe(v))
	}
	return s, nil
}

func validOption(opt string) bool {
	switch opt {
	case "missingkey=default", "missingkey=invalid", "missingkey=zero", "missingkey=error":
		return true
	}
	return false
}

// unsupportedKinds are generators that need an SCM provider's API.
var unsupportedKinds = map[string]string{
	"scmProvider": "asks an SCM provider's API (GitHub, GitLab, Bitbucket, Gitea, Azure DevOps, AWS CodeCommit) for repositories with the controller's credentials; its answer changes with the provider's state, so a local render could not reproduce it. Stand in a list generator, or a plugin generator, that gives the same parameters (organization, repository, repository_id, url, branch, branchNormalized, sha, short_sha, short_sha_7, labels) for the repositories you expect",
	"pullRequest": "asks an SCM provider's API for open pull requests with the controller's credentials; its answer changes with every pull request, so a local render could not reproduce it. Stand in a list generator, or a plugin generator, that gives the same parameters (number, title, branch, branch_slug, target_branch, target_branch_slug, head_sha, head_short_sha, head_short_sha_7, author, labels) for the pull requests you expect",
}

// decodeEntry decodes one entry of a generators list at path; depth is 0
// for spec.generators. An entry may set several generators only at the top
// level, as in Argo CD.
func (a *ApplicationSet) decodeEntry(tree any, pos *document.Pos, path string, depth int) ([]*generator, error) {
	m, ok := tree.(map[string]any)
	if !ok {
		return nil, invalidf(a.Source, pos, "%s: a generator must be a map, not %s", path, document.Describe(tree))
	}
	var doc generatorDoc
	if err := document.Decode(m, pos, a.Source, &doc); err != nil {
		var le *document.LoadError
		if errors.As(err, &le) {
			cp := *le
			cp.Msg = path + ": " + le.Msg
			return nil, &cp
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// Argo CD's field order: list, clusters, git, scmProvider,
	// clusterDecisionResource, pullRequest, plugin, matrix, merge.
	var kinds []string
	for _, k := range []string{"list", "clusters", "git", "scmProvider", "clusterDecisionResource", "pullRequest", "plugin", "matrix", "merge"} {
		if v, ok := m[k]; ok && v != nil {
			kinds = append(kinds, k)
		}
	}
	for _, k := range kinds {
		if why, bad := unsupportedKinds[k]; bad {
			return nil, errorAt(a.Source, pos.Key(k), ErrUnsupported,
				"%s.%s: not rendered locally: the %s generator %s", path, k, k, why)
		}
	}
	switch {
	case len(kinds) == 0:
		return nil, invalidf(a.Source, pos, "%s: no generator given; use one of list, clusters, git, clusterDecisionResource, plugin, matrix or merge", path)
	case len(kinds) > 1 && depth > 0:
		return nil, invalidf(a.Source, pos, "%s sets %s: a nested generator holds exactly one generator", path, strings.Join(kinds, " and "))
	}
	sel, err := a.decodeSelector(doc.Selector, pos.Key("selector"), path+".selector")
	if err != nil {
		return nil, err
	}
	var out []*generator
	for _, k := range kinds {
		g := &generator{
			path: path + "." + k, entryPath: path, kind: k, depth: depth,
			selector: sel, raw: m, pos: pos,
		}
		kpos := pos.Key(k)
		body, _ := m[k].(map[string]any)
		if t, ok := body["template"].(map[string]any); ok {
			tpath := g.path + ".template"
			if err := checkTemplate(t, kpos.Key("template"), a.Source, tpath); err != nil {
				return nil, err
			}
			if depth > 0 {
				a.warnf("%s is ignored: Argo CD applies only the template of a top-level generator", tpath)
			} else {
				g.template, g.templatePath = t, tpath
			}
		}
		switch k {
		case "list":
			g.list = doc.List
		case "git":
			g.git = doc.Git
			if err := a.checkGit(g, body); err != nil {
				return nil, err
			}
		case "clusters":
			g.clusters = doc.Clusters
			if _, err := metav1.LabelSelectorAsSelector(toLabelSelector(g.clusters.Selector)); err != nil {
				return nil, invalidf(a.Source, kpos.Key("selector"), "%s.selector: %v", g.path, err)
			}
		case "clusterDecisionResource":
			g.decision = doc.ClusterDecisionResource
			if g.decision.ConfigMapRef == "" {
				return nil, invalidf(a.Source, kpos, "%s.configMapRef is empty: name the ConfigMap that describes the duck-typed resource", g.path)
			}
		case "plugin":
			g.plugin = doc.Plugin
			if g.plugin.ConfigMapRef.Name == "" {
				return nil, invalidf(a.Source, kpos, "%s.configMapRef.name is empty: name the ConfigMap that configures the plugin", g.path)
			}
		case "matrix", "merge":
			if depth >= 2 {
				return nil, invalidf(a.Source, kpos, "%s: matrix and merge generators nest one level deep, and this one is nested two levels", g.path)
			}
			rawChildren, _ := body["generators"].([]any)
			switch {
			case k == "matrix" && len(rawChildren) != 2:
				return nil, invalidf(a.Source, kpos, "%s has %d generators: a matrix combines exactly 2", g.path, len(rawChildren))
			case k == "merge" && len(rawChildren) < 2:
				return nil, invalidf(a.Source, kpos, "%s has %d generators: a merge needs 2 or more", g.path, len(rawChildren))
			case k == "merge" && len(doc.Merge.MergeKeys) == 0:
				return nil, invalidf(a.Source, kpos, "%s.mergeKeys is empty: a merge needs at least one merge key", g.path)
			}
			if k == "merge" {
				g.mergeKeys = doc.Merge.MergeKeys
			}
			for i, rc := range rawChildren {
				cpath := fmt.Sprintf("%s.generators[%d]", g.path, i)
				children, err := a.decodeEntry(rc, kpos.Key("generators").Item(i), cpath, depth+1)
				if err != nil {
					return nil, err
				}
				g.children = append(g.children, children[0])
			}
		}
		out = append(out, g)
	}
	return out, nil
}

func (a *ApplicationSet) warnf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	for _, w := range a.warnings {
		if w == msg {
			return
		}
	}
	a.warnings = append(a.warnings, msg)
}

// Known fields of the parts of an Application template rendering checks:
// a misspelt key here would silently produce a broken Application.
var (
	templateKeys    = []string{"metadata", "spec"}
	templateMetaKey = []string{"annotations", "finalizers", "labels", "name", "namespace"}
	appSpecKeys     = []string{"destination", "ignoreDifferences", "info", "project", "revisionHistoryLimit", "source", "sourceHydrator", "sources", "syncPolicy"}
	destinationKeys = []string{"name", "namespace", "server"}
	sourceKeys      = []string{"chart", "directory", "helm", "kustomize", "name", "path", "plugin", "ref", "repoURL", "targetRevision"}
)

// checkTemplate checks an Application template (spec.template, a
// generator's template, or a patched Application) for misspelt keys.
func checkTemplate(t map[string]any, pos *document.Pos, source, path string) error {
	if err := checkKeys(t, templateKeys, pos, source, path); err != nil {
		return err
	}
	if md, ok := t["metadata"]; ok && md != nil {
		var meta templateMetaDoc
		if err := document.Decode(md, pos.Key("metadata"), source, &meta); err != nil {
			var le *document.LoadError
			if errors.As(err, &le) {
				cp := *le
				cp.Msg = path + ".metadata: " + le.Msg
				return &cp
			}
			return err
		}
	}
	spec, ok := t["spec"].(map[string]any)
	if !ok {
		if s, set := t["spec"]; set && s != nil {
			return invalidf(source, pos.Key("spec"), "%s.spec must be a map, not %s", path, document.Describe(s))
		}
		return nil
	}
	sp := pos.Key("spec")
	if err := checkKeys(spec, appSpecKeys, sp, source, path+".spec"); err != nil {
		return err
	}
	if d, ok := spec["destination"].(map[string]any); ok {
		if err := checkKeys(d, destinationKeys, sp.Key("destination"), source, path+".spec.destination"); err != nil {
			return err
		}
	}
	if s, ok := spec["source"].(map[string]any); ok {
		if err := checkKeys(s, sourceKeys, sp.Key("source"), source, path+".spec.source"); err != nil {
			return err
		}
	}
	if list, ok := spec["sources"].([]any); ok {
		for i, e := range list {
			if s, ok := e.(map[string]any); ok {
				if err := checkKeys(s, sourceKeys, sp.Key("sources").Item(i), source, fmt.Sprintf("%s.spec.sources[%d]", path, i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// checkKeys reports the first key of m, in sorted order, not among known.
func checkKeys(m map[string]any, known []string, pos *document.Pos, source, path string) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !contains(known, k) {
			return &document.LoadError{Source: source, Line: lineOf(pos.Key(k)), Column: colOf(pos.Key(k)), Err: document.ErrUnknownField,
				Msg: fmt.Sprintf("%s: unknown field %q; known fields here: %s", path, k, strings.Join(known, ", "))}
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// invalidf makes an ErrInvalid error at pos of source.
func invalidf(source string, pos *document.Pos, format string, args ...any) error {
	return errorAt(source, pos, ErrInvalid, format, args...)
}

// errorAt makes an error wrapping sentinel at pos of source.
func errorAt(source string, pos *document.Pos, sentinel error, format string, args ...any) error {
	return &document.LoadError{Source: source, Line: lineOf(pos), Column: colOf(pos), Err: sentinel, Msg: fmt.Sprintf(format, args...)}
}

func lineOf(p *document.Pos) int {
	if p == nil {
		return 0
	}
	return p.Line
}

func colOf(p *document.Pos) int {
	if p == nil {
		return 0
	}
	return p.Column
}

// explainTypeError turns document.Decode's error for a boolean or a number
// where a string belongs into one naming the value's line and full path,
// and saying why: the file is read as YAML 1.1, as kubectl reads it, so an
// unquoted yes or 012 is not a string.
func explainTypeError(err error, root map[string]any, pos *document.Pos, source string) error {
	var le *document.LoadError
	if !errors.As(err, &le) || !strings.Contains(le.Msg, ": expected a string") {
		return err
	}
	field, _, _ := strings.Cut(le.Msg, ": expected")
	path, v, vpos, ok := findScalar(root, pos, strings.Split(field, "."), "")
	if !ok {
		return err
	}
	return &document.LoadError{Source: source, Line: lineOf(vpos), Column: colOf(vpos), Err: le.Err,
		Msg: fmt.Sprintf("%s is %s, and must be a string: the file is read as kubectl and the argocd CLI read it (YAML 1.1), where an unquoted yes, no, on, off, y or n is a boolean and a number such as 012 (octal: 10) is a number; quote the value", path, document.Describe(v))}
}

// findScalar follows keys from tree (trying every item of a list on the
// way) to the first boolean or number there, or in the map or list there.
func findScalar(tree any, pos *document.Pos, keys []string, path string) (string, any, *document.Pos, bool) {
	if list, ok := tree.([]any); ok {
		for i, item := range list {
			if p, v, vp, ok := findScalar(item, pos.Item(i), keys, fmt.Sprintf("%s[%d]", path, i)); ok {
				return p, v, vp, true
			}
		}
		return "", nil, nil, false
	}
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	if len(keys) > 0 {
		m, ok := tree.(map[string]any)
		if !ok {
			return "", nil, nil, false
		}
		return findScalar(m[keys[0]], pos.Key(keys[0]), keys[1:], join(keys[0]))
	}
	switch t := tree.(type) {
	case bool, int64, float64, json.Number:
		return path, t, pos, true
	case map[string]any:
		ks := make([]string, 0, len(t))
		for k := range t {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		for _, k := range ks {
			switch v := t[k].(type) {
			case bool, int64, float64, json.Number:
				return join(k), v, pos.Key(k), true
			}
		}
	}
	return "", nil, nil, false
}
