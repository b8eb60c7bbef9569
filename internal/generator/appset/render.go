package appset

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/validate/content"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/limits"
	"github.com/strata-dev/strata/internal/values"
)

// ParamsGetter fetches the parameter sets of a plugin generator, speaking
// the plugin contract (generator.Client does, over HTTP).
type ParamsGetter interface {
	GetParams(ctx context.Context, appSetName string, input map[string]any) ([]map[string]any, error)
}

// PluginFunc resolves the ConfigMap a plugin generator names
// (configMapRef.name) to a ParamsGetter.
type PluginFunc func(ctx context.Context, configMapRef string) (ParamsGetter, error)

// Limits bound what rendering may produce and what its templates may
// spend. Zero and negative fields take the defaults: limits on untrusted
// input have no "unlimited".
type Limits struct {
	// MaxParamSets bounds the parameter sets of any one generator
	// (after combining, for matrix and merge) and the Applications in all.
	MaxParamSets int
	// MaxStringBytes bounds one rendered string.
	MaxStringBytes int
	// MaxOutputBytes bounds all rendered strings together.
	MaxOutputBytes int64
	// MaxValueBytes bounds one value a template function takes or returns
	// (a string, or a list or dict with everything in it).
	MaxValueBytes int64
	// MaxTemplateBytes bounds the values template functions return, in
	// all, over the render (a File: over the file).
	MaxTemplateBytes int64
	// MaxTemplateOps bounds the steps templates take over the render (a
	// File: over the file): range iterations, calls of defined templates
	// and of functions.
	MaxTemplateOps int64
	// TemplateTime bounds the time templates run over the render (a File:
	// over the file), plugin calls not included.
	TemplateTime time.Duration
}

// DefaultTemplateTime is the time a zero Limits.TemplateTime allows.
const DefaultTemplateTime = 10 * time.Second

// DefaultLimits are the limits a zero Limits field takes.
func DefaultLimits() Limits {
	return Limits{
		MaxParamSets: 10000, MaxStringBytes: 1 << 20, MaxOutputBytes: 64 << 20,
		MaxValueBytes: 16 << 20, MaxTemplateBytes: 256 << 20, MaxTemplateOps: 1 << 23,
		TemplateTime: DefaultTemplateTime,
	}
}

func (l Limits) withDefaults() Limits { return limits.Or(l, DefaultLimits()) }

// Renderer renders ApplicationSets into Applications.
type Renderer struct {
	// Plugins resolves plugin generators; nil makes any plugin generator
	// an error.
	Plugins PluginFunc
	// Repos reads the repositories of git generators; nil makes any git
	// generator an error.
	Repos RepoReader
	// Objects lists the objects of the Argo CD namespace that clusters
	// and clusterDecisionResource generators read; nil makes them errors.
	Objects ObjectLister
	// Namespace is Argo CD's namespace; empty is DefaultNamespace.
	Namespace string
	Limits    Limits
	// Version is the Argo CD release whose controller to follow where
	// releases differ; the zero Version is Latest.
	Version Version
}

// Result is what Render produced.
type Result struct {
	// Applications in the order the controller generates them: by
	// generator, then by parameter set.
	Applications []map[string]any
	// Warnings about parts of the ApplicationSet the controller ignores.
	Warnings []string
}

// Render evaluates the generators of a and renders its template once per
// parameter set. The first error stops it: the controller would not apply
// a partial result either.
func (r *Renderer) Render(ctx context.Context, a *ApplicationSet) (*Result, error) {
	return r.render(ctx, a, nil)
}

