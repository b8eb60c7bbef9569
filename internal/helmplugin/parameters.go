package helmplugin

import (
	"fmt"
	"slices"
	"strings"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/params"
)

// The parameters the plugin accepts, by name.
const (
	ParamValuesFiles             = "values-files"
	ParamValues                  = "values"
	ParamHelmParameters          = "helm-parameters"
	ParamHelmStringParameters    = "helm-string-parameters"
	ParamFileParameters          = "file-parameters"
	ParamReleaseName             = "release-name"
	ParamNamespace               = "namespace"
	ParamKubeVersion             = "kube-version"
	ParamAPIVersions             = "api-versions"
	ParamSkipCRDs                = "skip-crds"
	ParamSkipTests               = "skip-tests"
	ParamSkipSchemaValidation    = "skip-schema-validation"
	ParamIgnoreMissingValueFiles = "ignore-missing-value-files"
)

// A spec describes one accepted parameter: its announcement without a
// default value.
type spec struct {
	name, title, tooltip string
	collection           params.CollectionType
	item                 params.ItemType
}

// specs lists the parameters in the order they are announced.
var specs = []spec{
	{ParamValuesFiles, "Values files", "Values files to use, in order, later ones winning (helm template --values). Paths are relative to the chart's directory and may lead anywhere inside the repository, such as ../common/values.yaml.", params.CollectionArray, params.ItemString},
	{ParamValues, "Values", "Values as YAML, applied after the values files (like a last --values file).", params.CollectionString, params.ItemString},
	{ParamHelmParameters, "Helm parameters", "Values to set, as helm template --set key=value: a\\.b for a dot inside a key, key[0] for a list item. Listed with the chart's current values; an entry left at its current value changes nothing.", params.CollectionMap, params.ItemString},
	{ParamHelmStringParameters, "Helm string parameters", "Values to set as strings, as helm template --set-string key=value; applied after helm-parameters.", params.CollectionMap, params.ItemString},
	{ParamFileParameters, "File parameters", "Values to set to the content of a file in the repository, as helm template --set-file key=path; paths are relative to the chart's directory.", params.CollectionMap, params.ItemString},
	{ParamReleaseName, "Release name", "The Helm release name (.Release.Name). Defaults to the Application's name.", params.CollectionString, params.ItemString},
	{ParamNamespace, "Namespace", "The release namespace (.Release.Namespace). Defaults to the Application's destination namespace.", params.CollectionString, params.ItemString},
	{ParamKubeVersion, "Kubernetes version", "The Kubernetes version templates see in .Capabilities.KubeVersion (helm template --kube-version). Defaults to the destination cluster's.", params.CollectionString, params.ItemString},
	{ParamAPIVersions, "API versions", "API versions templates see in .Capabilities.APIVersions besides Helm's defaults (helm template --api-versions), such as monitoring.coreos.com/v1 or monitoring.coreos.com/v1/ServiceMonitor. Defaults to the destination cluster's.", params.CollectionArray, params.ItemString},
	{ParamSkipCRDs, "Skip CRDs", "Leave out the CustomResourceDefinitions of the charts' crds/ directories (helm template without --include-crds).", params.CollectionString, params.ItemBoolean},
	{ParamSkipTests, "Skip tests", "Leave out test hooks (helm template --skip-tests).", params.CollectionString, params.ItemBoolean},
	{ParamSkipSchemaValidation, "Skip schema validation", "Do not validate the values against the charts' values.schema.json (helm template --skip-schema-validation).", params.CollectionString, params.ItemBoolean},
	{ParamIgnoreMissingValueFiles, "Ignore missing values files", "Skip values files that do not exist instead of failing.", params.CollectionString, params.ItemBoolean},
}

func specFor(name string) (spec, bool) {
	for _, s := range specs {
		if s.name == name {
			return s, true
		}
	}
	return spec{}, false
}

// Settings are the parameters of one request, decoded; see decodeSettings.
type settings struct {
	valuesFiles []string
	values      string
	hasValues   bool

	set, setString, setFile map[string]string

	releaseName, namespace, kubeVersion string
	hasRelease, hasNamespace, hasKube   bool
	apiVersions                         []string
	hasAPIVersions                      bool

	skipCRDs, skipTests, skipSchema, ignoreMissing bool
}

// A paramError is a problem with one parameter.
type paramError struct {
	name  string // the parameter
	field string // e.g. `map["a.b"]`, "array[2]"; may be ""
	msg   string
	err   error // wrapped, may be nil
}

func (e *paramError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "parameter %q: ", e.name)
	if e.field != "" {
		b.WriteString(e.field)
		b.WriteString(": ")
	}
	b.WriteString(e.msg)
	if e.err != nil {
		if e.msg != "" {
			b.WriteString(": ")
		}
		b.WriteString(e.err.Error())
	}
	return b.String()
}

func (e *paramError) Unwrap() error { return e.err }

