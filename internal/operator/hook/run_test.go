package hook_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/hookexec"
	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/store"
)

// script writes an executable shell script and returns it as a hook.
func script(t *testing.T, kind hook.Kind, body string) *hook.Hook {
	t.Helper()
	p := filepath.Join(t.TempDir(), "hook.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	h := &hook.Hook{Name: "hooks/hook.sh", Path: p, Kind: kind}
	if kind == hook.Module {
		h.ModuleKey = "myModule"
	}
	return h
}

func runner(t *testing.T) *hook.Runner {
	r := &hook.Runner{Env: []string{"PATH=" + os.Getenv("PATH")}, TempDir: t.TempDir(), Grace: 200 * time.Millisecond,
		CheckPatch: store.CheckHookPatch}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	})
	return r
}

func TestRunnerConfig(t *testing.T) {
	h := script(t, hook.Module, `
if [ "$1" = "--config" ]; then
  cat <<EOT
configVersion: v1
beforeHelm: 10
EOT
  exit 0
fi
exit 3
`)
	cfg, err := runner(t).Config(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := cfg.Order(hook.BeforeHelm); !ok || o != 10 || cfg.Version != "v1" {
		t.Errorf("Config = %+v", cfg)
	}
}

func TestRunnerConfigErrors(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"fails", "echo oops >&2; exit 2", "module myModule hook hooks/hook.sh: getting its configuration: `"},
		{"bad output", "echo 'configVersion: v1'; echo 'beforeHelm: x'", "hook hooks/hook.sh --config:2: beforeHelm: the order is \"x\"; write an integer such as beforeHelm: 10 (hooks run by order, then by name)"},
		{"floods", "yes configVersion", "module myModule hook hooks/hook.sh: --config printed more than 1048576 bytes; print only the bindings: `"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runner(t).Config(context.Background(), script(t, hook.Module, tc.body))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("Config error = %v, want %s...", err, tc.want)
			}
		})
	}
}

func TestRunnerRun(t *testing.T) {
	h := script(t, hook.Module, `
set -e
# Inputs: copied where the test can see them.
cp "$BINDING_CONTEXT_PATH" "$OUT/bc.json"
cp "$VALUES_PATH" "$OUT/values.json"
cp "$CONFIG_VALUES_PATH" "$OUT/config.json"
echo '[{"op":"add","path":"/myModule/a","value":1}]' > "$VALUES_JSON_PATCH_PATH"
echo '{"op":"remove","path":"/myModule/b"}' >> "$VALUES_JSON_PATCH_PATH"
echo '[{"op":"add","path":"/myModule/c","value":"x"}]' > "$CONFIG_VALUES_JSON_PATCH_PATH"
echo '{"name":"m","action":"set","value":2}' >> "$METRICS_PATH"
echo '{"operation":"Delete","kind":"Pod","name":"p"}' > "$KUBERNETES_PATCH_PATH"
echo to-stdout
echo to-stderr >&2
`)
	out := t.TempDir()
	r := runner(t)
	r.Env = append(r.Env, "OUT="+out)
	ctxs := []hook.BindingContext{{BindingType: hook.BeforeHelm, Binding: "beforeHelm", Snapshots: map[string][]hook.ObjectResult{}}}
	res, err := r.Run(context.Background(), h, hook.Input{Contexts: ctxs, Values: []byte(`{"global":{},"myModule":{"b":2}}`)})
	if err != nil {
		t.Fatal(err)
	}
	want := &hook.Output{
		ValuesPatch:       hook.Patch{{Op: "add", Path: "/myModule/a", Value: int64(1), Line: 1}, {Op: "remove", Path: "/myModule/b", Line: 2}},
		ConfigValuesPatch: hook.Patch{{Op: "add", Path: "/myModule/c", Value: "x", Line: 1}},
		Metrics:           []hook.MetricOperation{{Name: "m", Action: hook.MetricSet, Value: 2, Line: 1}},
		KubernetesPatch:   []hook.KubeOperation{{Operation: hook.KubeDelete, Kind: "Pod", Name: "p", Line: 1}},
		Stdout:            []byte("to-stdout\n"),
		Stderr:            []byte("to-stderr\n"),
	}
	if res.Usage.MaxRSS <= 0 {
		t.Errorf("Run().Usage = %+v, want the hook's peak memory", res.Usage)
	}
	res.Duration, res.Usage = 0, hookexec.Usage{}
	if d := cmp.Diff(want, res); d != "" {
		t.Errorf("Run (-want +got):\n%s", d)
	}
	for file, want := range map[string]string{
		"bc.json":     `[{"binding":"beforeHelm","snapshots":{}}]`,
		"values.json": `{"global":{},"myModule":{"b":2}}`,
		"config.json": `{}`,
	} {
		got, err := os.ReadFile(filepath.Join(out, file))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", file, got, err, want)
		}
	}
	// The run's outputs are gone, its inputs kept for the next run;
	// Close removes the runs' directory.
	ents, _ := os.ReadDir(r.TempDir)
	if len(ents) != 1 {
		t.Fatalf("TempDir holds %d entries after Run, want the runs' directory", len(ents))
	}
	var left []string
	files, _ := os.ReadDir(filepath.Join(r.TempDir, ents[0].Name()))
	for _, f := range files {
		left = append(left, f.Name())
	}
	if want := []string{"1-binding-context.json", "1-config-values.json", "1-values.json"}; !cmp.Equal(left, want) {
		t.Errorf("the runs' directory holds %v after Run, want %v", left, want)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(r.TempDir); len(ents) != 0 {
		t.Errorf("TempDir holds %d entries after Close", len(ents))
	}
}