// render renders a with the template budget b, a new one when nil.
func (r *Renderer) render(ctx context.Context, a *ApplicationSet, b *budget) (*Result, error) {
	lim := r.Limits.withDefaults()
	if b == nil {
		b = newBudget(ctx, lim)
	}
	x := &run{r: r, a: a, lim: lim, v: r.Version.orLatest(), eng: newEngine(a.GoTemplate, a.GoTemplateOptions, lim, b)}
	x.checkNestedSelectors()
	res := &Result{}
	names := map[string]string{} // Application name -> where it came from
	for _, entry := range a.entries {
		for _, g := range entry {
			sets, err := x.params(ctx, g, nil, "")
			if err != nil {
				return nil, err
			}
			tmpl := mergeTemplates(g.template, a.template)
			for i, p := range sets {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				app, err := x.application(tmpl, g, p)
				if err != nil {
					return nil, fmt.Errorf("%s, parameter set %d: %w", g.path, i, err)
				}
				where := fmt.Sprintf("%s, parameter set %d", g.path, i)
				name, _ := app["metadata"].(map[string]any)["name"].(string)
				if prev, dup := names[name]; dup {
					return nil, fmt.Errorf("%w: %s renders the Application name %q, as %s does; the controller refuses an ApplicationSet with duplicate Application names: add a parameter to metadata.name", ErrInvalid, where, name, prev)
				}
				names[name] = where
				res.Applications = append(res.Applications, app)
				if len(res.Applications) > lim.MaxParamSets {
					return nil, fmt.Errorf("%w: more than %d Applications (--max-applications)", ErrTooLarge, lim.MaxParamSets)
				}
			}
		}
	}
	res.Warnings = append(append([]string(nil), a.warnings...), x.warnings...)
	return res, nil
}

// run is one Render call.
type run struct {
	r        *Renderer
	a        *ApplicationSet
	lim      Limits
	v        Version
	eng      *engine
	resolve  *engine // pre-resolves matrix values (missingkey=error), made when needed
	warnings []string
}

func (x *run) warnf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	for _, w := range append(x.a.warnings, x.warnings...) {
		if w == msg {
			return
		}
	}
	x.warnings = append(x.warnings, msg)
}

// params evaluates generator g. genParams, when not empty, is a parameter
// set of the first child of a matrix that g is the second child of: the
// strings of g are templated with it first (interpolate).
func (x *run) params(ctx context.Context, g *generator, genParams map[string]any, from string) ([]map[string]any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(genParams) > 0 {
		ig, err := x.interpolate(g, genParams, from)
		if err != nil {
			return nil, err
		}
		g = ig
	}
	var sets []map[string]any
	var err error
	switch g.kind {
	case "list":
		sets, err = x.listParams(g)
	case "plugin":
		sets, err = x.pluginParams(ctx, g)
	case "git":
		sets, err = x.gitParams(ctx, g)
	case "clusters":
		sets, err = x.clustersParams(ctx, g)
	case "clusterDecisionResource":
		sets, err = x.clusterDecisionParams(ctx, g)
	case "matrix":
		sets, err = x.matrixParams(ctx, g)
	case "merge":
		sets, err = x.mergeParams(ctx, g)
	default:
		err = fmt.Errorf("%s: unsupported generator %q", g.path, g.kind)
	}
	if err != nil {
		return nil, err
	}
	if g.selector != nil {
		if g.depth >= 2 && !x.v.nestedSelectorsAlways() && !x.a.applyNested {
			x.warnf("%s.selector is ignored: Argo CD %d.%d applies selectors of generators nested in a nested matrix or merge only with spec.applyNestedSelectors: true (3.0 and later always apply them)", g.entryPath, x.v.Major, x.v.Minor)
		} else {
			kept := sets[:0:0]
			for _, p := range sets {
				if g.selector.matches(flatten(p, x.v.flattensStringMaps())) {
					kept = append(kept, p)
				}
			}
			sets = kept
		}
	}
	if len(sets) > x.lim.MaxParamSets {
		return nil, fmt.Errorf("%w: %s produced %d parameter sets, more than the limit of %d (--max-applications)", ErrTooLarge, g.path, len(sets), x.lim.MaxParamSets)
	}
	return sets, nil
}

