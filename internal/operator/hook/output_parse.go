package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/manifest"
)

// Limits of output files beyond their size (Runner.MaxOutputBytes).
const (
	maxPatchOps = 100_000
	// maxPatchNodes bounds the maps, lists and values of all the
	// operations of a patch together: counted while each operation is
	// built, so a patch costs memory in proportion to it, whatever its
	// bytes (a few hundred MB at most of the operator's 512Mi).
	maxPatchNodes = 1 << 20
	maxMetricOps  = 100_000
	maxKubeOps    = 10_000
	maxLabels     = 64
	maxBuckets    = 1000
	maxLabelBytes = 4096
)

// An OutputError is a bad output file of a hook: its name, the line and
// what was wrong.
type OutputError struct {
	File string // the file's role: "values patch ($VALUES_JSON_PATCH_PATH)"
	Line int
	Msg  string
}

func (e *OutputError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s line %d: %s", e.File, e.Line, e.Msg)
	}
	return e.File + ": " + e.Msg
}

func outErr(source string, line int, format string, args ...any) error {
	return &OutputError{File: source, Line: line, Msg: fmt.Sprintf(format, args...)}
}

// loadErr turns a document error into an OutputError.
func loadErr(source string, err error) error {
	var le *document.LoadError
	if errors.As(err, &le) {
		return &OutputError{File: source, Line: le.Line, Msg: le.Msg}
	}
	return &OutputError{File: source, Msg: err.Error()}
}

func blank(data []byte) bool { return len(bytes.TrimSpace(data)) == 0 }

// tooManyOps is the error for a patch of more than maxPatchOps
// operations.
func tooManyOps(source string, line int) error {
	return outErr(source, line, "more than %d operations, the limit of a patch: write fewer operations (one add of a whole map rather than one per key)", maxPatchOps)
}

func parsePatch(data []byte, source string) (Patch, error) {
	if blank(data) {
		return nil, nil
	}
	text := bytes.TrimLeft(bytes.TrimPrefix(data, []byte("\ufeff")), " \t\r\n")
	if text[0] == '[' || text[0] == '{' {
		if n, line := countOps(data, maxPatchOps); n > maxPatchOps {
			return nil, tooManyOps(source, line)
		}
		p, err := parsePatchJSON(data, source)
		var se *patchSyntaxError
		if !errors.As(err, &se) {
			return p, err
		}
		// Not JSON: YAML, which the checks below bound before the YAML
		// library builds anything; or neither, and the YAML error is
		// as good as JSON's.
	}
	docs, err := manifest.Parse(data, source, manifest.Limits{MaxBytes: math.MaxInt64, MaxDocuments: maxPatchOps, MaxNodes: maxPatchNodes})
	if err != nil {
		return nil, loadErr(source, err)
	}
	var p Patch
	for _, d := range docs {
		switch v := d.Value.(type) {
		case []any:
			for i, item := range v {
				line, _ := d.Pos.Item(i).At()
				op, err := patchOp(item, d.Pos.Item(i), line, source)
				if err != nil {
					return nil, err
				}
				p = append(p, op)
			}
		case map[string]any:
			line, _ := d.Pos.At()
			op, err := patchOp(v, d.Pos, line, source)
			if err != nil {
				return nil, err
			}
			p = append(p, op)
		default:
			return nil, outErr(source, d.Line, "found %s; write a JSON list of operations such as [{\"op\":\"add\",\"path\":\"/x/y\",\"value\":1}]", document.Describe(d.Value))
		}
		if len(p) > maxPatchOps {
			return nil, tooManyOps(source, d.Line)
		}
	}
	return p, nil
}

// patchSyntaxError is a patch that is not JSON.
type patchSyntaxError struct{ err error }

func (e *patchSyntaxError) Error() string { return e.err.Error() }

