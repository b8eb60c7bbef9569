package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/values"
)

// GlobalKey is the key of the global section.
const GlobalKey = "global"

// EnabledSuffix ends the key of a module's enabled flag.
const EnabledSuffix = "Enabled"

// MaintenanceSuffix ends the key of a module's maintenance state,
// addon-operator's `<moduleKey>Maintenance`.
const MaintenanceSuffix = "Maintenance"

// NoResourceReconciliation is the maintenance state in which a module's
// hooks run but its Helm release, once installed, is left as it is.
const NoResourceReconciliation = "NoResourceReconciliation"

// DefaultMaxSize bounds a config document.
const DefaultMaxSize = 16 << 20

// A Config is the content of the config store.
type Config struct {
	// Global is the global section; nil when absent.
	Global *Section
	// Modules are the module sections by module values key.
	Modules map[string]*Section
	// Enabled are the `<key>Enabled` flags by module values key (without
	// the suffix).
	Enabled map[string]bool
	// Maintenance are the `<key>Maintenance` states by module values key
	// (without the suffix): true for NoResourceReconciliation, false for
	// the key set to "" (the default state, Managed).
	Maintenance map[string]bool
	// Source names where the config came from, for errors and explain
	// output (a file name, "ConfigMap ns/name").
	Source string
}

// A Section is one values section of the config store.
type Section struct {
	// Values are the section's values; never nil.
	Values map[string]any
	// Pos are the positions of Values in Source, when known.
	Pos *document.Pos
	// Source names where the section was read ("config.yaml key global").
	Source string
	// Line is the line of the section's key in the config document.
	Line int
}

// Empty returns a config with nothing in it.
func Empty(source string) *Config {
	return &Config{Modules: map[string]*Section{}, Enabled: map[string]bool{}, Maintenance: map[string]bool{}, Source: source}
}

// Section returns the values of a section by key (GlobalKey or a module
// key); nil when absent. The map must not be modified.
func (c *Config) Section(key string) map[string]any {
	if c == nil {
		return nil
	}
	if key == GlobalKey {
		if c.Global == nil {
			return nil
		}
		return c.Global.Values
	}
	if s := c.Modules[key]; s != nil {
		return s.Values
	}
	return nil
}

// Unmanaged reports whether a module key's maintenance state is
// NoResourceReconciliation.
func (c *Config) Unmanaged(key string) bool {
	return c != nil && c.Maintenance[key]
}

// Mentions reports whether the config has any key for a module key: its
// section, its enabled flag or its maintenance state.
func (c *Config) Mentions(key string) bool {
	if c == nil {
		return false
	}
	_, s := c.Modules[key]
	_, e := c.Enabled[key]
	_, m := c.Maintenance[key]
	return s || e || m
}

// EnabledFlag returns the `<key>Enabled` flag of a module key, if set.
func (c *Config) EnabledFlag(key string) (enabled, ok bool) {
	if c == nil {
		return false, false
	}
	enabled, ok = c.Enabled[key]
	return enabled, ok
}

// Tree returns the config as one tree, the shape hooks' config patches
// address: {global: {...}, <key>: {...}, <key>Enabled: true}. Maps are
// copies; lists and scalars are shared.
func (c *Config) Tree() map[string]any {
	out := make(map[string]any, len(c.Modules)+len(c.Enabled)+1)
	if c.Global != nil {
		out[GlobalKey] = values.CopyMaps(c.Global.Values)
	}
	for k, s := range c.Modules {
		out[k] = values.CopyMaps(s.Values)
	}
	for k, v := range c.Enabled {
		out[k+EnabledSuffix] = v
	}
	for k, v := range c.Maintenance {
		out[k+MaintenanceSuffix] = maintenanceText(v)
	}
	return out
}