// checkNestedSelectors warns, for 3.0 and later, about selectors of
// generators inside a nested matrix or merge that apply only because
// Argo CD 3.0 stopped reading spec.applyNestedSelectors: 2.x ignored them.
func (x *run) checkNestedSelectors() {
	if !x.v.nestedSelectorsAlways() || x.a.applyNested {
		return
	}
	var walk func(g *generator)
	walk = func(g *generator) {
		if g.depth >= 2 && g.selector != nil {
			x.warnf("%s.selector applies: Argo CD 3.0 and later apply selectors of generators in a nested matrix or merge, and ignore spec.applyNestedSelectors; 2.x ignored this one (--argocd-version 2.14 renders as 2.x did)", g.entryPath)
		}
		for _, c := range g.children {
			walk(c)
		}
	}
	for _, entry := range x.a.entries {
		for _, g := range entry {
			walk(g)
		}
	}
}

// interpolate templates the second generator of a matrix with a parameter
// set of the first, as the controller does before running it: every
// string, map keys included, except
//   - its own selector, which the controller reads before templating (the
//     selectors of its children, when it is a matrix or merge, are
//     templated), and
//   - the values of plugin generators, by version: templated like the rest
//     up to 3.3, left as written in 3.4.0 to 3.4.3, and from 3.4.4 each
//     value templated only when the set has every key it names (else left
//     as written, for the plugin generator to template with its own
//     output).
func (x *run) interpolate(g *generator, genParams map[string]any, from string) (*generator, error) {
	raw := g.raw
	mode := x.v.matrixValues()
	var held []heldValues
	if mode != valuesTemplated {
		raw, held = holdPluginValues(raw, g.entryPath)
	}
	rendered, err := x.eng.renderTree(raw, genParams, nil)
	if err != nil {
		return nil, fmt.Errorf("templating %s with %s: %w\n(%s)", g.entryPath, from, prefixField(err, g.entryPath), x.interpolationNote())
	}
	tree := rendered.(map[string]any)
	if sel, ok := g.raw["selector"]; ok {
		tree["selector"] = sel
	} else {
		delete(tree, "selector")
	}
	for _, h := range held {
		vals := make(map[string]any, len(h.values))
		for k, v := range h.values {
			s, ok := v.(string)
			if !ok || mode == valuesAsWritten {
				vals[k] = v
				continue
			}
			r, err := x.preResolve(s, genParams)
			if err != nil {
				return nil, fmt.Errorf("templating %s with %s: %s.values.%s: %w", g.entryPath, from, h.path, k, err)
			}
			vals[k] = r
		}
		h.put(tree, vals)
	}
	gens, err := x.a.decodeEntry(tree, g.pos, g.entryPath, g.depth)
	if err != nil {
		return nil, fmt.Errorf("%s, templated with %s: %w", g.entryPath, from, err)
	}
	ng := gens[0]
	ng.selector = g.selector
	return ng, nil
}

func (x *run) interpolationNote() string {
	switch x.v.matrixValues() {
	case valuesTemplated:
		return fmt.Sprintf("Argo CD %d.%d templates every string of a matrix's second generator, plugin values included, with each parameter set of the first generator before the second runs, so those strings can use only the first generator's parameters; 3.4 and later leave plugin values that use the plugin's own output for the plugin", x.v.Major, x.v.Minor)
	}
	return "the controller templates every string of a matrix's second generator, except plugin values, with each parameter set of the first generator before the second runs, so those strings can use only the first generator's parameters"
}

// preResolve templates a plugin value of a matrix's second generator with
// the first generator's parameter set as 3.4.4 and later do: in goTemplate
// mode with missingkey=error, a value naming a key the set lacks is left as
// written; any other error is an error.
func (x *run) preResolve(s string, params map[string]any) (string, error) {
	if !x.a.GoTemplate {
		return x.eng.replace(s, params)
	}
	if x.resolve == nil {
		opts := []string{}
		for _, o := range x.a.GoTemplateOptions {
			if !strings.HasPrefix(o, "missingkey=") {
				opts = append(opts, o)
			}
		}
		x.resolve = x.eng.withOptions(append(opts, "missingkey=error"))
	}
	r, err := x.resolve.replace(s, params)
	if err != nil {
		if msg := err.Error(); strings.Contains(msg, "map has no entry for key") || strings.Contains(msg, "can't evaluate field") {
			return s, nil
		}
		return "", err
	}
	return r, nil
}

