package helmplugin

import (
	"context"
	"errors"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/params"
	"github.com/strata-dev/strata/internal/values"
)

// ValueLayers returns the layers of values the chart of req gets, bottom
// first, for values.Merge to explain: the chart's values.yaml, the values
// files in order (patterns expanded and variables substituted, as the
// render reads them), the values parameter, then one layer per
// helm-parameters, helm-string-parameters and file-parameters entry, in the
// order the render applies them (entries that keep a key's value left out,
// as the render leaves them out). Each layer is named by the file (relative
// to the repository) or the parameter entry, with the lines of files.
//
// The render merges with Helm's own functions (userValues); the layers
// merge with strata's values engine, which gives the same values but for
// the cases docs/values.md lists (a null over a map in a values file).
// TestValueLayersMatchRender holds the two together.
func (p *Plugin) ValueLayers(ctx context.Context, req *params.Request) ([]*values.Layer, error) {
	j, err := p.newJob(req)
	if err != nil {
		return nil, err
	}
	defer j.close()
	text, err := j.chartValuesText()
	if err != nil {
		return nil, err
	}
	chartVals, err := j.parseChartValues(text)
	if err != nil {
		return nil, err
	}
	// The render's own reading: it checks every parameter and says which
	// helm-parameters entries keep their key's value.
	vs, err := j.userValues(chartVals)
	if err != nil {
		return nil, err
	}
	l := document.Loader{Positions: true}
	var layers []*values.Layer
	parse := func(data []byte, name string) (*values.Layer, error) {
		m, pos, err := l.Parse(data, name)
		if err != nil {
			return nil, err
		}
		return &values.Layer{Name: name, Source: name, Values: m, Pos: pos}, nil
	}
	if text != nil {
		layer, err := parse(text, path.Join(j.appRel, "values.yaml"))
		if err != nil {
			return nil, err
		}
		layers = append(layers, layer)
	}
	files, err := j.valuesFiles()
	if err != nil {
		return nil, err
	}
	for _, vf := range files {
		data, err := j.readFile(vf.rel)
		if errors.Is(err, errMissing) && j.s.ignoreMissing {
			continue
		}
		if err != nil {
			return nil, &paramError{name: ParamValuesFiles, field: vf.field, err: err}
		}
		layer, err := parse(data, vf.rel)
		if err != nil {
			return nil, &paramError{name: ParamValuesFiles, field: vf.field, err: err}
		}
		layers = append(layers, layer)
	}
	if j.s.hasValues && strings.TrimSpace(j.s.values) != "" {
		m, pos, err := l.Parse([]byte(j.s.values), "parameter "+ParamValues)
		if err != nil {
			return nil, &paramError{name: ParamValues, err: err}
		}
		layers = append(layers, &values.Layer{Name: "parameter " + ParamValues, Values: m, Pos: pos})
	}
	for _, k := range slices.Sorted(maps.Keys(j.s.set)) {
		if slices.Contains(vs.skipped, k) {
			continue
		}
		arg := k + "=" + escapeSetValue(expand(j.s.set[k], j.env))
		layers = append(layers, &values.Layer{Name: ParamHelmParameters + " " + k + "=" + j.s.set[k], Op: values.Assignment{Kind: values.SetValue, Arg: arg}})
	}
	for _, k := range slices.Sorted(maps.Keys(j.s.setString)) {
		arg := k + "=" + escapeSetValue(expand(j.s.setString[k], j.env))
		layers = append(layers, &values.Layer{Name: ParamHelmStringParameters + " " + k + "=" + j.s.setString[k], Op: values.Assignment{Kind: values.SetString, Arg: arg}})
	}
	for _, k := range slices.Sorted(maps.Keys(j.s.setFile)) {
		rel, err := j.resolve(expand(j.s.setFile[k], j.env))
		if err != nil {
			return nil, &paramError{name: ParamFileParameters, field: mapField(k), err: err}
		}
		data, err := j.readFile(rel)
		if err != nil {
			return nil, &paramError{name: ParamFileParameters, field: mapField(k), err: err}
		}
		read := func(string) ([]byte, error) { return data, nil }
		layers = append(layers, &values.Layer{Name: ParamFileParameters + " " + k + "=" + rel, Source: rel, Op: values.Assignment{Kind: values.SetFile, Arg: k + "=file", ReadFile: read}})
	}
	return layers, ctx.Err()
}

// ExplainValues explains the values the chart of req gets (ValueLayers,
// merged with provenance): for each leaf under path (nil: all), the layer
// that set it and the values it overrode.
func (p *Plugin) ExplainValues(ctx context.Context, req *params.Request, path document.Path) ([]values.Explanation, error) {
	layers, err := p.ValueLayers(ctx, req)
	if err != nil {
		return nil, err
	}
	res, err := values.Merge(layers, values.MergeOptions{Provenance: true})
	if err != nil {
		return nil, err
	}
	return res.Explain(path, values.ExplainOptions{})
}