func TestRunnerRunNoOutputs(t *testing.T) {
	res, err := runner(t).Run(context.Background(), script(t, hook.Global, "exit 0"), hook.Input{})
	if err != nil {
		t.Fatal(err)
	}
	if res.ValuesPatch != nil || res.ConfigValuesPatch != nil || res.Metrics != nil || res.KubernetesPatch != nil {
		t.Errorf("Run = %+v, want no outputs", res)
	}
}

func TestRunnerRunFailures(t *testing.T) {
	tests := []struct {
		name string
		kind hook.Kind
		body string
		want string // prefix of the error
		is   error
	}{
		{"exit non-zero", hook.Module, `echo '[{"op":"add","path":"/myModule/a","value":1}]' > "$VALUES_JSON_PATCH_PATH"; echo broken >&2; exit 3`,
			"module myModule hook hooks/hook.sh failed: `", nil},
		{"garbage patch", hook.Module, `printf '[{"op":"add",\n"path":' > "$VALUES_JSON_PATCH_PATH"`,
			"module myModule hook hooks/hook.sh: values patch ($VALUES_JSON_PATCH_PATH) line 2:", nil},
		{"patch out of scope", hook.Module, `echo '[{"op":"add","path":"/global/a","value":1}]' > "$VALUES_JSON_PATCH_PATH"`,
			"module myModule hook hooks/hook.sh: values patch ($VALUES_JSON_PATCH_PATH) line 1: operation 0 (add /global/a) is outside the module's values; a hook of module myModule may change only /myModule/...", nil},
		{"config patch out of scope", hook.Global, `echo '[{"op":"add","path":"/myModule/a","value":1}]' > "$CONFIG_VALUES_JSON_PATCH_PATH"`,
			"global hook hooks/hook.sh: config values patch ($CONFIG_VALUES_JSON_PATCH_PATH) line 1: operation 0 (add /myModule/a) is outside the global values", nil},
		{"garbage metrics", hook.Global, `echo 'metric 1' > "$METRICS_PATH"`,
			"global hook hooks/hook.sh: metrics ($METRICS_PATH) line 1:", nil},
		{"garbage kubernetes patch", hook.Global, `echo '{"operation":"Boom"}' > "$KUBERNETES_PATCH_PATH"`,
			"global hook hooks/hook.sh: kubernetes patch ($KUBERNETES_PATCH_PATH) line 1: operation \"Boom\" is not one of", nil},
		{"symlink output", hook.Global, `ln -s /etc/passwd "$VALUES_JSON_PATCH_PATH"`,
			"global hook hooks/hook.sh: values patch ($VALUES_JSON_PATCH_PATH): reading hook output file 1-values-patch.json: it is a symbolic link", nil},
		{"floods stdout", hook.Global, `yes flood`, "global hook hooks/hook.sh failed: `", hookexec.ErrOutputTooLarge},
		{"hangs", hook.Global, `sleep 30`, "global hook hooks/hook.sh failed: `", hookexec.ErrTimeout},
		{"ignores SIGTERM", hook.Global, `trap '' TERM; while :; do sleep 0.05; done`, "global hook hooks/hook.sh failed: `", hookexec.ErrTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runner(t)
			r.Timeout = 500 * time.Millisecond
			r.MaxLogBytes = 1 << 16
			res, err := r.Run(context.Background(), script(t, tc.kind, tc.body), hook.Input{})
			if err == nil {
				t.Fatalf("Run succeeded with %+v", res)
			}
			if res != nil {
				t.Errorf("Run returned outputs %+v with its error", res)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("Run error =\n %v\nwant prefix\n %s", err, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("Run error %v does not match %v", err, tc.is)
			}
		})
	}
}