// decodeSettings reads the request's parameters. The field a parameter's
// collection type names is read; other fields set beside it are ignored,
// as the proposal says. A parameter that sets only another field is an
// error, as is a value that does not fit (a boolean that is not true or
// false), or one past the limits. Parameters nobody announced are returned
// as warnings, and otherwise ignored. A later parameter of the same name
// wins.
func decodeSettings(ps []params.Parameter, lim Limits) (*settings, []string, error) {
	s := &settings{}
	var warnings []string
	if len(ps) > lim.MaxParameters {
		return nil, nil, fmt.Errorf("%d parameters are set, more than the limit of %d", len(ps), lim.MaxParameters)
	}
	total := 0
	for _, p := range ps {
		sp, ok := specFor(p.Name)
		if !ok {
			warnings = append(warnings, fmt.Sprintf("parameter %q is not one the Helm plugin accepts%s; it is ignored", p.Name, suggestName(p.Name)))
			continue
		}
		fail := func(field, format string, args ...any) error {
			return &paramError{name: p.Name, field: field, msg: fmt.Sprintf(format, args...)}
		}
		switch sp.collection {
		case params.CollectionString:
			if p.String == nil {
				if p.Array != nil || p.Map != nil {
					return nil, nil, fail("", "it is a string parameter, but %s is set; set \"string\"", otherFields(p))
				}
				continue
			}
			total += len(*p.String)
		case params.CollectionArray:
			if p.Array == nil {
				if p.String != nil || p.Map != nil {
					return nil, nil, fail("", "it is an array parameter, but %s is set; set \"array\"", otherFields(p))
				}
				continue
			}
			if len(p.Array) > lim.MaxItems {
				return nil, nil, fail("array", "%d items, more than the limit of %d", len(p.Array), lim.MaxItems)
			}
			for _, v := range p.Array {
				total += len(v)
			}
		case params.CollectionMap:
			if p.Map == nil {
				if p.String != nil || p.Array != nil {
					return nil, nil, fail("", "it is a map parameter, but %s is set; set \"map\"", otherFields(p))
				}
				continue
			}
			if len(p.Map) > lim.MaxItems {
				return nil, nil, fail("map", "%d entries, more than the limit of %d", len(p.Map), lim.MaxItems)
			}
			for k, v := range p.Map {
				total += len(k) + len(v)
			}
		}
		if total > lim.MaxParameterBytes {
			return nil, nil, fail("", "the parameters hold more than %d bytes in all; keep large values in values files in the repository", lim.MaxParameterBytes)
		}
		switch p.Name {
		case ParamValuesFiles:
			s.valuesFiles = slices.Clone(p.Array)
			for i, f := range s.valuesFiles {
				if strings.TrimSpace(f) == "" {
					return nil, nil, fail(fmt.Sprintf("array[%d]", i), "empty path; remove the item or name a values file")
				}
			}
		case ParamValues:
			s.values, s.hasValues = *p.String, true
		case ParamHelmParameters:
			s.set = p.Map
		case ParamHelmStringParameters:
			s.setString = p.Map
		case ParamFileParameters:
			s.setFile = p.Map
		case ParamReleaseName:
			s.releaseName, s.hasRelease = strings.TrimSpace(*p.String), true
		case ParamNamespace:
			s.namespace, s.hasNamespace = strings.TrimSpace(*p.String), true
		case ParamKubeVersion:
			s.kubeVersion, s.hasKube = strings.TrimSpace(*p.String), true
		case ParamAPIVersions:
			s.apiVersions, s.hasAPIVersions = splitAPIVersions(p.Array), true
		default: // the booleans
			v, err := parseBool(*p.String)
			if err != nil {
				return nil, nil, fail("string", "%v", err)
			}
			switch p.Name {
			case ParamSkipCRDs:
				s.skipCRDs = v
			case ParamSkipTests:
				s.skipTests = v
			case ParamSkipSchemaValidation:
				s.skipSchema = v
			case ParamIgnoreMissingValueFiles:
				s.ignoreMissing = v
			}
		}
	}
	return s, warnings, nil
}

// splitAPIVersions splits entries on commas, as helm's --api-versions does,
// and drops empty ones.
func splitAPIVersions(in []string) []string {
	out := []string{}
	for _, e := range in {
		for v := range strings.SplitSeq(e, ",") {
			if v = strings.TrimSpace(v); v != "" {
				out = append(out, v)
			}
		}
	}
	return out
}

func parseBool(s string) (bool, error) {
	switch strings.TrimSpace(s) {
	case "true":
		return true, nil
	case "false", "":
		return false, nil
	}
	return false, fmt.Errorf("%q is not a boolean; write true or false", s)
}

func otherFields(p params.Parameter) string {
	var set []string
	if p.String != nil {
		set = append(set, `"string"`)
	}
	if p.Array != nil {
		set = append(set, `"array"`)
	}
	if p.Map != nil {
		set = append(set, `"map"`)
	}
	if len(set) == 1 {
		return "only " + set[0]
	}
	return strings.Join(set, " and ")
}

// suggestName proposes the accepted name closest to a misspelt one.
func suggestName(name string) string {
	norm := func(s string) string {
		return strings.NewReplacer("-", "", "_", "", ".", "", " ", "").Replace(strings.ToLower(s))
	}
	n := norm(name)
	best, bestD := "", 4
	for _, sp := range specs {
		m := norm(sp.name)
		if n == m || n == strings.TrimSuffix(m, "s") || n+"s" == m {
			return fmt.Sprintf(" (did you mean %q?)", sp.name)
		}
		if d := document.EditDistance(n, m); d < bestD {
			best, bestD = sp.name, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// userValues reports whether the parameters give Helm user values: values
// files, inline values or --set style parameters. Without them, the values
// are the chart's own.
func (s *settings) userValues() bool {
	return len(s.valuesFiles) > 0 || (s.hasValues && strings.TrimSpace(s.values) != "") ||
		len(s.set) > 0 || len(s.setString) > 0 || len(s.setFile) > 0
}
