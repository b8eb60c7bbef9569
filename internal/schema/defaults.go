package schema

import (
	"maps"
	"regexp"
	"slices"

	"github.com/strata-dev/strata/internal/values"
)

// A defaulter is the part of a schema defaulting needs: defaults, and the
// structure leading to them. Sub-schemas without defaults below them are
// left out (nil).
type defaulter struct {
	value    any  // the default, a tree value
	has      bool // whether the schema has a non-null default
	nullable bool // whether null is a valid value (nullable or type null)

	props    map[string]*defaulter // every declared property; nil entry: nothing to default
	patterns []patternDefaulter    // patternProperties with defaults below them
	addl     *defaulter            // additionalProperties, when a schema
	items    *defaulter

	// absentOnly is addon-operator's defaulting (Options.AddonDefaults):
	// only absent properties get defaults, never a null; patterns and addl
	// are not built.
	absentOnly bool
}

type patternDefaulter struct {
	re *regexp.Regexp
	d  *defaulter
}

// buildDefaulter returns the defaulter for a schema, or nil if nothing
// below it has a default. With absentOnly it is addon-operator's: through
// properties and items only, filling absent properties only.
func buildDefaulter(m obj, absentOnly bool) *defaulter {
	d := &defaulter{nullable: m["nullable"] == true || hasType(m, "null"), absentOnly: absentOnly}
	if v, ok := m["default"]; ok && v != nil {
		d.value, d.has = v, true
	}
	useful := d.has
	if props, ok := m["properties"].(obj); ok {
		d.props = make(map[string]*defaulter, len(props))
		for name, p := range props {
			ps, _ := p.(obj)
			d.props[name] = buildDefaulter(ps, absentOnly)
			useful = useful || d.props[name] != nil
		}
	}
	if pats, ok := m["patternProperties"].(obj); ok && !absentOnly {
		for _, pat := range slices.Sorted(maps.Keys(pats)) {
			ps, _ := pats[pat].(obj)
			re, err := regexp.Compile(pat)
			if pd := buildDefaulter(ps, absentOnly); pd != nil && err == nil {
				d.patterns = append(d.patterns, patternDefaulter{re: re, d: pd})
			}
		}
		useful = useful || len(d.patterns) > 0
	}
	if a, ok := m["additionalProperties"].(obj); ok && !absentOnly {
		d.addl = buildDefaulter(a, absentOnly)
		useful = useful || d.addl != nil
	}
	if it, ok := m["items"].(obj); ok {
		d.items = buildDefaulter(it, absentOnly)
		useful = useful || d.items != nil
	}
	if !useful {
		return nil
	}
	return d
}

// apply defaults the value v, which sits where d's schema applies, in place
// (v itself is never replaced), and returns it. It follows Kubernetes'
// structural defaulting: an absent property, or a null one that is not
// nullable, gets its default; then every property, additional property
// and list item is defaulted in turn, including the defaults just set.
func (d *defaulter) apply(v any) any {
	if d == nil {
		return v
	}
	switch x := v.(type) {
	case map[string]any:
		d.applyObject(x)
	case []any:
		for i := range x {
			x[i] = d.items.fill(x[i])
			d.items.apply(x[i])
		}
	}
	return v
}

func (d *defaulter) applyObject(x map[string]any) {
	for name, p := range d.props {
		if p == nil || !p.has {
			continue
		}
		if cur, found := x[name]; !found || (cur == nil && !p.nullable && !p.absentOnly) {
			x[name] = values.DeepCopy(p.value)
		}
	}
	for k, v := range x {
		if p, declared := d.props[k]; declared {
			p.apply(v)
			continue
		}
		for _, s := range d.undeclared(k) {
			v = s.fill(v)
			x[k] = v
			s.apply(v)
		}
	}
}

// undeclared returns the defaulters for a property that is not declared:
// those of the patternProperties it matches, else additionalProperties.
func (d *defaulter) undeclared(k string) []*defaulter {
	var out []*defaulter
	for _, pd := range d.patterns {
		if pd.re.MatchString(k) {
			out = append(out, pd.d)
		}
	}
	if out == nil && d.addl != nil {
		out = []*defaulter{d.addl}
	}
	return out
}

// fill returns the value to hold where cur is (nil for absent): a copy of
// the default when cur is null, the schema is not nullable and has a
// default; cur otherwise.
func (d *defaulter) fill(cur any) any {
	if d == nil || cur != nil || d.nullable || !d.has || d.absentOnly {
		return cur
	}
	return values.DeepCopy(d.value)
}
