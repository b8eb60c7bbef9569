package store

import (
	"fmt"
	"slices"
	"strings"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/operator/config"
	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/module"
	"github.com/strata-dev/strata/internal/schema"
	"github.com/strata-dev/strata/internal/values"
)

// A section is the global section or one module's.
type section struct {
	key  string // values key
	name string // module name, or "global"

	static       []staticLayer
	flag         *bool // a module's <key>Enabled from its values.yaml files; nil: unset
	configSchema *schema.Schema
	valuesSchema *schema.Schema

	patches []*storedPatch

	// Computed from the above and the config.
	values    map[string]any
	enabled   map[string]bool   // global only: *Enabled flags from patches
	enabledBy map[string]string // global only: the patch that set each flag
}

type staticLayer struct {
	name, file string
	values     map[string]any
	pos        *document.Pos
}

func newGlobalSection(g *module.Global) *section {
	sec := &section{key: GlobalKey, name: GlobalKey}
	if g == nil {
		return sec
	}
	for _, st := range g.Static {
		sec.static = append(sec.static, staticLayer{name: "modules/values.yaml", file: st.File, values: st.Values, pos: st.Pos})
	}
	sec.configSchema, sec.valuesSchema = g.ConfigSchema, g.ValuesSchema
	return sec
}

func newModuleSection(m *module.Module) *section {
	sec := &section{key: m.Key, name: m.Name, configSchema: m.ConfigSchema, valuesSchema: m.ValuesSchema}
	if m.CommonValues != nil {
		sec.static = append(sec.static, staticLayer{name: "modules/values.yaml", file: m.CommonValuesFile(), values: m.CommonValues, pos: m.CommonValuesPos})
	}
	if m.StaticValues != nil {
		sec.static = append(sec.static, staticLayer{name: "module values.yaml", file: m.ValuesFile(), values: m.StaticValues, pos: m.StaticValuesPos})
	}
	sec.flag = m.CommonEnabled
	if m.StaticEnabled != nil {
		sec.flag = m.StaticEnabled
	}
	return sec
}

// clone copies the section for a recomputation that may be discarded.
func (sec *section) clone() *section {
	cp := *sec
	return &cp
}

// wrap puts a section's tree under its key, as hooks see it.
func (sec *section) wrap(v map[string]any, pos *document.Pos) (map[string]any, *document.Pos) {
	var wp *document.Pos
	if pos != nil {
		wp = &document.Pos{Line: pos.Line, Column: pos.Column, Keys: map[string]*document.Pos{sec.key: pos}}
	}
	return map[string]any{sec.key: v}, wp
}

// layers returns the section's merge stack; the patch layers are one per
// patch when provenance is wanted, else one for all.
func (sec *section) layers(cfg *config.Config, provenance bool) ([]*values.Layer, error) {
	empty, _ := sec.wrap(map[string]any{}, nil)
	out := []*values.Layer{{Name: "(empty section)", Values: empty}}
	for _, st := range sec.static {
		v, p := sec.wrap(st.values, st.pos)
		out = append(out, &values.Layer{Name: st.name, Source: st.file, Values: v, Pos: p})
	}
	if sec.configSchema != nil {
		out = append(out, &values.Layer{Name: "OpenAPI default (config-values.yaml)", Source: sec.configSchema.Source(), Op: defaultsOp{key: sec.key, schema: sec.configSchema}})
	}
	if cs := configSection(cfg, sec.key); cs != nil {
		v, p := sec.wrap(cs.Values, cs.Pos)
		out = append(out, &values.Layer{Name: "config store", Source: cfg.Source, Values: v, Pos: p})
	}
	if sec.valuesSchema != nil {
		out = append(out, &values.Layer{Name: "OpenAPI default (values.yaml)", Source: sec.valuesSchema.Source(), Op: defaultsOp{key: sec.key, schema: sec.valuesSchema}})
	}
	if len(sec.patches) == 0 {
		return out, nil
	}
	if provenance {
		for _, p := range sec.patches {
			jp, err := values.NewJSONPatch(p.ops.Maps(), p.meta.Hook, nil)
			if err != nil {
				return nil, err
			}
			jp.IgnoreMissingRemove = true
			out = append(out, &values.Layer{Name: p.meta.Name(), Source: p.meta.Hook, Op: jp})
		}
		return out, nil
	}
	return out, nil
}

