package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/operator/config"
	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/module"
	"github.com/strata-dev/strata/internal/schema"
	"github.com/strata-dev/strata/internal/values"
)

// GlobalKey is the values key of the global section.
const GlobalKey = module.GlobalKey

// EnabledModulesKey is the key under global that lists enabled modules in
// what hooks and enabled scripts see.
const EnabledModulesKey = "enabledModules"

// DefaultMaxPatchOps bounds the operations stored for one section.
const DefaultMaxPatchOps = 10_000

// DefaultMaxValuesBytes bounds, in JSON, the values a patch with copy
// operations may produce (each copy can double them).
const DefaultMaxValuesBytes = 16 << 20

// Options tune a Store.
type Options struct {
	// MaxPatchOps bounds the patch operations kept for one section after
	// compaction; a patch that would exceed it fails. 0 means
	// DefaultMaxPatchOps, negative no limit.
	MaxPatchOps int
	// MaxValuesBytes bounds the JSON size of the values a patch with copy
	// operations produces, checked after each copy; 0 means
	// DefaultMaxValuesBytes, negative no limit.
	MaxValuesBytes int64
}

// A Patch is a hook's values patch.
type Patch struct {
	// Scope is the section the patch is for: GlobalKey for a global hook,
	// the module's values key for a module hook.
	Scope string
	// Hook names the hook (its path relative to its hooks directory).
	Hook string
	// Binding is the binding the hook ran for.
	Binding string
	// Time is when the hook ran.
	Time time.Time
	// Ops is the patch, as the hook's output file gave it (hook.ParsePatch).
	// Once stored, only the operations still in effect are kept (see the
	// package documentation).
	Ops hook.Patch
	// Source names the file the patch was read from in errors; "" is
	// "values patch".
	Source string
}

// Name is the patch as explain output shows it.
func (p *Patch) Name() string {
	s := "hook " + p.Hook
	if p.Binding != "" {
		s += " (" + p.Binding + ")"
	}
	if !p.Time.IsZero() {
		s += " at " + p.Time.UTC().Format(time.RFC3339)
	}
	return s
}

// Result tells what a stored patch changed.
type Result struct {
	// Changed is whether the section's values changed.
	Changed bool
	// Enabled lists the module keys whose enabled flag a global patch set,
	// unset or flipped, sorted.
	Enabled []string
}

// A SectionError is an error about one section of the store: it names
// the module (or "global").
type SectionError struct {
	// Section is the module's name, or "global".
	Section string
	Err     error
}

func (e *SectionError) Error() string {
	if e.Section == GlobalKey {
		return "global values: " + e.Err.Error()
	}
	return "module " + e.Section + ": " + e.Err.Error()
}

func (e *SectionError) Unwrap() error { return e.Err }

// ErrScope is wrapped by the error for a patch operation outside the
// paths its hook may change.
var ErrScope = errors.New("patch outside the hook's values")

// Store is the values store. Its methods are safe for concurrent use.
// Trees it returns are shared: callers must not modify them.
type Store struct {
	opts Options

	mu      sync.RWMutex
	global  *section
	modules map[string]*section // by values key
	cfg     *config.Config
	// hookEnabled are the *Enabled flags set by global hooks' patches.
	hookEnabled map[string]bool
}

// New makes a store for the modules and global section of a discovery,
// with an empty config.
func New(set *module.Set, opts Options) (*Store, error) {
	s := &Store{opts: opts, modules: map[string]*section{}, cfg: config.Empty(""), hookEnabled: map[string]bool{}}
	if err := s.SetModules(set); err != nil {
		return nil, err
	}
	return s, nil
}

// SetModules replaces the modules and global static values (after a new
// discovery). Patches stored for modules that are still there are kept.
func (s *Store) SetModules(set *module.Set) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := newGlobalSection(set.Global)
	mods := make(map[string]*section, len(set.Modules))
	for _, m := range set.Modules {
		mods[m.Key] = newModuleSection(m)
	}
	if s.global != nil {
		g.patches = s.global.patches
	}
	for k, sec := range mods {
		if old := s.modules[k]; old != nil {
			sec.patches = old.patches
		}
	}
	if err := computeAll(g, mods, s.cfg); err != nil {
		return err
	}
	s.global, s.modules = g, mods
	s.hookEnabled = g.enabled
	return nil
}

// Config returns the config store content the values were merged with.
func (s *Store) Config() *config.Config {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.cfg
}

