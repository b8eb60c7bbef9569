package hook

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-dev/strata/internal/hookexec"
)

// Defaults of Runner's zero fields.
const (
	DefaultMaxConfigBytes = 1 << 20  // stdout of hook --config
	DefaultMaxOutputBytes = 32 << 20 // each output file
	DefaultMaxLogBytes    = 16 << 20 // stdout of a run (logs)
)

// A Runner runs hooks. Set its fields and call Config or Run; a Runner
// may be used by several goroutines at once. Close it when done: its runs
// share one private temporary directory (made on the first Run), which
// costs far less than a directory per run.
type Runner struct {
	// Env is the environment every hook gets (addon-operator passes its
	// own); the file variables are added to it. Nil is an empty one.
	Env []string
	// TempDir is where each run's workspace is made; "" is os.TempDir().
	TempDir string
	// Timeout bounds each run on top of the context's deadline; 0 is none.
	Timeout time.Duration
	// Grace is how long a stopped hook has between SIGTERM and SIGKILL; 0
	// is hookexec.DefaultGrace, negative SIGKILL at once.
	Grace time.Duration
	// MaxConfigBytes bounds the output of hook --config; 0 is
	// DefaultMaxConfigBytes.
	MaxConfigBytes int64
	// MaxOutputBytes bounds each output file (patches, metrics,
	// kubernetes patch); 0 is DefaultMaxOutputBytes.
	MaxOutputBytes int64
	// MaxLogBytes bounds what a run may write to stdout; a hook writing
	// more is stopped and fails. 0 is DefaultMaxLogBytes.
	MaxLogBytes int64
	// CheckPatch, when set, checks each values patch and config values
	// patch a run wrote (source names its file) before Run returns it:
	// an error fails the run. The operator sets the values store's scope
	// rule (store.CheckHookPatch); nil checks nothing.
	CheckPatch func(h *Hook, p Patch, source string) error

	mu   sync.Mutex
	ws   *hookexec.Workspace
	free []string // prefixes of input files kept for the next runs
	runs atomic.Uint64
}

// Close removes the runs' temporary directory. A Runner may run hooks
// again after Close (it makes a new directory).
func (r *Runner) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ws == nil {
		return nil
	}
	err := r.ws.Close()
	r.ws = nil
	r.free = nil
	return err
}

// Input is what one run of a hook gets.
type Input struct {
	// Version is the hook's configVersion, for the binding contexts'
	// shape; "" is "v1".
	Version string
	// Contexts are the binding contexts, written to $BINDING_CONTEXT_PATH.
	Contexts []BindingContext
	// Values is the JSON of the values the hook sees ({"global": ...,
	// "<moduleKey>": ...}), written to $VALUES_PATH; nil is {}.
	Values []byte
	// ConfigValues is the JSON of the config values, written to
	// $CONFIG_VALUES_PATH; nil is {}.
	ConfigValues []byte
}

// Output is what a successful run produced, every part parsed and
// checked.
type Output struct {
	// ValuesPatch is the $VALUES_JSON_PATCH_PATH patch, within the hook's
	// scope; empty when the hook wrote none.
	ValuesPatch Patch
	// ConfigValuesPatch is the $CONFIG_VALUES_JSON_PATCH_PATH patch,
	// within the hook's scope.
	ConfigValuesPatch Patch
	// Metrics are the operations of $METRICS_PATH.
	Metrics []MetricOperation
	// KubernetesPatch are the operations of $KUBERNETES_PATCH_PATH.
	KubernetesPatch []KubeOperation
	// Stdout and Stderr are what the hook printed, for the log.
	Stdout, Stderr []byte
	// Duration is how long the hook ran.
	Duration time.Duration
	// Usage is the CPU time and peak memory of the hook's process.
	Usage hookexec.Usage
	// Response is what a webhook run (contexts of type Validating or
	// Conversion) wrote to $VALIDATING_RESPONSE_PATH or
	// $CONVERSION_RESPONSE_PATH, unparsed; nil when it wrote nothing.
	Response []byte
}

// A FailedError is the error of a hook that ran and failed (exit status,
// timeout, signal). StatusPatches are the operations of its
// $KUBERNETES_PATCH_PATH to apply all the same (StatusPatchesOnError).
type FailedError struct {
	Err           error
	StatusPatches []KubeOperation
	// Usage is the CPU time and peak memory of the hook's process; nil
	// when it did not start.
	Usage *hookexec.Usage
}

func (e *FailedError) Error() string { return e.Err.Error() }
func (e *FailedError) Unwrap() error { return e.Err }

// StatusPatchesOnError returns the operations of ops that shell-operator
// applies although their hook failed: patches (JQPatch, MergePatch,
// JSONPatch) of the status subresource marked ignoreHookError.
func StatusPatchesOnError(ops []KubeOperation) []KubeOperation {
	var out []KubeOperation
	for _, op := range ops {
		switch op.Operation {
		case KubeJQPatch, KubeMergePatch, KubeJSONPatch:
			if op.IgnoreHookError && strings.Trim(op.Subresource, "/") == "status" {
				out = append(out, op)
			}
		}
	}
	return out
}

// Config runs `hook --config` and parses what it prints (ParseConfig).
func (r *Runner) Config(ctx context.Context, h *Hook) (*Config, error) {
	return r.config(ctx, h)
}

// Run runs hook h with in. The error is nil only when the hook exited 0
// and every output file it wrote is valid and in scope; otherwise no
// Output is returned, and the error names the hook, the file, the line
// and what was wrong (a hook that failed: its exit status and the end of
// its stderr).
func (r *Runner) Run(ctx context.Context, h *Hook, in Input) (*Output, error) {
	return r.run(ctx, h, in)
}