func configSection(cfg *config.Config, key string) *config.Section {
	if cfg == nil {
		return nil
	}
	if key == GlobalKey {
		return cfg.Global
	}
	return cfg.Modules[key]
}

// defaultsOp applies a schema's defaults to one section, as a layer.
type defaultsOp struct {
	key    string
	schema *schema.Schema
}

func (d defaultsOp) Apply(tree map[string]any) (map[string]any, error) {
	sec, _ := tree[d.key].(map[string]any)
	tree[d.key] = d.schema.ApplyDefaults(sec)
	return tree, nil
}

// compute merges the section's values with a config. Stored patches are
// re-applied leniently (removing a key that is gone is no error); a
// patch that no longer applies at all is dropped.
func (sec *section) compute(cfg *config.Config) error {
	layers, err := sec.layers(cfg, false)
	if err != nil {
		return &SectionError{Section: sec.name, Err: err}
	}
	res, err := values.Merge(layers, values.MergeOptions{})
	if err != nil {
		return &SectionError{Section: sec.name, Err: err}
	}
	base, _ := res.Values[sec.key].(map[string]any)
	if base == nil {
		base = map[string]any{}
	}
	tree := sec.composite(base, nil)
	if len(sec.patches) > 0 {
		var all hook.Patch
		for _, p := range sec.patches {
			all = append(all, p.ops...)
		}
		out, err := applyLenient(all, tree)
		if err != nil {
			// One by one, dropping what no longer applies.
			kept := sec.patches[:0:0]
			for _, p := range sec.patches {
				next, err := applyLenient(p.ops, tree)
				if err != nil {
					continue
				}
				tree = next
				kept = append(kept, p)
			}
			sec.patches = kept
		} else {
			tree = out
		}
	}
	v, enabled, err := sec.split(tree)
	if err != nil {
		return &SectionError{Section: sec.name, Err: err}
	}
	sec.values = v
	if sec.key == GlobalKey {
		sec.enabled = enabled
		sec.enabledBy = enabledBy(sec.patches)
	}
	return nil
}

func applyLenient(ops hook.Patch, tree map[string]any) (map[string]any, error) {
	jp, err := values.NewJSONPatch(ops.Maps(), "stored patches", nil)
	if err != nil {
		return nil, err
	}
	jp.IgnoreMissingRemove = true
	return jp.Apply(tree)
}

// composite is the tree a patch of the section applies to: {<key>: v}
// and, for the global section, the *Enabled flags.
func (sec *section) composite(v map[string]any, enabled map[string]bool) map[string]any {
	out := map[string]any{sec.key: values.CopyMaps(v)}
	for k, b := range enabled {
		out[module.EnabledKey(k)] = b
	}
	return out
}

// split takes a patched composite tree apart.
func (sec *section) split(tree map[string]any) (map[string]any, map[string]bool, error) {
	var v map[string]any
	switch x := tree[sec.key].(type) {
	case map[string]any:
		v = x
	case nil:
		v = map[string]any{}
	default:
		return nil, nil, fmt.Errorf("/%s must stay a map of values, not become %s", sec.key, document.Describe(x))
	}
	var enabled map[string]bool
	for k, x := range tree {
		if k == sec.key {
			continue
		}
		key, ok := strings.CutSuffix(k, module.EnabledSuffix)
		if sec.key != GlobalKey || !ok || key == "" {
			return nil, nil, fmt.Errorf("%w: /%s", ErrScope, k)
		}
		b, ok := x.(bool)
		if !ok {
			return nil, nil, fmt.Errorf("/%s must be true or false, not %s", k, document.Describe(x))
		}
		if enabled == nil {
			enabled = map[string]bool{}
		}
		enabled[key] = b
	}
	return v, enabled, nil
}