// parsePatchJSON reads a JSON stream of operations and lists of them (as
// addon-operator reads a values patch) one operation at a time: the count
// of operations and the nodes of their values are checked as each is
// built, so a patch over a limit is refused having cost no more than the
// limit, never the tree of the whole file. An input that is not JSON is a
// *patchSyntaxError.
func parsePatchJSON(data []byte, source string) (Patch, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var (
		p     Patch
		nodes int
		line  = 1
		off   int // bytes counted into line
	)
	lineOf := func(at int) int {
		at = min(at, len(data))
		if at > off {
			line += bytes.Count(data[off:at], []byte{'\n'})
			off = at
		}
		return line
	}
	// next skips the white space and commas before the next value.
	next := func() int {
		i := int(dec.InputOffset())
		for i < len(data) && strings.IndexByte(" \t\r\n,", data[i]) >= 0 {
			i++
		}
		return i
	}
	one := func() error {
		start := next()
		at := lineOf(start)
		if len(p) >= maxPatchOps {
			return tooManyOps(source, at)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return &patchSyntaxError{err}
		}
		tooLarge := outErr(source, at, "the operations' values hold more than %d maps, lists and values together, the limit of a patch: patch smaller values", maxPatchNodes)
		if nodes >= maxPatchNodes {
			return tooLarge
		}
		lim := document.Limits{MaxNodes: maxPatchNodes - nodes}
		v, pos, err := document.Loader{JSON: true, Positions: true, FirstLine: at, Limits: lim}.ParseAny(raw, source)
		if err != nil {
			if errors.Is(err, document.ErrTooLarge) {
				return tooLarge
			}
			return loadErr(source, err)
		}
		nodes += countNodes(v)
		op, err := patchOp(v, pos, at, source)
		if err != nil {
			return err
		}
		p = append(p, op)
		return nil
	}
	for {
		start := next()
		if start >= len(data) {
			return p, nil
		}
		switch data[start] {
		case '{':
			if err := one(); err != nil {
				return nil, err
			}
		case '[':
			if _, err := dec.Token(); err != nil {
				return nil, &patchSyntaxError{err}
			}
			for dec.More() {
				if err := one(); err != nil {
					return nil, err
				}
			}
			if _, err := dec.Token(); err != nil {
				return nil, &patchSyntaxError{err}
			}
		default:
			var v any
			if err := dec.Decode(&v); err != nil {
				return nil, &patchSyntaxError{err}
			}
			return nil, outErr(source, lineOf(start), "found %s; write a JSON list of operations such as [{\"op\":\"add\",\"path\":\"/x/y\",\"value\":1}]", document.Describe(v))
		}
	}
}

// countOps counts the operations of a JSON patch stream as written — the
// objects at its top level and in its top-level lists — reading the text
// once and building nothing, up to limit+1; and the line where the count
// passed limit. Brackets in strings do not count.
func countOps(data []byte, limit int) (n, line int) {
	depth, line := 0, 1
	inString, escaped := false, false
	topList := false // the top-level container open is a list
	for _, c := range data {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{':
			if depth == 0 || depth == 1 && topList {
				if n++; n > limit {
					return n, line
				}
			}
			if depth == 0 {
				topList = false
			}
			depth++
		case c == '[':
			if depth == 0 {
				topList = true
			}
			depth++
		case c == '}' || c == ']':
			depth = max(depth-1, 0)
		}
		if c == '\n' {
			line++
		}
	}
	return n, line
}

// countNodes counts the maps, lists and values of a tree.
func countNodes(v any) int {
	n := 1
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			n += countNodes(e)
		}
	case []any:
		for _, e := range v {
			n += countNodes(e)
		}
	}
	return n
}

var patchMembers = map[string][]string{ // op -> members besides op
	"add":     {"path", "value"},
	"remove":  {"path"},
	"replace": {"path", "value"},
	"move":    {"from", "path"},
	"copy":    {"from", "path"},
	"test":    {"path", "value"},
}