// heldValues are the values of one plugin generator, taken out of an entry
// before templating it.
type heldValues struct {
	path   string   // of the plugin generator, for errors
	at     []string // keys from the entry to the plugin body
	index  int      // of the child in generators, -1 when at the top
	values map[string]any
}

// holdPluginValues returns a copy of entry without the values of its
// plugin generators (its own, and its children's when it is a matrix or
// merge), and those values.
func holdPluginValues(entry map[string]any, path string) (map[string]any, []heldValues) {
	out := make(map[string]any, len(entry))
	for k, v := range entry {
		out[k] = v
	}
	var held []heldValues
	if body, ok := out["plugin"].(map[string]any); ok {
		if vals, ok := body["values"].(map[string]any); ok {
			nb := make(map[string]any, len(body))
			for k, v := range body {
				if k != "values" {
					nb[k] = v
				}
			}
			out["plugin"] = nb
			held = append(held, heldValues{path: path + ".plugin", index: -1, values: vals})
		}
	}
	for _, kind := range []string{"matrix", "merge"} {
		body, ok := out[kind].(map[string]any)
		if !ok {
			continue
		}
		children, ok := body["generators"].([]any)
		if !ok {
			continue
		}
		nb := make(map[string]any, len(body))
		for k, v := range body {
			nb[k] = v
		}
		nc := make([]any, len(children))
		for i, c := range children {
			cm, ok := c.(map[string]any)
			if !ok {
				nc[i] = c
				continue
			}
			sub, h := holdPluginValues(cm, fmt.Sprintf("%s.%s.generators[%d]", path, kind, i))
			for j := range h {
				if h[j].index == -1 {
					h[j].at, h[j].index = []string{kind}, i
				}
			}
			nc[i] = sub
			held = append(held, h...)
		}
		nb["generators"] = nc
		out[kind] = nb
	}
	return out, held
}

// put puts the values back into the templated entry tree.
func (h heldValues) put(tree map[string]any, vals map[string]any) {
	node := tree
	if h.index >= 0 {
		body, _ := tree[h.at[0]].(map[string]any)
		children, _ := body["generators"].([]any)
		if h.index >= len(children) {
			return
		}
		node, _ = children[h.index].(map[string]any)
	}
	if body, ok := node["plugin"].(map[string]any); ok {
		body["values"] = vals
	}
}

// prefixField names a fieldError's path from the entry at prefix.
func prefixField(err error, prefix string) error {
	var fe *fieldError
	if errors.As(err, &fe) {
		return fmt.Errorf("%s%s: %w", prefix, pathSuffix(fe.path), fe.err)
	}
	return err
}

func pathSuffix(p document.Path) string {
	s := p.String()
	if s == "" || strings.HasPrefix(s, "[") {
		return s
	}
	return "." + s
}

func (x *run) listParams(g *generator) ([]map[string]any, error) {
	var sets []map[string]any
	for i, e := range g.list.Elements {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s.elements[%d] is %s; each element must be a map of parameter names to values", g.path, i, document.Describe(e))
		}
		if x.a.GoTemplate {
			sets = append(sets, jsonMap(m))
			continue
		}
		// Plain mode: every value is a string, except "values", a map of
		// strings that becomes values.<key>.
		p := map[string]any{}
		for k, v := range m {
			if k == "values" {
				vm, ok := v.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("%s.elements[%d].values is %s; it must be a map of strings", g.path, i, document.Describe(v))
				}
				for vk, vv := range vm {
					s, ok := vv.(string)
					if !ok {
						return nil, fmt.Errorf("%s.elements[%d].values.%s is %s; in plain mode (goTemplate: false) list values must be strings: quote it, or set goTemplate: true", g.path, i, vk, document.Describe(vv))
					}
					p["values."+vk] = s
				}
				continue
			}
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("%s.elements[%d].%s is %s; in plain mode (goTemplate: false) list elements hold strings: quote it, or set goTemplate: true", g.path, i, k, document.Describe(v))
			}
			p[k] = s
		}
		sets = append(sets, p)
	}
	if strings.TrimSpace(g.list.ElementsYaml) != "" {
		v, _, err := parseOneYAML11([]byte(g.list.ElementsYaml), g.path+".elementsYaml", fileLimits, false)
		if err != nil {
			return nil, err
		}
		list, ok := v.([]any)
		if !ok && v != nil {
			return nil, fmt.Errorf("%s.elementsYaml holds %s; it must be a YAML list of maps", g.path, document.Describe(v))
		}
		for i, e := range list {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s.elementsYaml item %d is %s; each item must be a map", g.path, i, document.Describe(e))
			}
			sets = append(sets, jsonMap(m))
		}
	}
	return sets, nil
}

