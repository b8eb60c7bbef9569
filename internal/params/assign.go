package params

import (
	"fmt"
	"strings"
)

// A Builder collects parameters written one assignment at a time, as a
// command line writes them: a string (name=value), array items
// (name=v1,v2) and map entries (name.key=value). Assignments naming the
// same parameter add to one Parameter, in the order the name first came.
// The zero value is ready to use.
type Builder struct {
	ps    []Parameter
	index map[string]int
}

// get returns the parameter called name, adding it when it is new.
func (b *Builder) get(name string) *Parameter {
	if i, ok := b.index[name]; ok {
		return &b.ps[i]
	}
	if b.index == nil {
		b.index = map[string]int{}
	}
	b.ps = append(b.ps, Parameter{Name: name})
	b.index[name] = len(b.ps) - 1
	return &b.ps[len(b.ps)-1]
}

// String sets a string parameter from name=value; a later assignment of
// the same name wins.
func (b *Builder) String(arg string) error {
	name, value, ok := strings.Cut(arg, "=")
	if !ok || name == "" {
		return fmt.Errorf("%q: write name=value", arg)
	}
	b.get(name).String = &value
	return nil
}

// Array appends the comma-separated items of name=v1,v2 to an array
// parameter.
func (b *Builder) Array(arg string) error {
	name, value, ok := strings.Cut(arg, "=")
	if !ok || name == "" {
		return fmt.Errorf("%q: write name=v1,v2", arg)
	}
	p := b.get(name)
	p.Array = append(p.Array, strings.Split(value, ",")...)
	return nil
}

// MapEntry sets one entry of a map parameter from name.key=value: the
// parameter's name ends at the first dot, the key at the first "=".
func (b *Builder) MapEntry(arg string) error {
	kv, value, ok := strings.Cut(arg, "=")
	name, key, ok2 := strings.Cut(kv, ".")
	if !ok || !ok2 || name == "" || key == "" {
		return fmt.Errorf("%q: write name.key=value", arg)
	}
	p := b.get(name)
	if p.Map == nil {
		p.Map = map[string]string{}
	}
	p.Map[key] = value
	return nil
}

// Parameters returns the parameters built so far.
func (b *Builder) Parameters() []Parameter { return b.ps }

// SetString sets a string parameter; a later call wins.
func (b *Builder) SetString(name, value string) { b.get(name).String = &value }

// AppendArray appends one item to an array parameter.
func (b *Builder) AppendArray(name, item string) {
	p := b.get(name)
	p.Array = append(p.Array, item)
}

// SetMapEntry sets one entry of a map parameter.
func (b *Builder) SetMapEntry(name, key, value string) {
	p := b.get(name)
	if p.Map == nil {
		p.Map = map[string]string{}
	}
	p.Map[key] = value
}

// Get returns the parameter name built so far, or nil.
func (b *Builder) Get(name string) *Parameter {
	if i, ok := b.index[name]; ok {
		return &b.ps[i]
	}
	return nil
}

// Add sets the parameters of ps in order, as if assigned one by one: a
// string replaces, array items append, map entries are set.
func (b *Builder) Add(ps ...Parameter) {
	for _, p := range ps {
		q := b.get(p.Name)
		if p.String != nil {
			s := *p.String
			q.String = &s
		}
		q.Array = append(q.Array, p.Array...)
		for k, v := range p.Map {
			if q.Map == nil {
				q.Map = map[string]string{}
			}
			q.Map[k] = v
		}
	}
}
