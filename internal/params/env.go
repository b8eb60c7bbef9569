package params

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// ParametersVar is the environment variable that carries every parameter as
// JSON.
const ParametersVar = "ARGOCD_APP_PARAMETERS"

// paramPrefix starts the name of every per-parameter variable.
const paramPrefix = "PARAM_"

// Escape turns a parameter name into the part of an environment variable
// name after PARAM_: it uppercases the name and replaces every character
// outside [A-Z0-9_] with an underscore. "values-files" is VALUES_FILES.
//
// Uppercasing is Unicode's, as in Argo CD (Go's strings.ToUpper): "ı" and
// "ſ" become I and S; every other non-ASCII character, and each byte of
// invalid UTF-8, becomes one underscore.
func Escape(name string) string {
	var b strings.Builder
	b.Grow(len(name))
	for _, r := range name {
		r = unicode.ToUpper(r)
		if ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9') || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// Env returns the variables that pass params to a plugin's commands, as
// NAME=value strings sorted by name:
//
//   - ARGOCD_APP_PARAMETERS: params as a JSON list (see Parameter.MarshalJSON),
//     or null when there are none.
//   - For each parameter, in order: PARAM_<Escape(name)> for its string;
//     PARAM_<Escape(name_key)> for each entry of its map;
//     PARAM_<Escape(name_i)> for item i of its array (from 0). A parameter
//     with more than one field set gives the variables of each.
//
// As the proposal says, a variable whose name is in buildEnv (NAME=value
// strings: the ARGOCD_APP_*, ARGOCD_ENV_* and KUBE_* variables of the
// build environment) wins: Env leaves it out. When several parameter
// variables share a name, the later one wins: later in params; within one
// parameter, array after map after string, as in Argo CD; within one map, the key that
// sorts last (map keys have no order of their own).
//
// ARGOCD_APP_PARAMETERS is always returned, whatever buildEnv holds; put
// Env's result after the build environment. Values are passed as they are;
// a value holding a NUL byte (ParseParameters refuses those) cannot be
// passed to a process, and Linux refuses to start a process with a
// variable longer than 128 KiB (MAX_ARG_STRLEN): ARGOCD_APP_PARAMETERS can
// be that long.
func Env(params []Parameter, buildEnv []string) []string {
	taken := make(map[string]bool, len(buildEnv))
	for _, kv := range buildEnv {
		name, _, _ := strings.Cut(kv, "=")
		taken[name] = true
	}
	vars := map[string]string{ParametersVar: string(encodeParameters(params))}
	set := func(name, value string) {
		name = paramPrefix + Escape(name)
		if !taken[name] {
			vars[name] = value
		}
	}
	for _, p := range params {
		if p.String != nil {
			set(p.Name, *p.String)
		}
		// Argo CD's order: the map's entries, then the array's items.
		for _, k := range slices.Sorted(maps.Keys(p.Map)) {
			set(p.Name+"_"+k, p.Map[k])
		}
		for i, item := range p.Array {
			set(p.Name+"_"+strconv.Itoa(i), item)
		}
	}
	names := make([]string, 0, len(vars))
	for name := range vars {
		names = append(names, name)
	}
	slices.Sort(names)
	env := make([]string, len(names))
	for i, name := range names {
		env[i] = name + "=" + vars[name]
	}
	return env
}

// encodeParameters returns the JSON of ARGOCD_APP_PARAMETERS: null for no
// parameters, as in Argo CD.
func encodeParameters(params []Parameter) []byte {
	if len(params) == 0 {
		return []byte("null")
	}
	var b bytes.Buffer
	b.WriteByte('[')
	for i, p := range params {
		if i > 0 {
			b.WriteByte(',')
		}
		p.encode(&b)
	}
	b.WriteByte(']')
	return b.Bytes()
}

// MarshalJSON encodes p as ARGOCD_APP_PARAMETERS holds it:
// {"name": ..., "string": ..., "array": [...], "map": {...}}, leaving out
// the fields that are nil. It does not escape <, > and &, but json.Marshal
// does so again; use a json.Encoder with SetEscapeHTML(false) to keep them.
func (p Parameter) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	p.encode(&b)
	return b.Bytes(), nil
}

func (p Parameter) encode(b *bytes.Buffer) {
	b.WriteString(`{"name":`)
	writeJSON(b, p.Name)
	if p.String != nil {
		b.WriteString(`,"string":`)
		writeJSON(b, *p.String)
	}
	if p.Array != nil {
		b.WriteString(`,"array":`)
		writeJSON(b, p.Array)
	}
	if p.Map != nil {
		b.WriteString(`,"map":`)
		writeJSON(b, p.Map) // keys sorted by encoding/json
	}
	b.WriteByte('}')
}

// writeJSON appends the JSON of a string, a []string or a map[string]string,
// which cannot fail to encode.
func writeJSON(b *bytes.Buffer, v any) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	b.Truncate(b.Len() - 1) // the newline Encode adds
}
