package appset

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"

	"github.com/strata-dev/strata/internal/document"
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

// Limits bound what rendering may produce.
type Limits struct {
	// MaxParamSets bounds the parameter sets of any one generator
	// (after combining, for matrix and merge) and the Applications in all.
	MaxParamSets int
	// MaxStringBytes bounds one rendered string.
	MaxStringBytes int
	// MaxOutputBytes bounds all rendered strings together.
	MaxOutputBytes int64
}

// DefaultLimits are the limits a zero Limits field takes.
func DefaultLimits() Limits {
	return Limits{MaxParamSets: 10000, MaxStringBytes: 1 << 20, MaxOutputBytes: 64 << 20}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxParamSets > 0 {
		d.MaxParamSets = l.MaxParamSets
	}
	if l.MaxStringBytes > 0 {
		d.MaxStringBytes = l.MaxStringBytes
	}
	if l.MaxOutputBytes > 0 {
		d.MaxOutputBytes = l.MaxOutputBytes
	}
	return d
}

// Renderer renders ApplicationSets into Applications.
type Renderer struct {
	// Plugins resolves plugin generators; nil makes any plugin generator
	// an error.
	Plugins PluginFunc
	Limits  Limits
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
	lim := r.Limits.withDefaults()
	x := &run{r: r, a: a, lim: lim, eng: newEngine(a.GoTemplate, a.GoTemplateOptions, lim)}
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
					return nil, fmt.Errorf("%w: more than %d Applications", ErrTooLarge, lim.MaxParamSets)
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
	eng      *engine
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
// set of the first child of a matrix that g is the second child of: every
// string of g is templated with it first.
func (x *run) params(ctx context.Context, g *generator, genParams map[string]any, from string) ([]map[string]any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(genParams) > 0 {
		rendered, err := x.eng.renderTree(g.raw, genParams, nil)
		if err != nil {
			return nil, fmt.Errorf("templating %s with %s: %w\n(the controller templates every string of a matrix's second generator, plugin values included, with each parameter set of the first generator before the second runs, so those strings can use only the first generator's parameters)", g.entryPath, from, prefixField(err, g.entryPath))
		}
		gens, err := x.a.decodeEntry(rendered, g.pos, g.entryPath, g.depth)
		if err != nil {
			return nil, fmt.Errorf("%s, templated with %s: %w", g.entryPath, from, err)
		}
		g = gens[0]
	}
	var sets []map[string]any
	var err error
	switch g.kind {
	case "list":
		sets, err = x.listParams(g)
	case "plugin":
		sets, err = x.pluginParams(ctx, g)
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
		if g.depth >= 2 && !x.a.applyNested {
			x.warnf("%s.selector is ignored: Argo CD applies selectors of generators nested in a nested matrix or merge only with spec.applyNestedSelectors: true", g.entryPath)
		} else {
			kept := sets[:0:0]
			for _, p := range sets {
				if g.selector.matches(flatten(p)) {
					kept = append(kept, p)
				}
			}
			sets = kept
		}
	}
	if len(sets) > x.lim.MaxParamSets {
		return nil, fmt.Errorf("%w: %s produced %d parameter sets, more than the limit of %d", ErrTooLarge, g.path, len(sets), x.lim.MaxParamSets)
	}
	return sets, nil
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
		loader := document.Loader{Limits: fileLimits}
		v, _, err := loader.ParseAny([]byte(g.list.ElementsYaml), g.path+".elementsYaml")
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
		return nil, fmt.Errorf("%w: %s: plugin %q returned %d parameter sets, more than the limit of %d", ErrTooLarge, g.path, name, len(objects), x.lim.MaxParamSets)
	}
	valueKeys := make([]string, 0, len(g.plugin.Values))
	for k := range g.plugin.Values {
		valueKeys = append(valueKeys, k)
	}
	sort.Strings(valueKeys)
	sets := make([]map[string]any, 0, len(objects))
	for i, obj := range objects {
		p := map[string]any{}
		if x.a.GoTemplate {
			p = jsonMap(obj)
			if p == nil {
				p = map[string]any{}
			}
		} else {
			for k, v := range flatten(jsonMap(obj)) {
				p[k] = v
			}
		}
		params := input
		if params == nil {
			params = map[string]any{}
		}
		p["generator"] = map[string]any{"input": map[string]any{"parameters": jsonValue(params)}}
		rendered := map[string]any{}
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
				return nil, fmt.Errorf("%w: %s produces more than %d parameter sets", ErrTooLarge, g.path, x.lim.MaxParamSets)
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
	loader := document.Loader{Limits: fileLimits}
	v, _, err := loader.ParseAny([]byte(text), "spec.templatePatch (rendered)")
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