func patchOp(v any, pos *document.Pos, line int, source string) (PatchOperation, error) {
	op := PatchOperation{Line: line}
	m, ok := v.(map[string]any)
	if !ok {
		return op, outErr(source, line, "an operation is a map such as {\"op\":\"add\",\"path\":\"/x/y\",\"value\":1}, not %s", document.Describe(v))
	}
	name, _ := m["op"].(string)
	need, ok := patchMembers[name]
	if !ok {
		return op, outErr(source, line, "op %s is not one of add, remove, replace, move, copy, test", describeValue(m["op"]))
	}
	op.Op = name
	// Members the operation does not use ("value" on a remove, "from" on
	// an add, anything else) are ignored, as RFC 6902 section 4 says and
	// addon-operator does.
	for _, k := range need {
		v, ok := m[k]
		if !ok {
			return op, outErr(source, line, "%s needs %q", name, k)
		}
		switch k {
		case "value":
			op.Value = v
		case "path", "from":
			s, ok := v.(string)
			if !ok || !strings.HasPrefix(s, "/") {
				return op, outErr(source, lineOr(pos.Key(k), line), "%q must be a JSON pointer starting with /, such as \"/%s/key\", not %s", k, "moduleKey", describeValue(v))
			}
			if k == "path" {
				op.Path = s
			} else {
				op.From = s
			}
		}
	}
	return op, nil
}

func lineOr(p *document.Pos, def int) int {
	if l, _ := p.At(); l > 0 {
		return l
	}
	return def
}

var (
	metricNameRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelNameRE  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// metricLine is one line of a metrics file as written.
type metricLine struct {
	Name    *string           `json:"name"`
	Action  *string           `json:"action"`
	Value   *float64          `json:"value"`
	Add     *float64          `json:"add"`
	Set     *float64          `json:"set"`
	Buckets []float64         `json:"buckets"`
	Labels  map[string]string `json:"labels"`
	Group   *string           `json:"group"`
}

func parseMetrics(data []byte, source string) ([]MetricOperation, error) {
	if blank(data) {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var ops []MetricOperation
	for {
		// The line of the object: after the white space before it.
		start := dec.InputOffset()
		for start < int64(len(data)) && strings.IndexByte(" \t\r\n", data[start]) >= 0 {
			start++
		}
		line := lineAt(data, start)
		var ml metricLine
		err := dec.Decode(&ml)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) && strings.HasPrefix(te.Field, "labels") {
				return nil, outErr(source, line, "label values are strings, not a JSON %s; quote it", te.Value)
			}
			return nil, outErr(source, line, "%s; each line is a JSON object such as {\"name\":\"my_metric\",\"action\":\"set\",\"value\":1}", metricJSONErr(err))
		}
		if len(ops) >= maxMetricOps {
			return nil, outErr(source, line, "more than %d metric operations", maxMetricOps)
		}
		op, err := metricOp(ml)
		if err != nil {
			return nil, outErr(source, line, "%v", err)
		}
		op.Line = line
		ops = append(ops, op)
	}
	return ops, nil
}

func metricJSONErr(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return "found a JSON " + te.Value
		}
		return fmt.Sprintf("%s must not be a JSON %s", te.Field, te.Value)
	}
	return err.Error()
}

