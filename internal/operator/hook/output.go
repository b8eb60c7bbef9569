package hook

// A PatchOperation is one RFC 6902 operation of a values patch.
type PatchOperation struct {
	Op    string // add, remove, replace, move, copy, test
	Path  string // a JSON pointer
	From  string // for move and copy
	Value any    // a value tree (package document's types); nil for remove
	// Line is the line of the patch file the operation starts on.
	Line int
}

// Map returns the operation as the map package values' NewJSONPatch
// takes.
func (o PatchOperation) Map() map[string]any {
	m := map[string]any{"op": o.Op, "path": o.Path}
	switch o.Op {
	case "move", "copy":
		m["from"] = o.From
	case "remove":
	default:
		m["value"] = o.Value
	}
	return m
}

// A Patch is the operations of a values patch file, in the order written.
type Patch []PatchOperation

// Maps returns the operations as ParsePatch's callers hand them to
// values.NewJSONPatch.
func (p Patch) Maps() []any {
	out := make([]any, len(p))
	for i, o := range p {
		out[i] = o.Map()
	}
	return out
}

// ParsePatch reads a values patch file: a JSON list of operations, or a
// stream of such lists and single operations, as addon-operator reads
// $VALUES_JSON_PATCH_PATH. source names the file in errors, which carry
// its line.
func ParsePatch(data []byte, source string) (Patch, error) {
	return parsePatch(data, source)
}

// MetricAction is what a metric operation does.
type MetricAction string

// The metric actions.
const (
	MetricAdd     MetricAction = "add"     // add to a counter
	MetricSet     MetricAction = "set"     // set a gauge
	MetricObserve MetricAction = "observe" // observe a histogram
	MetricExpire  MetricAction = "expire"  // drop every series of a group
)

// A MetricOperation is one line of a hook's $METRICS_PATH file.
type MetricOperation struct {
	Name    string
	Action  MetricAction
	Value   float64 // for add, set and observe
	Buckets []float64
	Labels  map[string]string
	Group   string // "" when the operation is not grouped
	Line    int    // the line of the metrics file
}

// ParseMetrics reads a metrics file: JSON objects one after another
// (usually one a line), with addon-operator's shortcuts ("add": N and
// "set": N). Every operation is checked; source names the file in errors.
func ParseMetrics(data []byte, source string) ([]MetricOperation, error) {
	return parseMetrics(data, source)
}

// KubeOperationType is the operation of a kubernetes patch.
type KubeOperationType string

// The kubernetes patch operations of shell-operator.
const (
	KubeCreate             KubeOperationType = "Create"
	KubeCreateOrUpdate     KubeOperationType = "CreateOrUpdate"
	KubeCreateIfNotExists  KubeOperationType = "CreateIfNotExists"
	KubeDelete             KubeOperationType = "Delete"
	KubeDeleteInBackground KubeOperationType = "DeleteInBackground"
	KubeDeleteNonCascading KubeOperationType = "DeleteNonCascading"
	KubeJQPatch            KubeOperationType = "JQPatch"
	KubeMergePatch         KubeOperationType = "MergePatch"
	KubeJSONPatch          KubeOperationType = "JSONPatch"
)

// A KubeOperation is one operation of a hook's $KUBERNETES_PATCH_PATH
// file. It is parsed and checked here; applying it is the cluster
// backend's work.
type KubeOperation struct {
	Operation   KubeOperationType
	APIVersion  string
	Kind        string
	Namespace   string
	Name        string
	Subresource string
	// Object is the object to create (Create*), a value tree.
	Object map[string]any
	// JQFilter is the program of a JQPatch.
	JQFilter string
	// MergePatch is the patch of a MergePatch, a value tree.
	MergePatch map[string]any
	// JSONPatch is the patch of a JSONPatch.
	JSONPatch Patch

	IgnoreMissingObject bool
	IgnoreHookError     bool
	// Line is the line of the file the operation starts on.
	Line int
}

// ParseKubernetesPatch reads a kubernetes patch file: a JSON stream or a
// YAML stream of operations. Every operation is checked against
// shell-operator's rules; source names the file in errors.
func ParseKubernetesPatch(data []byte, source string) ([]KubeOperation, error) {
	return parseKubernetesPatch(data, source)
}