// TestRunnerGlobalEnabledFlag: a global hook's values patch may set
// /globalEnabled (addon-operator accepts every root key with the Enabled
// suffix from a global hook); a module hook's may not.
func TestRunnerGlobalEnabledFlag(t *testing.T) {
	body := `echo '[{"op":"add","path":"/globalEnabled","value":true}]' > "$VALUES_JSON_PATCH_PATH"`
	res, err := runner(t).Run(context.Background(), script(t, hook.Global, body), hook.Input{})
	if err != nil {
		t.Fatalf("global hook: Run = %v, want the patch accepted", err)
	}
	if len(res.ValuesPatch) != 1 || res.ValuesPatch[0].Path != "/globalEnabled" {
		t.Errorf("global hook: values patch %+v, want the /globalEnabled operation", res.ValuesPatch)
	}
	_, err = runner(t).Run(context.Background(), script(t, hook.Module, body), hook.Input{})
	want := "module myModule hook hooks/hook.sh: values patch ($VALUES_JSON_PATCH_PATH) line 1: operation 0 (add /globalEnabled) is outside the module's values; a hook of module myModule may change only /myModule/..."
	if err == nil || err.Error() != want || !errors.Is(err, store.ErrScope) {
		t.Errorf("module hook: Run = %v, want %s (wrapping store.ErrScope)", err, want)
	}
}

func TestRunnerOutputTooLarge(t *testing.T) {
	r := runner(t)
	r.MaxOutputBytes = 100
	_, err := r.Run(context.Background(), script(t, hook.Global, `head -c 1000 /dev/zero > "$METRICS_PATH"`), hook.Input{})
	if !errors.Is(err, hookexec.ErrOutputTooLarge) {
		t.Errorf("Run error = %v, want ErrOutputTooLarge", err)
	}
}