func metricOp(ml metricLine) (MetricOperation, error) {
	var op MetricOperation
	if ml.Name != nil {
		op.Name = *ml.Name
	}
	if ml.Group != nil {
		op.Group = *ml.Group
	}
	action := ""
	if ml.Action != nil {
		action = *ml.Action
	}
	switch {
	case ml.Add != nil && ml.Set != nil:
		return op, errors.New(`"add" and "set" exclude each other; write one operation per line`)
	case ml.Add != nil || ml.Set != nil:
		if action != "" || ml.Value != nil {
			return op, errors.New(`the shortcut "add": N or "set": N replaces "action" and "value"; write one form`)
		}
		if ml.Add != nil {
			action, ml.Value = "add", ml.Add
		} else {
			action, ml.Value = "set", ml.Set
		}
	}
	op.Action = MetricAction(action)
	switch op.Action {
	case MetricAdd, MetricSet, MetricObserve:
		if op.Name == "" {
			return op, fmt.Errorf(`action %q needs "name"`, action)
		}
		if ml.Value == nil {
			return op, fmt.Errorf(`action %q needs "value"`, action)
		}
		op.Value = *ml.Value
	case MetricExpire:
		if op.Group == "" {
			return op, errors.New(`action "expire" needs "group": the group whose metrics to drop`)
		}
		if ml.Value != nil || len(ml.Labels) > 0 || len(ml.Buckets) > 0 {
			return op, errors.New(`action "expire" takes only "group" (and "name")`)
		}
		return op, nil
	case "":
		return op, errors.New(`no "action"; write "action": "add", "set", "observe" or "expire" (or the shortcut "add": N / "set": N)`)
	default:
		return op, fmt.Errorf(`action %q is not add, set, observe or expire`, action)
	}
	if !metricNameRE.MatchString(op.Name) || len(op.Name) > maxLabelBytes {
		return op, fmt.Errorf("metric name %q is not a Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)", document.Clip(op.Name, 80))
	}
	if op.Action == MetricAdd && op.Value < 0 {
		return op, fmt.Errorf("add %v: a counter only goes up; use action \"set\" for a gauge", op.Value)
	}
	if op.Action == MetricObserve {
		if op.Group != "" {
			return op, errors.New(`action "observe" is not supported in a group; drop "group" or use "set"`)
		}
		if len(ml.Buckets) == 0 {
			return op, errors.New(`action "observe" needs "buckets", such as [1,2,5,10]`)
		}
		if len(ml.Buckets) > maxBuckets {
			return op, fmt.Errorf("more than %d buckets", maxBuckets)
		}
		for i := 1; i < len(ml.Buckets); i++ {
			if ml.Buckets[i] <= ml.Buckets[i-1] {
				return op, fmt.Errorf("buckets must increase: %v after %v", ml.Buckets[i], ml.Buckets[i-1])
			}
		}
		op.Buckets = ml.Buckets
	} else if len(ml.Buckets) > 0 {
		return op, fmt.Errorf(`"buckets" belongs to action "observe" only`)
	}
	if len(ml.Labels) > maxLabels {
		return op, fmt.Errorf("more than %d labels", maxLabels)
	}
	for k, v := range ml.Labels {
		switch {
		case !labelNameRE.MatchString(k) || strings.HasPrefix(k, "__") || len(k) > maxLabelBytes:
			return op, fmt.Errorf("label name %q is not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*, no leading __)", document.Clip(k, 80))
		case k == "hook":
			return op, errors.New(`the label "hook" is added by the operator (the hook's name); rename yours`)
		case len(v) > maxLabelBytes:
			return op, fmt.Errorf("label %s's value is longer than %d bytes", k, maxLabelBytes)
		}
	}
	op.Labels = ml.Labels
	return op, nil
}

var kubeMembers = map[KubeOperationType][]string{
	KubeCreate:             {"object"},
	KubeCreateOrUpdate:     {"object"},
	KubeCreateIfNotExists:  {"object"},
	KubeDelete:             {"kind", "name"},
	KubeDeleteInBackground: {"kind", "name"},
	KubeDeleteNonCascading: {"kind", "name"},
	KubeJQPatch:            {"kind", "name", "jqFilter"},
	KubeMergePatch:         {"kind", "name", "mergePatch"},
	KubeJSONPatch:          {"kind", "name", "jsonPatch"},
}