// FromTree builds a config from a tree of the shape Tree returns. Sections
// equal to those of prev keep prev's positions.
func FromTree(tree map[string]any, prev *Config) (*Config, error) {
	source := ""
	if prev != nil {
		source = prev.Source
	}
	c := Empty(source)
	for _, k := range slices.Sorted(maps.Keys(tree)) {
		v := tree[k]
		kind, key := classify(k)
		if kind != keyGlobal && !validKey(key) {
			return nil, fmt.Errorf("%s: /%s: not a config key: keys are global, a module name in camelCase (cert-manager → certManager) or <moduleKey>Enabled", source, k)
		}
		switch kind {
		case keyEnabled:
			b, ok := v.(bool)
			if !ok {
				return nil, fmt.Errorf("%s: %s must be true or false, not %s", source, k, document.Describe(v))
			}
			c.Enabled[key] = b
		case keyMaintenance:
			u, err := parseMaintenance(v)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", source, k, err)
			}
			c.Maintenance[key] = u
		default:
			m, ok := v.(map[string]any)
			if !ok && v != nil {
				return nil, fmt.Errorf("%s: %s must be a map of values, not %s", source, k, document.Describe(v))
			}
			if m == nil {
				m = map[string]any{}
			}
			s := &Section{Values: m, Source: sectionSource(source, k)}
			if old := prev.section(k); old != nil && reflect.DeepEqual(old.Values, m) {
				s = old
			}
			if kind == keyGlobal {
				c.Global = s
			} else {
				c.Modules[key] = s
			}
		}
	}
	return c, nil
}

func (c *Config) section(k string) *Section {
	if c == nil {
		return nil
	}
	if k == GlobalKey {
		return c.Global
	}
	return c.Modules[k]
}

// Apply returns the config with a hook's config patch applied, strictly
// (removing a missing key fails). An operation below a section that does
// not exist yet creates the section. c is not modified.
func (c *Config) Apply(p *values.JSONPatch) (*Config, error) {
	tree := c.Tree()
	created := map[string]bool{}
	for _, op := range p.Operations() {
		m, _ := op.(map[string]any)
		path, _ := m["path"].(string)
		top, rest, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
		top = unescapePointer(top)
		if rest == "" || top == "" {
			continue
		}
		if kind, _ := classify(top); kind == keyEnabled || kind == keyMaintenance {
			continue
		}
		if _, ok := tree[top]; !ok {
			tree[top] = map[string]any{}
			created[top] = true
		}
	}
	out, err := p.Apply(tree)
	if err != nil {
		return nil, fmt.Errorf("applying the config patch to %s: %w", c.Source, err)
	}
	for k := range created {
		if m, ok := out[k].(map[string]any); ok && len(m) == 0 {
			delete(out, k)
		}
	}
	return FromTree(out, c)
}

func unescapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

// A Change is how one config differs from another.
type Change struct {
	// Global is set when the global section changed.
	Global bool
	// Enabled lists the module keys whose `<key>Enabled` flag was set,
	// unset or flipped, sorted.
	Enabled []string
	// Modules lists the module keys whose section changed, sorted.
	Modules []string
	// Maintenance lists the module keys whose maintenance state changed
	// (an absent key and "" are the same state), sorted.
	Maintenance []string
}

// ReloadAll reports whether the change reloads all modules: the global
// section or an enabled flag changed.
func (c Change) ReloadAll() bool { return c.Global || len(c.Enabled) > 0 }

// Empty reports whether nothing changed.
func (c Change) Empty() bool {
	return !c.Global && len(c.Enabled) == 0 && len(c.Modules) == 0 && len(c.Maintenance) == 0
}

func (c Change) String() string {
	var parts []string
	if c.Global {
		parts = append(parts, "global section")
	}
	for _, k := range c.Enabled {
		parts = append(parts, k+EnabledSuffix)
	}
	for _, k := range c.Modules {
		parts = append(parts, "section "+k)
	}
	for _, k := range c.Maintenance {
		parts = append(parts, k+MaintenanceSuffix)
	}
	if len(parts) == 0 {
		return "no change"
	}
	return strings.Join(parts, ", ")
}

