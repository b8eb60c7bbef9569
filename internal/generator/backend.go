package generator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/strata-dev/strata/internal/hookexec"
	"github.com/strata-dev/strata/internal/memlimit"
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

// A responder is a Backend that answers with the response body itself,
// without building its parameter sets (see EncodeOutput).
type responder interface {
	Respond(ctx context.Context, req Request) ([]byte, error)
}

var _ responder = (*CommandBackend)(nil)

// GetParams runs the command once.
func (b *CommandBackend) GetParams(ctx context.Context, req Request) ([]map[string]any, error) {
	out, cmd, err := b.run(ctx, req)
	if err != nil {
		return nil, err
	}
	sets, err := ParseOutput(out)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	return sets, nil
}

// Respond runs the command once and returns the response body holding the
// parameter sets it printed (EncodeOutput): what the server answers.
func (b *CommandBackend) Respond(ctx context.Context, req Request) ([]byte, error) {
	out, cmd, err := b.run(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := memlimit.Reserve(ctx, encodeCost*int64(len(out)), fmt.Sprintf("encoding the %d bytes %s printed", len(out), cmd)); err != nil {
		return nil, err
	}
	body, err := EncodeOutput(out)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	return body, nil
}

// run runs the command once and returns its stdout.
func (b *CommandBackend) run(ctx context.Context, req Request) ([]byte, *hookexec.Command, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the request for the command: %w", err)
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
	// The output takes from the server's memory budget as it arrives; a
	// refusal is what the client is told, also when the command's
	// deadline, which ended the wait for room, stopped it too.
	var refusal atomic.Pointer[error]
	if grow := memlimit.Stream(ctx, shortArgv(b.Argv)); grow != nil {
		cmd.Reserve = func(n int64) error {
			err := grow(n)
			if err != nil {
				refusal.Store(&err)
			}
			return err
		}
	}
	res, err := cmd.Run(ctx)
	if p := refusal.Load(); p != nil {
		return nil, cmd, *p
	}
	if errors.Is(err, hookexec.ErrOutputTooLarge) {
		// Output that is not parameter sets, as far as the server can
		// tell: answered 502, as bad output is.
		return nil, cmd, fmt.Errorf("%w: %w", ErrBadOutput, err)
	}
	if err != nil {
		return nil, cmd, err
	}
	return res.Stdout, cmd, nil
}

// EncodeOutput checks what a command printed, as ParseOutput does, and
// returns the response body (EncodeResponse's shape) holding its parameter
// sets as they were written, compacted, without decoding them into maps:
// what it costs is a few copies of the output, not a tree of it (some
// forty times its size). Keys keep their order and numbers their text;
// the ApplicationSet controller decodes the same values from it. On an
// error it returns ParseOutput's.
func EncodeOutput(out []byte) ([]byte, error) {
	text := bytes.TrimSpace(out)
	sets, ok := rawSets(text)
	if !ok {
		// Not parameter sets: ParseOutput says why.
		if _, err := ParseOutput(out); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: the output is not a JSON list of objects", ErrBadOutput)
	}
	if num, bad := outOfRangeNumber(sets); bad {
		return nil, fmt.Errorf("%w: %w", ErrBadOutput, rangeError(num))
	}
	var b bytes.Buffer
	b.Grow(len(sets) + 32)
	b.WriteString(`{"output":{"parameters":`)
	if err := json.Compact(&b, sets); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadOutput, err)
	}
	b.WriteString("}}\n")
	return b.Bytes(), nil
}

// rawSets returns the list of parameter sets in a command's output, as
// written: the output itself, or its output.parameters; ok is false when
// it is not a JSON list of objects.
func rawSets(text []byte) (sets json.RawMessage, ok bool) {
	if len(text) == 0 || !json.Valid(text) {
		return nil, false
	}
	sets = text
	if text[0] == '{' {
		// Maps, as ParseOutput reads them: of a key written twice, the
		// last wins.
		var top, output map[string]json.RawMessage
		if err := json.Unmarshal(text, &top); err != nil || top["output"] == nil {
			return nil, false
		}
		if err := json.Unmarshal(top["output"], &output); err != nil {
			return nil, false
		}
		sets = bytes.TrimSpace(output["parameters"])
	}
	if len(sets) == 0 || sets[0] != '[' {
		return nil, false
	}
	// Each element must be an object: read the list token by token, one
	// element at a time, skipping what is inside the objects.
	dec := json.NewDecoder(bytes.NewReader(sets))
	if _, err := dec.Token(); err != nil { // [
		return nil, false
	}
	for dec.More() {
		var elem json.RawMessage
		if err := dec.Decode(&elem); err != nil || len(elem) == 0 || elem[0] != '{' {
			return nil, false
		}
	}
	return sets, true
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
	for _, s := range sets {
		if err := checkFloats(s); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadOutput, err)
		}
	}
	return sets, nil
}

// outOfRangeNumber finds a number in JSON text that a float64 cannot hold
// (1e400, or an integer of more than 309 digits), which the controller
// cannot decode. Only numbers with an exponent or of more than 300
// characters are parsed.
func outOfRangeNumber(data []byte) (string, bool) {
	inString, escaped := false, false
	for i := 0; i < len(data); i++ {
		c := data[i]
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
		case c == '-' || c >= '0' && c <= '9':
			j := i
			for j < len(data) && strings.IndexByte("+-0123456789.eE", data[j]) >= 0 {
				j++
			}
			num := data[i:j]
			if len(num) > 300 || bytes.ContainsAny(num, "eE") {
				if _, err := strconv.ParseFloat(string(num), 64); err != nil {
					return string(num), true
				}
			}
			i = j - 1
		}
	}
	return "", false
}

// shortArgv names a command in errors: its argv, clipped.
func shortArgv(argv []string) string {
	s := strings.Join(argv, " ")
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return "`" + s + "`"
}