// kubeOptional are the members an operation may have. shell-operator's
// Go hooks marshal ignoreMissingObject and ignoreHookError into every
// operation, so Create* and Delete* take them too (Delete* always ignore
// a missing object; the flags change nothing there).
var kubeOptional = map[KubeOperationType][]string{
	KubeCreate:             {"namespace", "subresource", "ignoreMissingObject", "ignoreHookError"},
	KubeCreateOrUpdate:     {"namespace", "subresource", "ignoreMissingObject", "ignoreHookError"},
	KubeCreateIfNotExists:  {"namespace", "subresource", "ignoreMissingObject", "ignoreHookError"},
	KubeDelete:             {"apiVersion", "namespace", "subresource", "ignoreMissingObject", "ignoreHookError"},
	KubeDeleteInBackground: {"apiVersion", "namespace", "subresource", "ignoreMissingObject", "ignoreHookError"},
	KubeDeleteNonCascading: {"apiVersion", "namespace", "subresource", "ignoreMissingObject", "ignoreHookError"},
	KubeJQPatch:            {"apiVersion", "namespace", "subresource", "ignoreMissingObject", "ignoreHookError"},
	KubeMergePatch:         {"apiVersion", "namespace", "subresource", "ignoreMissingObject", "ignoreHookError"},
	KubeJSONPatch:          {"apiVersion", "namespace", "subresource", "ignoreMissingObject", "ignoreHookError"},
}

func parseKubernetesPatch(data []byte, source string) ([]KubeOperation, error) {
	if blank(data) {
		return nil, nil
	}
	docs, err := manifest.Parse(data, source, manifest.Limits{MaxDocuments: maxKubeOps})
	if err != nil {
		return nil, loadErr(source, err)
	}
	ops := make([]KubeOperation, 0, len(docs))
	for _, d := range docs {
		op, err := kubeOp(d, source)
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
	}
	return ops, nil
}