func (x *run) pluginParams(ctx context.Context, g *generator) ([]map[string]any, error) {
	name := g.plugin.ConfigMapRef.Name
	if x.r.Plugins == nil {
		return nil, fmt.Errorf("%s: the plugin generator needs the plugin's ConfigMap %q; pass it with --plugin-config", g.path, name)
	}
	getter, err := x.r.Plugins(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("%s.configMapRef.name %q: %w", g.path, name, err)
	}
	input := jsonMap(g.plugin.Input.Parameters)
	objects, err := getter.GetParams(ctx, x.a.Name, input)
	if err != nil {
		return nil, fmt.Errorf("%s: calling plugin %q: %w", g.path, name, err)
	}
	if len(objects) > x.lim.MaxParamSets {
		return nil, fmt.Errorf("%w: %s: plugin %q returned %d parameter sets, more than the limit of %d (--max-applications)", ErrTooLarge, g.path, name, len(objects), x.lim.MaxParamSets)
	}
	valueKeys := make([]string, 0, len(g.plugin.Values))
	for k := range g.plugin.Values {
		valueKeys = append(valueKeys, k)
	}
	sort.Strings(valueKeys)
	typed, err := newPluginParameters(g.plugin.Input.Parameters)
	if err != nil {
		return nil, fmt.Errorf("%s.input.parameters: %w", g.path, err)
	}
	sets := make([]map[string]any, 0, len(objects))
	for i, obj := range objects {
		p := map[string]any{}
		if x.a.GoTemplate {
			for k, v := range jsonMap(obj) {
				p[k] = v
			}
		} else {
			for k, v := range flatten(jsonMap(obj), false) {
				p[k] = v
			}
		}
		// The controller's own types: the input parameters as JSON texts
		// (printed as such; toJson gives the value), values as a map of
		// strings.
		p["generator"] = map[string]any{"input": map[string]pluginParameters{"parameters": typed}}
		rendered := map[string]string{}
		for _, k := range valueKeys {
			s, err := x.eng.replace(g.plugin.Values[k], p)
			if err != nil {
				return nil, fmt.Errorf("%s.values.%s, parameter set %d: %w", g.path, k, i, err)
			}
			rendered[k] = s
		}
		if len(rendered) > 0 {
			if x.a.GoTemplate {
				p["values"] = rendered
			} else {
				for k, v := range rendered {
					p["values."+k] = v
				}
			}
		}
		sets = append(sets, p)
	}
	return sets, nil
}

func (x *run) matrixParams(ctx context.Context, g *generator) ([]map[string]any, error) {
	first, err := x.params(ctx, g.children[0], nil, "")
	if err != nil {
		return nil, err
	}
	var out []map[string]any
	for i, a := range first {
		second, err := x.params(ctx, g.children[1], a, fmt.Sprintf("parameter set %d of %s", i, g.children[0].path))
		if err != nil {
			return nil, err
		}
		for j, b := range second {
			c, err := combineMatrix(a, b, x.a.GoTemplate)
			if err != nil {
				return nil, fmt.Errorf("%s: combining parameter set %d of the first generator with set %d of the second: %w", g.path, i, j, err)
			}
			out = append(out, c)
			if len(out) > x.lim.MaxParamSets {
				return nil, fmt.Errorf("%w: %s produces more than %d parameter sets (--max-applications)", ErrTooLarge, g.path, x.lim.MaxParamSets)
			}
		}
	}
	return out, nil
}

