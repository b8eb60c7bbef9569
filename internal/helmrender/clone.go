package helmrender

import (
	"slices"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// CloneChart copies a chart and its subcharts completely: nothing of the
// copy (maps, slices, byte slices, pointers) is shared with the original,
// so whatever Helm or a template does to one leaves the other as it was.
// TestCloneChart checks every field of every type in the tree, and fails
// when a new Helm version adds one this function does not know.
func CloneChart(ch *chart.Chart) *chart.Chart {
	if ch == nil {
		return nil
	}
	out := &chart.Chart{
		Raw:           cloneFiles(ch.Raw),
		Metadata:      cloneMetadata(ch.Metadata),
		Lock:          cloneLock(ch.Lock),
		Templates:     cloneFiles(ch.Templates),
		Values:        CopyValues(ch.Values),
		Schema:        slices.Clone(ch.Schema),
		SchemaModTime: ch.SchemaModTime,
		Files:         cloneFiles(ch.Files),
		ModTime:       ch.ModTime,
	}
	deps := make([]*chart.Chart, 0, len(ch.Dependencies()))
	for _, d := range ch.Dependencies() {
		deps = append(deps, CloneChart(d))
	}
	out.SetDependencies(deps...) // sets each one's parent to out
	return out
}

func cloneFiles(fs []*common.File) []*common.File {
	if fs == nil {
		return nil
	}
	out := make([]*common.File, len(fs))
	for i, f := range fs {
		if f != nil {
			out[i] = &common.File{Name: f.Name, Data: slices.Clone(f.Data), ModTime: f.ModTime}
		}
	}
	return out
}

func cloneMetadata(m *chart.Metadata) *chart.Metadata {
	if m == nil {
		return nil
	}
	out := *m
	out.Sources = slices.Clone(m.Sources)
	out.Keywords = slices.Clone(m.Keywords)
	if m.Maintainers != nil {
		out.Maintainers = make([]*chart.Maintainer, len(m.Maintainers))
		for i, mt := range m.Maintainers {
			if mt != nil {
				c := *mt
				out.Maintainers[i] = &c
			}
		}
	}
	if m.Annotations != nil {
		out.Annotations = make(map[string]string, len(m.Annotations))
		for k, v := range m.Annotations {
			out.Annotations[k] = v
		}
	}
	out.Dependencies = cloneDependencies(m.Dependencies)
	return &out
}

func cloneLock(l *chart.Lock) *chart.Lock {
	if l == nil {
		return nil
	}
	out := *l
	out.Dependencies = cloneDependencies(l.Dependencies)
	return &out
}

func cloneDependencies(ds []*chart.Dependency) []*chart.Dependency {
	if ds == nil {
		return nil
	}
	out := make([]*chart.Dependency, len(ds))
	for i, d := range ds {
		if d != nil {
			c := *d
			c.Tags = slices.Clone(d.Tags)
			if d.ImportValues != nil {
				c.ImportValues = copyValue(d.ImportValues).([]any)
			}
			out[i] = &c
		}
	}
	return out
}

// CopyValues copies a value tree (see copyValue); nil stays nil.
func CopyValues(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	return copyValue(m).(map[string]any)
}

// copyValue copies a value tree, keeping the types: maps (Helm's
// common.Values too, which Helm's coalescing tells from plain maps) and
// lists are new; scalars are values. Anything else in a tree comes from
// YAML or JSON decoding and is a scalar.
func copyValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		if v == nil {
			return v
		}
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = copyValue(e)
		}
		return m
	case common.Values:
		if v == nil {
			return v
		}
		return common.Values(copyValue(map[string]any(v)).(map[string]any))
	case map[string]string:
		if v == nil {
			return v
		}
		m := make(map[string]string, len(v))
		for k, e := range v {
			m[k] = e
		}
		return m
	case []any:
		if v == nil {
			return v
		}
		l := make([]any, len(v))
		for i, e := range v {
			l[i] = copyValue(e)
		}
		return l
	case []string:
		return slices.Clone(v)
	case []byte:
		return slices.Clone(v)
	}
	return v
}
