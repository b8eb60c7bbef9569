package helmplugin

import (
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/params"
	"github.com/strata-dev/strata/internal/values"
)

// maxListedValuesFiles bounds the values files the values-files tooltip
// names.
const maxListedValuesFiles = 50

// announce builds the announcement: every parameter of specs, with its
// current value; flat is the helm-parameters map (see flatValues), which
// the announcement takes.
func (j *job) announce(flat map[string]string) ([]params.Announcement, error) {
	e := j.effective()
	s := j.s
	out := make([]params.Announcement, 0, len(specs))
	for _, sp := range specs {
		a := params.Announcement{Name: sp.name, Title: sp.title, Tooltip: sp.tooltip, ItemType: sp.item, CollectionType: sp.collection}
		switch sp.name {
		case ParamValuesFiles:
			a.Array = cloneList(s.valuesFiles)
			if found := j.valuesFileCandidates(); len(found) > 0 {
				a.Tooltip += " Values files in the chart's directory: " + strings.Join(found, ", ") + "."
			}
		case ParamValues:
			a.String = s.values
		case ParamHelmParameters:
			a.Map = flat
		case ParamHelmStringParameters:
			a.Map = cloneMap(s.setString)
		case ParamFileParameters:
			a.Map = cloneMap(s.setFile)
		case ParamReleaseName:
			a.String = e.releaseName
		case ParamNamespace:
			a.String = e.namespace
		case ParamKubeVersion:
			a.String = e.kubeVersion
		case ParamAPIVersions:
			a.Array = cloneList(e.apiVersions)
		case ParamSkipCRDs:
			a.String = strconv.FormatBool(s.skipCRDs)
		case ParamSkipTests:
			a.String = strconv.FormatBool(s.skipTests)
		case ParamSkipSchemaValidation:
			a.String = strconv.FormatBool(s.skipSchema)
		case ParamIgnoreMissingValueFiles:
			a.String = strconv.FormatBool(s.ignoreMissing)
		}
		out = append(out, a)
	}
	return out, nil
}

// flatValues lists the chart's values (values.yaml merged with the user's
// values, as Helm merges them) flattened to --set keys, each with its
// value as display prints it. Past Limits.MaxAnnouncedValues, the first
// keys in order are listed, and complete is false.
func (j *job) flatValues(vs *valueSet) (flat map[string]string, complete bool) {
	merged := loader.MergeMaps(vs.chart, vs.user)
	m := make(map[string]string, min(countLeaves(merged), 4*params.MaxItems))
	n := flatten(merged, "", true, m)
	if n <= j.lim.MaxAnnouncedValues {
		return m, true
	}
	j.p.log.Warn("the chart has more values than the announcement may list; the first ones in key order are listed",
		"app", j.req.AppName, "values", n, "listed", j.lim.MaxAnnouncedValues)
	leaves := values.Flatten(plain(merged).(map[string]any))
	m = make(map[string]string, j.lim.MaxAnnouncedValues)
	for _, l := range leaves[:j.lim.MaxAnnouncedValues] {
		m[l.Path.String()], _ = display(l.Value)
	}
	return m, false
}

// flatten adds the leaves of v under prefix (a path in --set notation,
// keys escaped as document.EscapeKey does) to m, and returns how many there
// are; it stops adding past len(m) of 4 × params.MaxItems. Empty maps and
// lists are leaves.
func flatten(v any, prefix string, top bool, m map[string]string) int {
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 0 && !top {
			break
		}
		n := 0
		for k, e := range v {
			key := document.EscapeKey(k)
			if !top {
				key = prefix + "." + key
			}
			n += flatten(e, key, false, m)
		}
		return n
	case common.Values:
		return flatten(map[string]any(v), prefix, top, m)
	case []any:
		if len(v) == 0 {
			break
		}
		n := 0
		for i, e := range v {
			n += flatten(e, prefix+"["+strconv.Itoa(i)+"]", false, m)
		}
		return n
	}
	if len(m) < 4*params.MaxItems {
		m[prefix], _ = display(v)
	}
	return 1
}

// countLeaves estimates how many entries flatten lists, to size the map.
func countLeaves(v any) int {
	switch v := v.(type) {
	case map[string]any:
		n := 0
		for _, e := range v {
			if m, ok := e.(map[string]any); ok && len(m) == 0 {
				n++
				continue
			}
			n += countLeaves(e)
		}
		return n
	case common.Values:
		return countLeaves(map[string]any(v))
	case []any:
		if len(v) == 0 {
			return 1
		}
		n := 0
		for _, e := range v {
			n += countLeaves(e)
		}
		return n
	}
	return 1
}

// valuesFileCandidates lists the files of the application's directory
// whose name holds "values" and ends in .yaml or .yml, as Argo CD offers
// them for a Helm source; symbolic links are not followed.
func (j *job) valuesFileCandidates() []string {
	var found []string
	seen := 0
	_ = filepath.WalkDir(j.req.AppPath, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if seen++; seen > j.lim.MaxChartFiles || len(found) >= maxListedValuesFiles {
			return filepath.SkipAll
		}
		if d.Type().IsRegular() && strings.Contains(d.Name(), "values") {
			if ext := filepath.Ext(d.Name()); ext == ".yaml" || ext == ".yml" {
				if rel, err := filepath.Rel(j.req.AppPath, p); err == nil {
					found = append(found, filepath.ToSlash(rel))
				}
			}
		}
		return nil
	})
	return found
}

// cloneList copies a list; an empty one is nil (not announced).
func cloneList(l []string) []string {
	if len(l) == 0 {
		return nil
	}
	return slices.Clone(l)
}

func cloneMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
