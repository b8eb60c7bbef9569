package generator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/strata-dev/strata/internal/hookexec"
)

// A Backend answers a plugin's requests with parameter sets. An error is
// answered as an error, never as an empty list.
type Backend interface {
	GetParams(ctx context.Context, req Request) ([]map[string]any, error)
}

var (
	_ Backend = (*CommandBackend)(nil)
	_ Backend = (*StaticBackend)(nil)
)

// ErrBadOutput is wrapped by the errors of a backend whose output is not
// parameter sets.
var ErrBadOutput = errors.New("bad plugin output")

// baseEnv are the variables of the server's own environment a command
// gets without asking: enough to find interpreters and write temporary
// files, and none that could hold the plugin's token.
var baseEnv = []string{"PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR"}

// A CommandBackend runs a command per request: the request body, as JSON,
// on its stdin; parameter sets, as JSON, on its stdout. The command is an
// argv, never a shell string.
//
// The output is a JSON list of objects, one per parameter set, or the
// response shape {"output": {"parameters": [...]}} itself. Printing nothing
// is an error, not zero sets: a script that died quietly must not prune
// Applications; print [] for zero sets. A non-zero exit is an error
// carrying the end of stderr.
type CommandBackend struct {
	Argv []string
	Dir  string
	// Env are KEY=VALUE entries added to the command's environment, which
	// otherwise holds only PATH, HOME, LANG, LC_ALL, TZ, TMPDIR and the
	// variables named in PassEnv, from the server's own environment.
	Env     []string
	PassEnv []string
	// Timeout bounds one run besides the request's deadline; 0 is none.
	Timeout time.Duration
	// MaxOutputBytes bounds stdout; 0 is hookexec's default.
	MaxOutputBytes int64
}

// environ is the command's environment.
func (b *CommandBackend) environ() []string {
	var env []string
	for _, names := range [][]string{baseEnv, b.PassEnv} {
		for _, name := range names {
			if v, ok := os.LookupEnv(name); ok {
				env = append(env, name+"="+v)
			}
		}
	}
	return append(env, b.Env...)
}

// GetParams runs the command once.
func (b *CommandBackend) GetParams(ctx context.Context, req Request) ([]map[string]any, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encoding the request for the command: %w", err)
	}
	cmd := &hookexec.Command{
		Argv:      b.Argv,
		Dir:       b.Dir,
		Env:       b.environ(),
		Stdin:     bytes.NewReader(body),
		Timeout:   b.Timeout,
		MaxStdout: b.MaxOutputBytes,
		MaxStderr: 64 << 10,
	}
	res, err := cmd.Run(ctx)
	if err != nil {
		return nil, err
	}
	sets, err := ParseOutput(res.Stdout)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	return sets, nil
}

// ParseOutput reads what a command printed: a JSON list of objects, or
// {"output": {"parameters": [...]}}. Empty output is an error. Errors wrap
// ErrBadOutput.
func ParseOutput(out []byte) ([]map[string]any, error) {
	text := bytes.TrimSpace(out)
	if len(text) == 0 {
		return nil, fmt.Errorf("%w: the command printed nothing; print a JSON list of objects, [] for zero parameter sets", ErrBadOutput)
	}
	var v any
	if err := decodeJSON(text, &v); err != nil {
		return nil, fmt.Errorf("%w: the output is not JSON (%v): %s", ErrBadOutput, err, clipBody(text))
	}
	what := "the output"
	if m, ok := v.(map[string]any); ok {
		o, _ := m["output"].(map[string]any)
		ps, ok := o["parameters"]
		if !ok {
			return nil, fmt.Errorf(`%w: the output is an object; print a JSON list of objects, or {"output": {"parameters": [...]}}`, ErrBadOutput)
		}
		v, what = ps, "output.parameters"
	}
	if v == nil {
		return nil, fmt.Errorf("%w: %s is null; print [] for zero parameter sets", ErrBadOutput, what)
	}
	sets, err := parameterSets(v, what)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadOutput, err)
	}
	return sets, nil
}