// ValidateConfig checks a config as SetConfig would, changing nothing:
// every section against its openapi/config-values.yaml (its defaults
// applied first; sections of unknown modules are not checked), then the
// effective values it would give against openapi/values.yaml (see
// SetConfig). It returns nil or an error listing every invalid section
// (errors.Join of *SectionErrors). Use it as the check of a config
// store's Patch, so that what is written is what SetConfig accepts.
func (s *Store) ValidateConfig(cfg *config.Config) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, _, err := s.prepare(cfg)
	return err
}

// prepare validates a config and computes the sections it gives, without
// storing them.
func (s *Store) prepare(cfg *config.Config) (*section, map[string]*section, error) {
	if err := s.validateConfig(cfg); err != nil {
		return nil, nil, err
	}
	g := s.global.clone()
	mods := make(map[string]*section, len(s.modules))
	for k, sec := range s.modules {
		mods[k] = sec.clone()
	}
	if err := computeAll(g, mods, cfg); err != nil {
		return nil, nil, err
	}
	// The effective values are not checked against openapi/values.yaml
	// here, as addon-operator does not: a value a hook fills later (a
	// required internal.*) would stop the config. They are checked when a
	// hook patches them and before Helm (HelmValues), where only the
	// module concerned fails.
	return g, mods, nil
}

// enabledWith reports whether a module section's merged enabled flag is
// true with config cfg: its values.yaml files, then global hooks'
// patches, then cfg (EnabledFlag's order).
func (s *Store) enabledWith(cfg *config.Config, sec *section) bool {
	on := sec.flag != nil && *sec.flag
	if v, ok := s.hookEnabled[sec.key]; ok {
		on = v
	}
	if v, ok := cfg.EnabledFlag(sec.key); ok {
		on = v
	}
	return on
}

func (s *Store) validateConfig(cfg *config.Config) error {
	var errs []error
	check := func(sec *section) {
		v := cfg.Section(sec.key)
		if v == nil || sec.configSchema == nil {
			return
		}
		// As addon-operator: an empty module section, or the section of a
		// disabled module, is kept unchecked (it is checked once the
		// module is enabled: the flag changes the config).
		if sec.key != GlobalKey && (len(v) == 0 || !s.enabledWith(cfg, sec)) {
			return
		}
		// The section it replaces is the old value of the schema's
		// x-deckhouse-validations transition rules (oldSelf), as in
		// addon-operator.
		var old map[string]any
		if s.cfg != nil {
			if o := s.cfg.Section(sec.key); o != nil {
				old = sec.configSchema.ApplyDefaults(o)
			}
		}
		if err := sec.configSchema.ValidateUpdate(sec.configSchema.ApplyDefaults(v), old); err != nil {
			cs := configSection(cfg, sec.key)
			errs = append(errs, &SectionError{Section: sec.name, Err: fmt.Errorf("config store %s: %w", sectionSource(cfg, sec.key), locate(err, cs))})
		}
	}
	errs = append(errs, s.unknownKeys(cfg)...)
	check(s.global)
	for _, k := range slices.Sorted(maps.Keys(s.modules)) {
		check(s.modules[k])
	}
	return errors.Join(errs...)
}