// TestRunnerConcurrent runs hooks at once through one Runner: each sees
// its own files.
func TestRunnerConcurrent(t *testing.T) {
	h := script(t, hook.Module, `v=$(cat "$VALUES_PATH"); echo "[{\"op\":\"add\",\"path\":\"/myModule/seen\",\"value\":$v}]" > "$VALUES_JSON_PATCH_PATH"`)
	r := runner(t)
	errs := make(chan error, 8)
	for i := range 8 {
		go func() {
			in := hook.Input{Values: []byte(strconv.Itoa(i))}
			out, err := r.Run(context.Background(), h, in)
			if err == nil && (len(out.ValuesPatch) != 1 || out.ValuesPatch[0].Value != int64(i)) {
				err = fmt.Errorf("run %d saw %+v", i, out.ValuesPatch)
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestRunnerReusedFiles runs hooks one after the other: a run never sees
// what the run before it wrote, even when that hook replaced its input
// files.
func TestRunnerReusedFiles(t *testing.T) {
	r := runner(t)
	vandal := script(t, hook.Module, `echo '[{"op":"add","path":"/myModule/a","value":1}]' > "$VALUES_JSON_PATCH_PATH"
rm "$VALUES_PATH"; ln -s /etc/passwd "$VALUES_PATH"; rm "$BINDING_CONTEXT_PATH"; mkdir "$BINDING_CONTEXT_PATH"`)
	if _, err := r.Run(context.Background(), vandal, hook.Input{}); err != nil {
		t.Fatal(err)
	}
	reader := script(t, hook.Module, `test -f "$BINDING_CONTEXT_PATH" && test ! -L "$VALUES_PATH" && test ! -e "$VALUES_JSON_PATCH_PATH" || exit 9
cat "$VALUES_PATH" > "$OUT"`)
	out := filepath.Join(t.TempDir(), "seen")
	r.Env = append(r.Env, "OUT="+out)
	res, err := r.Run(context.Background(), reader, hook.Input{Values: []byte(`{"v":2}`)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.ValuesPatch) != 0 {
		t.Errorf("the second run got the first run's patch %v", res.ValuesPatch)
	}
	if got, _ := os.ReadFile(out); string(got) != `{"v":2}` {
		t.Errorf("the second run saw values %q", got)
	}
}

// TestRunnerPythonVenv runs a *.py hook through its module's venv: the
// "python3" there is a script printing what it was given.
func TestRunnerPythonVenv(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]os.FileMode{"hooks/h.py": 0o755})
	py := filepath.Join(dir, "hooks/venv/bin/python3")
	if err := os.MkdirAll(filepath.Dir(py), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(py, []byte("#!/bin/sh\necho \"$PYTHONHOME $1 $2\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	hooks, _, err := hook.DiscoverModule(dir, "m")
	if err != nil {
		t.Fatal(err)
	}
	out, err := runner(t).Run(context.Background(), hooks[0], hook.Input{})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "hooks/venv") + " " + filepath.Join(dir, "hooks/h.py") + " \n"; string(out.Stdout) != want {
		t.Errorf("stdout %q, want %q", out.Stdout, want)
	}
}

// TestRunnerFailedStatusPatches: a hook that fails still hands over the
// status patches it marked ignoreHookError (shell-operator applies them),
// and only those.
func TestRunnerFailedStatusPatches(t *testing.T) {
	ops := []string{
		`{"operation":"MergePatch","kind":"Sprocket","namespace":"ns","name":"a","subresource":"/status","mergePatch":{"status":{"ok":false}},"ignoreHookError":true}`,
		`{"operation":"MergePatch","kind":"Sprocket","namespace":"ns","name":"b","subresource":"status","mergePatch":{"status":{"ok":false}}}`,
		`{"operation":"MergePatch","kind":"Sprocket","namespace":"ns","name":"c","mergePatch":{"spec":{"x":1}},"ignoreHookError":true}`,
		`{"operation":"JQPatch","kind":"Sprocket","namespace":"ns","name":"d","subresource":"status","jqFilter":".status.ok = false","ignoreHookError":true}`,
		`{"operation":"Delete","kind":"Sprocket","namespace":"ns","name":"e","subresource":"status","ignoreHookError":true}`,
	}
	body := "cat > \"$KUBERNETES_PATCH_PATH\" <<'OPS'\n" + strings.Join(ops, "\n") + "\nOPS\nexit 1\n"
	_, err := runner(t).Run(context.Background(), script(t, hook.Global, body), hook.Input{})
	var failed *hook.FailedError
	if !errors.As(err, &failed) {
		t.Fatalf("Run error = %v, want a *hook.FailedError", err)
	}
	var got []string
	for _, op := range failed.StatusPatches {
		got = append(got, string(op.Operation)+" "+op.Name)
	}
	if want := []string{"MergePatch a", "JQPatch d"}; !cmp.Equal(got, want) {
		t.Errorf("StatusPatches = %v, want %v", got, want)
	}
	if failed.Usage == nil || failed.Usage.MaxRSS <= 0 {
		t.Errorf("Usage of the failed run = %+v, want its process's", failed.Usage)
	}
	// A failed hook whose patch file does not parse: no status patches,
	// the hook's own failure is the error.
	_, err = runner(t).Run(context.Background(), script(t, hook.Global, `echo '{"operation":' > "$KUBERNETES_PATCH_PATH"; exit 2`), hook.Input{})
	if !errors.As(err, &failed) || len(failed.StatusPatches) != 0 || !strings.Contains(err.Error(), "failed: `") {
		t.Errorf("Run error = %v (%+v), want the hook's failure and no status patches", err, failed)
	}
}