func (x *run) mergeParams(ctx context.Context, g *generator) ([]map[string]any, error) {
	var base []map[string]any
	index := map[string]int{}
	for ci, child := range g.children {
		sets, err := x.params(ctx, child, nil, "")
		if err != nil {
			return nil, err
		}
		seen := map[string]int{}
		for si, s := range sets {
			key, err := mergeKey(s, g.mergeKeys)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", child.path, err)
			}
			if prev, dup := seen[key]; dup {
				return nil, fmt.Errorf("%w: %s: parameter sets %d and %d have the same merge-key values %s; a merge needs the sets of each generator to be unique by %s", ErrInvalid, child.path, prev, si, key, strings.Join(g.mergeKeys, ", "))
			}
			seen[key] = si
			if ci == 0 {
				index[key] = len(base)
				base = append(base, s)
				continue
			}
			bi, ok := index[key]
			if !ok {
				continue // no base set to override: dropped, as in the controller
			}
			if base[bi], err = overrideSet(base[bi], s, x.a.GoTemplate); err != nil {
				return nil, fmt.Errorf("%s: %w", child.path, err)
			}
		}
	}
	return base, nil
}

// mergeTemplates merges a generator's template over spec.template the way
// the controller's mergo.Merge does: the generator's values win unless
// they are empty (null, "", false, 0, an empty list or map); maps merge
// key by key.
func mergeTemplates(gen, spec map[string]any) map[string]any {
	if gen == nil {
		return jsonValueTree(spec)
	}
	out := jsonValueTree(gen)
	mergeEmpty(out, spec)
	return out
}

// jsonValueTree deep-copies a template tree, keeping its number types.
func jsonValueTree(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return values.DeepCopy(m).(map[string]any)
}

func mergeEmpty(dst, src map[string]any) {
	for k, sv := range src {
		dv, ok := dst[k]
		if !ok || isEmpty(dv) {
			dst[k] = values.DeepCopy(sv)
			continue
		}
		dm, dIsMap := dv.(map[string]any)
		sm, sIsMap := sv.(map[string]any)
		if dIsMap && sIsMap {
			mergeEmpty(dm, sm)
		}
	}
}

func isEmpty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case bool:
		return !v
	case int64:
		return v == 0
	case float64:
		return v == 0
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	}
	return false
}

// application renders one Application from the merged template and a
// parameter set.
func (x *run) application(tmpl map[string]any, g *generator, p map[string]any) (map[string]any, error) {
	meta := map[string]any{}
	if m, ok := tmpl["metadata"].(map[string]any); ok {
		for _, k := range templateMetaKey {
			if v, ok := m[k]; ok && v != nil {
				meta[k] = v
			}
		}
	}
	app := map[string]any{"metadata": meta}
	if spec, ok := tmpl["spec"]; ok && spec != nil {
		app["spec"] = spec
	} else {
		app["spec"] = map[string]any{}
	}
	// An empty parameter set leaves the template as it is, finalizers
	// included, as the controller does.
	if len(p) > 0 {
		rendered, err := x.eng.renderTree(app, p, nil)
		if err != nil {
			return nil, x.templateError(err, g)
		}
		app = rendered.(map[string]any)
		meta = app["metadata"].(map[string]any)
		if f, _ := meta["finalizers"].([]any); len(f) == 0 && !x.a.preserveOnDeletion {
			meta["finalizers"] = []any{"resources-finalizer.argocd.argoproj.io"}
		}
	}
	if x.a.templatePatch != nil {
		patched, err := x.patch(app, p)
		if err != nil {
			return nil, err
		}
		app = patched
	}
	meta, _ = app["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		app["metadata"] = meta
	}
	// The controller puts every Application in the ApplicationSet's namespace.
	if x.a.Namespace != "" {
		meta["namespace"] = x.a.Namespace
	} else {
		delete(meta, "namespace")
	}
	for k, v := range meta {
		if isEmpty(v) {
			delete(meta, k)
		}
	}
	if err := checkApplication(app); err != nil {
		return nil, err
	}
	app["apiVersion"] = "argoproj.io/v1alpha1"
	app["kind"] = "Application"
	return app, nil
}