// unknownKeys refuses the config store's keys of modules that do not
// exist (a section, an enabled flag or a maintenance state), naming the
// module meant when the key is a typo of one.
func (s *Store) unknownKeys(cfg *config.Config) []error {
	var errs []error
	known := slices.Sorted(maps.Keys(s.modules))
	bad := func(key, suffix, where string) {
		msg := fmt.Sprintf("config store %s: %s%s: no module has the values key %q", where, key, suffix, key)
		if m := document.Closest(key, known); m != "" {
			msg += fmt.Sprintf("; did you mean %s%s?", m, suffix)
		} else if len(known) > 0 {
			msg += "; the modules' keys are " + strings.Join(known, ", ")
		}
		errs = append(errs, fmt.Errorf("%w: %s (remove the key, or add the module)", ErrUnknownModule, msg))
	}
	for _, k := range slices.Sorted(maps.Keys(cfg.Modules)) {
		if s.modules[k] == nil {
			where := cfg.Modules[k].Source
			if cfg.Modules[k].Line > 0 {
				where = fmt.Sprintf("%s:%d", cfg.Source, cfg.Modules[k].Line)
			}
			bad(k, "", where)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(cfg.Enabled)) {
		if s.modules[k] == nil {
			bad(k, config.EnabledSuffix, cfg.Source)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(cfg.Maintenance)) {
		if s.modules[k] == nil {
			bad(k, config.MaintenanceSuffix, cfg.Source)
		}
	}
	return errs
}

func sectionSource(cfg *config.Config, key string) string {
	if key == GlobalKey {
		if cfg.Global != nil {
			return cfg.Global.Source
		}
	} else if sec := cfg.Modules[key]; sec != nil {
		return sec.Source
	}
	return cfg.Source + " key " + key
}

// SetConfig validates a new config store content (see ValidateConfig),
// merges it in and validates the effective values of every section it
// gives values to against its openapi/values.yaml (x-required-for-helm
// aside). An invalid config changes nothing. It returns the keys of
// the sections whose values changed (GlobalKey first, then module keys
// sorted).
func (s *Store) SetConfig(cfg *config.Config) ([]string, error) {
	if cfg == nil {
		cfg = config.Empty("")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g, mods, err := s.prepare(cfg)
	if err != nil {
		return nil, err
	}
	var changed []string
	if !sameJSON(g.values, s.global.values) {
		changed = append(changed, GlobalKey)
	}
	for _, k := range slices.Sorted(maps.Keys(mods)) {
		if !sameJSON(mods[k].values, s.modules[k].values) {
			changed = append(changed, k)
		}
	}
	s.global, s.modules, s.cfg = g, mods, cfg
	s.hookEnabled = g.enabled
	return changed, nil
}

func computeAll(g *section, mods map[string]*section, cfg *config.Config) error {
	var errs []error
	if err := g.compute(cfg); err != nil {
		errs = append(errs, err)
	}
	for _, k := range slices.Sorted(maps.Keys(mods)) {
		if err := mods[k].compute(cfg); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (s *Store) section(key string) *section {
	if key == GlobalKey {
		return s.global
	}
	return s.modules[key]
}

// Values returns the effective values of a section (GlobalKey or a module
// key); nil for an unknown key.
func (s *Store) Values(key string) map[string]any {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if sec := s.section(key); sec != nil {
		return sec.values
	}
	return nil
}

// ConfigValues returns what CONFIG_VALUES_PATH holds for a hook of a
// section: {global: <config global>} and, for a module key,
// {<key>: <config section>}. As addon-operator: an absent global section
// is null, and so is a module's when the config has no key for the module
// at all (with only its enabled flag or maintenance state, it is {}).
func (s *Store) ConfigValues(key string) map[string]any {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := map[string]any{GlobalKey: nilOrMap(s.cfg.Section(GlobalKey))}
	if key != GlobalKey {
		if s.cfg.Mentions(key) {
			out[key] = nonNil(s.cfg.Section(key))
		} else {
			out[key] = nil
		}
	}
	return out
}

// nilOrMap returns m, or an untyped nil (JSON null) for a nil map.
func nilOrMap(m map[string]any) any {
	if m == nil {
		return nil
	}
	return m
}

// HookValues returns what VALUES_PATH holds for a hook of a section:
// {global: ...} and, for a module key, {<key>: ...}. When enabledModules
// is not nil, it is global.enabledModules.
func (s *Store) HookValues(key string, enabledModules []string) map[string]any {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.hookValues(key, enabledModules)
}

func (s *Store) hookValues(key string, enabledModules []string) map[string]any {
	g := s.global.values
	if enabledModules != nil {
		cp := make(map[string]any, len(g)+1)
		for k, v := range g {
			cp[k] = v
		}
		list := make([]any, len(enabledModules))
		for i, n := range enabledModules {
			list[i] = n
		}
		cp[EnabledModulesKey] = list
		g = cp
	}
	out := map[string]any{GlobalKey: g}
	if key != GlobalKey {
		if sec := s.modules[key]; sec != nil {
			out[key] = sec.values
		} else {
			out[key] = map[string]any{}
		}
	}
	return out
}

// HelmValues returns the values a module's chart gets, {global, <key>},
// after checking both sections against their openapi/values.yaml with
// x-required-for-helm.
func (s *Store) HelmValues(key string) (map[string]any, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	sec := s.modules[key]
	if sec == nil {
		return nil, fmt.Errorf("no module with values key %q", key)
	}
	var errs []error
	// A section kept unchecked while the module was disabled is checked
	// now, before anything is installed.
	if v := s.cfg.Section(key); len(v) > 0 && sec.configSchema != nil {
		if err := sec.configSchema.Validate(sec.configSchema.ApplyDefaults(v)); err != nil {
			errs = append(errs, &SectionError{Section: sec.name, Err: fmt.Errorf("config store %s: %w", sectionSource(s.cfg, key), locate(err, configSection(s.cfg, key)))})
		}
	}
	for _, c := range []*section{s.global, sec} {
		if c.valuesSchema == nil {
			continue
		}
		if err := c.valuesSchema.ValidateForHelm(c.values); err != nil {
			errs = append(errs, &SectionError{Section: c.name, Err: fmt.Errorf("values for Helm: %w", c.locateValues(err, s.cfg))})
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return map[string]any{GlobalKey: s.global.values, key: sec.values}, nil
}

// EnabledFlag returns a module's merged enabled flag and the source that
// decided it: false, then modules/values.yaml, the module's values.yaml,
// global hooks' patches, the config store.
func (s *Store) EnabledFlag(m *module.Module) (bool, string) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	on, from := false, "default"
	if m.CommonEnabled != nil {
		on, from = *m.CommonEnabled, m.CommonEnabledFile
	}
	if m.StaticEnabled != nil {
		on, from = *m.StaticEnabled, m.ValuesFile()
	}
	// addon-operator's extenders in their order: static, dynamic (global
	// hooks' patches), the config store; the last that sets it wins.
	if v, ok := s.hookEnabled[m.Key]; ok {
		on, from = v, "a global hook's patch"
		if by := s.global.enabledBy[m.Key]; by != "" {
			from = "the patch of " + by
		}
	}
	if v, ok := s.cfg.EnabledFlag(m.Key); ok {
		on, from = v, "the config store"
		if s.cfg.Source != "" {
			from = "the config store " + s.cfg.Source
		}
	}
	return on, from
}

// ScriptValues returns the values and config values of a module's enabled
// script, with enabledBefore as global.enabledModules.
func (s *Store) ScriptValues(m *module.Module, enabledBefore []string) (map[string]any, map[string]any) {
	if enabledBefore == nil {
		enabledBefore = []string{}
	}
	vals := s.HookValues(m.Key, enabledBefore)
	return vals, s.ConfigValues(m.Key)
}

var _ module.EnabledSource = (*Store)(nil)

// Patches returns the patches stored for a section, in the order they were
// made, each holding only its operations still in effect.
func (s *Store) Patches(key string) []Patch {
	s.mu.RLock()
	defer s.mu.RUnlock()
	sec := s.section(key)
	if sec == nil {
		return nil
	}
	out := make([]Patch, 0, len(sec.patches))
	for _, p := range sec.patches {
		out = append(out, p.patch())
	}
	return out
}

// ApplyPatch checks, applies, validates and stores a hook's values patch
// (see the package documentation). On error nothing is stored; the error
// is a *SectionError naming the module (or global), wrapping ErrScope,
// values.ErrPatch or a *schema.ValidationError.
func (s *Store) ApplyPatch(p Patch) (Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sec := s.section(p.Scope)
	if sec == nil {
		return Result{}, fmt.Errorf("%s: no module with values key %q", p.Name(), p.Scope)
	}
	fail := func(err error) (Result, error) {
		return Result{}, &SectionError{Section: sec.name, Err: fmt.Errorf("%s: %w", p.Name(), err)}
	}
	ops := p.Ops
	if len(ops) == 0 {
		return Result{}, nil
	}
	source := p.Source
	if source == "" {
		source = "values patch"
	}
	if err := CheckScope(ops, p.Scope, source); err != nil {
		var se *ScopeError
		if errors.As(err, &se) {
			err = se.applyError()
		}
		return fail(err)
	}
	strict, err := values.NewJSONPatch(ops.Maps(), source, nil)
	if err != nil {
		return fail(err)
	}
	tree := sec.composite(sec.values, sec.enabled)
	var out map[string]any
	if hasCopy(ops) {
		out, err = applyStepwise(ops, tree, s.maxValuesBytes())
	} else {
		out, err = strict.Apply(tree)
	}
	if err != nil {
		return fail(err)
	}
	newValues, newEnabled, err := sec.split(out)
	if err != nil {
		return fail(err)
	}
	if sec.valuesSchema != nil {
		// The values before the patch are oldSelf for transition rules.
		if err := sec.valuesSchema.ValidateUpdate(newValues, sec.values); err != nil {
			return fail(err)
		}
	}
	meta := p
	meta.Ops = nil // the operations in effect are kept apart
	patches := compact(sec.patches, &storedPatch{meta: meta, ops: slices.Clone(ops)})
	if max := s.maxOps(); max > 0 {
		if n := countOps(patches); n > max {
			return fail(fmt.Errorf("the section would keep %d patch operations, more than the limit of %d; have the hook replace whole keys rather than add to lists", n, max))
		}
	}
	res := Result{Changed: !sameJSON(newValues, sec.values)}
	if sec.key == GlobalKey {
		for _, k := range unionKeys(sec.enabled, newEnabled) {
			ov, oset := sec.enabled[k]
			nv, nset := newEnabled[k]
			if ov != nv || oset != nset {
				res.Enabled = append(res.Enabled, k)
			}
		}
		sec.enabled = newEnabled
		sec.enabledBy = enabledBy(patches)
		s.hookEnabled = newEnabled
	}
	sec.values = newValues
	sec.patches = patches
	return res, nil
}

func (s *Store) maxValuesBytes() int64 {
	switch {
	case s.opts.MaxValuesBytes == 0:
		return DefaultMaxValuesBytes
	case s.opts.MaxValuesBytes < 0:
		return 0
	}
	return s.opts.MaxValuesBytes
}

func hasCopy(ops hook.Patch) bool {
	for _, o := range ops {
		if o.Op == "copy" {
			return true
		}
	}
	return false
}

// applyStepwise applies a patch one operation at a time, refusing a copy
// that would take the values past max bytes of JSON before making it: a
// few copies of a key into itself would otherwise grow them exponentially.
func applyStepwise(ops hook.Patch, tree map[string]any, max int64) (map[string]any, error) {
	var size int64
	if max > 0 {
		data, err := json.Marshal(tree)
		if err != nil {
			return nil, err
		}
		size = int64(len(data))
	}
	for i, o := range ops {
		if o.Op == "copy" && max > 0 {
			from := o.From
			if v, ok := pointerValue(tree, from); ok {
				data, err := json.Marshal(v)
				if err != nil {
					return nil, err
				}
				size += int64(len(data))
				if size > max {
					return nil, fmt.Errorf("%w: operation %d (copy from %s) would make the values more than the limit of %d bytes of JSON", values.ErrPatch, i, from, max)
				}
			}
		}
		jp, err := values.NewJSONPatch([]any{o.Map()}, "patch", nil)
		if err != nil {
			return nil, err
		}
		if tree, err = jp.Apply(tree); err != nil {
			return nil, fmt.Errorf("operation %d: %w", i, err)
		}
	}
	return tree, nil
}

// pointerValue returns the value at a JSON pointer, if there is one.
func pointerValue(tree map[string]any, ptr string) (any, bool) {
	if ptr == "" {
		return tree, true
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, false
	}
	var cur any = tree
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[tok]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			n, err := strconv.Atoi(tok)
			if err != nil || n < 0 || n >= len(c) {
				return nil, false
			}
			cur = c[n]
		default:
			return nil, false
		}
	}
	return cur, true
}

func (s *Store) maxOps() int {
	switch {
	case s.opts.MaxPatchOps == 0:
		return DefaultMaxPatchOps
	case s.opts.MaxPatchOps < 0:
		return 0
	}
	return s.opts.MaxPatchOps
}

// Explain tells, for every key under path in a section (path is relative
// to the section; nil: all of it), the layer that set it and what it
// overrode. Paths in the explanations start with the section key.
func (s *Store) Explain(key string, path document.Path) ([]values.Explanation, error) {
	s.mu.RLock()
	sec := s.section(key)
	cfg := s.cfg
	s.mu.RUnlock()
	if sec == nil {
		return nil, fmt.Errorf("no module with values key %q", key)
	}
	layers, err := sec.layers(cfg, true)
	if err != nil {
		return nil, err
	}
	res, err := values.Merge(layers, values.MergeOptions{Provenance: true})
	if err != nil {
		return nil, &SectionError{Section: sec.name, Err: err}
	}
	full := append(document.Path{document.Key(key)}, path...)
	return res.Explain(full, values.ExplainOptions{ShowSensitive: true})
}

// sameJSON compares values as hooks and Helm see them, in JSON: a patch
// round trip turns 1.0 into 1, which is no change.
func sameJSON(a, b map[string]any) bool {
	if reflect.DeepEqual(a, b) {
		return true
	}
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

func unionKeys(a, b map[string]bool) []string {
	set := map[string]bool{}
	for k := range a {
		set[k] = true
	}
	for k := range b {
		set[k] = true
	}
	return slices.Sorted(maps.Keys(set))
}

func nonNil(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// sanity: schema is used for ValidationError in docs.
var _ = (*schema.ValidationError)(nil)