// A storedPatch is a patch kept for a section, with the operations still
// in effect.
type storedPatch struct {
	meta Patch
	ops  hook.Patch
}

func (p *storedPatch) patch() Patch {
	out := p.meta
	out.Ops = slices.Clone(p.ops)
	return out
}

// compact appends a new patch, dropping the operations of earlier patches
// (and earlier in the new one) that a later operation overwrites whole,
// and patches left without operations. Order is kept. "test" operations
// are checks at the time of the patch and are not kept.
func compact(patches []*storedPatch, next *storedPatch) []*storedPatch {
	all := append(slices.Clone(patches), next)
	// Walk operations newest first, remembering the object paths that
	// are overwritten from there on.
	var cover []string
	keep := make([][]bool, len(all))
	for pi := range all {
		keep[pi] = make([]bool, len(all[pi].ops))
	}
	for pi := len(all) - 1; pi >= 0; pi-- {
		for oi := len(all[pi].ops) - 1; oi >= 0; oi-- {
			op, path := all[pi].ops[oi].Op, all[pi].ops[oi].Path
			if op == "test" {
				continue
			}
			// An operation whose only effect is at or under a path a
			// later operation overwrites whole is dropped. A move also
			// removes its source: it is never dropped.
			if op != "move" && under(path, cover) {
				continue
			}
			keep[pi][oi] = true
			switch {
			case op == "move" || op == "copy":
				// It reads what earlier operations wrote: stop
				// compacting across it.
				cover = cover[:0]
			case (op == "add" || op == "remove") && objectPath(path):
				// replace is left out: it needs the key to exist,
				// which the operations it would drop may ensure.
				cover = append(cover, path)
			}
		}
	}
	out := make([]*storedPatch, 0, len(all))
	for pi, p := range all {
		var ops hook.Patch
		for oi, o := range p.ops {
			if keep[pi][oi] {
				ops = append(ops, o)
			}
		}
		if len(ops) == 0 {
			continue
		}
		if len(ops) == len(p.ops) && pi < len(patches) {
			out = append(out, p)
			continue
		}
		out = append(out, &storedPatch{meta: p.meta, ops: ops})
	}
	return out
}

// under reports whether path is one of paths or lies under one.
func under(path string, paths []string) bool {
	for _, c := range paths {
		if path == c || strings.HasPrefix(path, c+"/") {
			return true
		}
	}
	return false
}

// objectPath reports whether a JSON pointer addresses object keys only
// (no list index and no "-"), so that writing it overwrites everything
// below it and nothing else.
func objectPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	for _, tok := range strings.Split(p[1:], "/") {
		if tok == "-" || tok == "" {
			return false
		}
		digits := true
		for i := 0; i < len(tok); i++ {
			if tok[i] < '0' || tok[i] > '9' {
				digits = false
				break
			}
		}
		if digits {
			return false
		}
	}
	return true
}

func countOps(ps []*storedPatch) int {
	n := 0
	for _, p := range ps {
		n += len(p.ops)
	}
	return n
}

// enabledBy names, for each *Enabled flag, the last patch that wrote it.
func enabledBy(ps []*storedPatch) map[string]string {
	out := map[string]string{}
	for _, p := range ps {
		for _, o := range p.ops {
			top := strings.TrimPrefix(o.Path, "/")
			if strings.Contains(top, "/") {
				continue
			}
			if key, ok := strings.CutSuffix(top, module.EnabledSuffix); ok && key != "" {
				out[key] = p.meta.Name()
			}
		}
	}
	return out
}