func kubeOp(d manifest.Document, source string) (KubeOperation, error) {
	op := KubeOperation{Line: d.Line}
	m, ok := d.Value.(map[string]any)
	if !ok {
		return op, outErr(source, d.Line, "an operation is a map such as {\"operation\":\"Delete\",\"kind\":\"Pod\",\"name\":\"x\"}, not %s", document.Describe(d.Value))
	}
	name, _ := m["operation"].(string)
	t := KubeOperationType(name)
	need, ok := kubeMembers[t]
	if !ok {
		return op, outErr(source, d.Line, "operation %s is not one of Create, CreateOrUpdate, CreateIfNotExists, Delete, DeleteInBackground, DeleteNonCascading, JQPatch, MergePatch, JSONPatch", describeValue(m["operation"]))
	}
	op.Operation = t
	for _, k := range keys(m) {
		if k != "operation" && !slices.Contains(need, k) && !slices.Contains(kubeOptional[t], k) {
			return op, outErr(source, lineOr(d.Pos.Key(k), d.Line), "%s takes no %q; it takes %s", name, k, strings.Join(append(slices.Clone(need), kubeOptional[t]...), ", "))
		}
	}
	for _, k := range need {
		if _, ok := m[k]; !ok {
			return op, outErr(source, d.Line, "%s needs %q", name, k)
		}
	}
	str := func(k string) (string, error) {
		v, ok := m[k]
		if !ok {
			return "", nil
		}
		s, ok := v.(string)
		if !ok {
			return "", outErr(source, lineOr(d.Pos.Key(k), d.Line), "%q must be a string, not %s", k, describeValue(v))
		}
		return s, nil
	}
	flag := func(k string) (bool, error) {
		v, ok := m[k]
		if !ok {
			return false, nil
		}
		b, ok := v.(bool)
		if !ok {
			return false, outErr(source, lineOr(d.Pos.Key(k), d.Line), "%q must be true or false, not %s", k, describeValue(v))
		}
		return b, nil
	}
	var err error
	for _, f := range []struct {
		k string
		p *string
	}{{"apiVersion", &op.APIVersion}, {"kind", &op.Kind}, {"namespace", &op.Namespace}, {"name", &op.Name}, {"subresource", &op.Subresource}, {"jqFilter", &op.JQFilter}} {
		if *f.p, err = str(f.k); err != nil {
			return op, err
		}
	}
	if op.IgnoreMissingObject, err = flag("ignoreMissingObject"); err != nil {
		return op, err
	}
	if op.IgnoreHookError, err = flag("ignoreHookError"); err != nil {
		return op, err
	}
	if slices.Contains(need, "kind") && (op.Kind == "" || op.Name == "") {
		return op, outErr(source, d.Line, "%s needs a non-empty kind and name", name)
	}
	if err := checkAPIVersion(op.APIVersion); err != nil {
		return op, outErr(source, lineOr(d.Pos.Key("apiVersion"), d.Line), "%v", err)
	}
	// An embedded document may be given as text, as shell-operator allows.
	embedded := func(k string) (any, *document.Pos, int, error) {
		v := m[k]
		line := lineOr(d.Pos.Key(k), d.Line)
		if s, ok := v.(string); ok {
			t, pos, err := document.Loader{Positions: true}.ParseAny([]byte(s), source+" "+k)
			if err != nil {
				return nil, nil, line, outErr(source, line, "%s is a string that does not parse as YAML or JSON: %v", k, err)
			}
			return t, pos, line, nil
		}
		return v, d.Pos.Key(k), line, nil
	}
	switch t {
	case KubeCreate, KubeCreateOrUpdate, KubeCreateIfNotExists:
		v, _, line, err := embedded("object")
		if err != nil {
			return op, err
		}
		obj, ok := v.(map[string]any)
		if !ok || len(obj) == 0 {
			return op, outErr(source, line, "object must be a Kubernetes object (a map with apiVersion, kind and metadata), not %s", document.Describe(v))
		}
		for _, f := range []string{"apiVersion", "kind"} {
			if s, _ := obj[f].(string); s == "" {
				return op, outErr(source, line, "object has no %s", f)
			}
		}
		meta, _ := obj["metadata"].(map[string]any)
		if n, _ := meta["name"].(string); n == "" {
			if g, _ := meta["generateName"].(string); g == "" {
				return op, outErr(source, line, "object has no metadata.name")
			}
		}
		// shell-operator accepts a namespace beside the object (and
		// ignores it); here it fills in an object without one, and must
		// not contradict one.
		if op.Namespace != "" {
			switch ns, _ := meta["namespace"].(string); {
			case ns == "":
				meta = maps.Clone(meta)
				meta["namespace"] = op.Namespace
				obj = maps.Clone(obj)
				obj["metadata"] = meta
			case ns != op.Namespace:
				return op, outErr(source, lineOr(d.Pos.Key("namespace"), d.Line), "namespace %q differs from the object's metadata.namespace %q; drop one", op.Namespace, ns)
			}
			op.Namespace = ""
		}
		op.Object = obj
	case KubeJQPatch:
		if _, err := compileJQ(op.JQFilter); err != nil || strings.TrimSpace(op.JQFilter) == "" {
			if err == nil {
				err = errors.New("jqFilter is empty")
			}
			return op, outErr(source, lineOr(d.Pos.Key("jqFilter"), d.Line), "%v", err)
		}
	case KubeMergePatch:
		v, _, line, err := embedded("mergePatch")
		if err != nil {
			return op, err
		}
		mp, ok := v.(map[string]any)
		if !ok || len(mp) == 0 {
			return op, outErr(source, line, "mergePatch must be a non-empty map, not %s", document.Describe(v))
		}
		op.MergePatch = mp
	case KubeJSONPatch:
		v, pos, line, err := embedded("jsonPatch")
		if err != nil {
			return op, err
		}
		l, ok := v.([]any)
		if !ok || len(l) == 0 {
			return op, outErr(source, line, "jsonPatch must be a non-empty list of operations, not %s", document.Describe(v))
		}
		for i, item := range l {
			po, err := patchOp(item, pos.Item(i), lineOr(pos.Item(i), line), source)
			if err != nil {
				return op, err
			}
			op.JSONPatch = append(op.JSONPatch, po)
		}
	}
	return op, nil
}