// Diff classifies the change from old to new; a nil config is an empty one.
func Diff(old, new *Config) Change {
	var ch Change
	ch.Global = !sameValues(old.Section(GlobalKey), new.Section(GlobalKey))
	keys := map[string]bool{}
	if old != nil {
		for k := range old.Enabled {
			keys[k] = true
		}
	}
	if new != nil {
		for k := range new.Enabled {
			keys[k] = true
		}
	}
	for k := range keys {
		ov, oset := old.EnabledFlag(k)
		nv, nset := new.EnabledFlag(k)
		if ov != nv || oset != nset {
			ch.Enabled = append(ch.Enabled, k)
		}
	}
	clear(keys)
	if old != nil {
		for k := range old.Modules {
			keys[k] = true
		}
	}
	if new != nil {
		for k := range new.Modules {
			keys[k] = true
		}
	}
	for k := range keys {
		if !sameValues(old.Section(k), new.Section(k)) {
			ch.Modules = append(ch.Modules, k)
		}
	}
	clear(keys)
	if old != nil {
		for k := range old.Maintenance {
			keys[k] = true
		}
	}
	if new != nil {
		for k := range new.Maintenance {
			keys[k] = true
		}
	}
	for k := range keys {
		if old.Unmanaged(k) != new.Unmanaged(k) {
			ch.Maintenance = append(ch.Maintenance, k)
		}
	}
	sort.Strings(ch.Enabled)
	sort.Strings(ch.Modules)
	sort.Strings(ch.Maintenance)
	return ch
}

// sameValues compares sections as hooks see them, in JSON: 1.0 and 1 are
// the same number.
func sameValues(a, b map[string]any) bool {
	a, b = nonNil(a), nonNil(b)
	if reflect.DeepEqual(a, b) {
		return true
	}
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

func nonNil(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

type keyKind int

const (
	keyModule keyKind = iota
	keyGlobal
	keyEnabled
	keyMaintenance
)

// classify tells what a config key is and returns the module key it is
// about.
func classify(k string) (keyKind, string) {
	switch {
	case k == GlobalKey:
		return keyGlobal, GlobalKey
	case len(k) > len(EnabledSuffix) && strings.HasSuffix(k, EnabledSuffix):
		return keyEnabled, strings.TrimSuffix(k, EnabledSuffix)
	case len(k) > len(MaintenanceSuffix) && strings.HasSuffix(k, MaintenanceSuffix):
		return keyMaintenance, strings.TrimSuffix(k, MaintenanceSuffix)
	}
	return keyModule, k
}

func sectionSource(source, key string) string {
	if source == "" {
		return "key " + key
	}
	return source + " key " + key
}

// Equal reports whether two configs hold the same values and flags.
func Equal(a, b *Config) bool { return Diff(a, b).Empty() }

// Encode writes a config in the ConfigMap's data shape: sections as YAML
// text, flags as "true"/"false", keys sorted.
func Encode(c *Config) ([]byte, error) {
	var b bytes.Buffer
	err := encodeTo(&b, nil, c)
	return b.Bytes(), err
}

// parseMaintenance reads a `<key>Maintenance` value as addon-operator does:
// NoResourceReconciliation (or all lower case) is true, "" (or null) false.
func parseMaintenance(v any) (bool, error) {
	switch v := v.(type) {
	case nil:
		return false, nil
	case string:
		switch v {
		case NoResourceReconciliation, "noresourcereconciliation":
			return true, nil
		case "":
			return false, nil
		}
		return false, fmt.Errorf("a module's maintenance state can only take 'NoResourceReconciliation', 'noresourcereconciliation' or '' values, got %q", document.Clip(v, 40))
	}
	return false, fmt.Errorf("a module's maintenance state can only take 'NoResourceReconciliation', 'noresourcereconciliation' or '' values, got %s", document.Describe(v))
}

func maintenanceText(unmanaged bool) string {
	if unmanaged {
		return NoResourceReconciliation
	}
	return ""
}