// templateError names the template field a rendering error comes from:
// the generator's template where it sets the field, else spec.template.
func (x *run) templateError(err error, g *generator) error {
	var fe *fieldError
	if !errors.As(err, &fe) {
		return err
	}
	source, field, pos := "spec.template", fe.path, x.a.pos.Lookup(document.Path{document.Key("spec"), document.Key("template")})
	if g.template != nil && !isEmpty(lookup(g.template, fe.path)) {
		source = g.templatePath
		pos = g.pos.Lookup(document.Path{document.Key(g.kind), document.Key("template")})
	}
	fpos := pos.Lookup(field)
	where := ""
	if l := lineOf(fpos); l > 0 {
		where = fmt.Sprintf(" (%s:%d)", x.a.Source, l)
	}
	return fmt.Errorf("%s%s%s: %w", source, pathSuffix(field), where, fe.err)
}

// lookup returns the value at path in tree, or nil.
func lookup(tree any, path document.Path) any {
	for _, s := range path {
		switch t := tree.(type) {
		case map[string]any:
			if s.IsIndex {
				return nil
			}
			tree = t[s.Key]
		case []any:
			if !s.IsIndex || s.Index >= len(t) {
				return nil
			}
			tree = t[s.Index]
		default:
			return nil
		}
	}
	return tree
}

// patch renders spec.templatePatch with p and applies it to app as a
// strategic merge patch; spec.project cannot be changed.
func (x *run) patch(app, p map[string]any) (map[string]any, error) {
	text, err := x.eng.replace(*x.a.templatePatch, p)
	if err != nil {
		return nil, fmt.Errorf("spec.templatePatch: %w", err)
	}
	v, _, err := parseOneYAML11([]byte(text), "spec.templatePatch (rendered)", fileLimits, false)
	if err != nil {
		return nil, fmt.Errorf("spec.templatePatch renders to text that is not YAML: %w\nrendered patch:\n%s", err, document.Clip(text, 2000))
	}
	if v == nil {
		return app, nil
	}
	pm, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("spec.templatePatch renders to %s; it must render to a map with metadata and/or spec", document.Describe(v))
	}
	if err := checkTemplate(pm, nil, "spec.templatePatch (rendered)", "spec.templatePatch"); err != nil {
		return nil, err
	}
	project := lookup(app, document.Path{document.Key("spec"), document.Key("project")})
	out, err := strategicMerge(app, pm)
	if err != nil {
		return nil, fmt.Errorf("spec.templatePatch: %w", err)
	}
	out = document.FromJSON(out).(map[string]any)
	if spec, ok := out["spec"].(map[string]any); ok {
		if project == nil {
			delete(spec, "project")
		} else {
			spec["project"] = project
		}
	}
	return out, nil
}

// checkApplication checks what the API server would check of a rendered
// Application's metadata.
func checkApplication(app map[string]any) error {
	meta, _ := app["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	if name == "" {
		return fmt.Errorf("%w: metadata.name renders empty; every Application needs a name", ErrInvalid)
	}
	if errs := content.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("%w: metadata.name renders to %q, which is not a valid Kubernetes name (%s); the normalize function makes one", ErrInvalid, name, strings.Join(errs, "; "))
	}
	for _, field := range []string{"labels", "annotations"} {
		m, ok := meta[field].(map[string]any)
		if !ok {
			continue
		}
		for k, v := range m {
			if errs := content.IsLabelKey(k); len(errs) > 0 {
				return fmt.Errorf("%w: metadata.%s key %q is not valid: %s", ErrInvalid, field, k, strings.Join(errs, "; "))
			}
			s, ok := v.(string)
			if !ok {
				return fmt.Errorf("%w: metadata.%s.%s is %s; it must be a string", ErrInvalid, field, k, document.Describe(v))
			}
			if field == "labels" {
				if errs := content.IsLabelValue(s); len(errs) > 0 {
					return fmt.Errorf("%w: metadata.labels.%s renders to %q, which is not a valid label value: %s", ErrInvalid, k, s, strings.Join(errs, "; "))
				}
			}
		}
	}
	return nil
}
