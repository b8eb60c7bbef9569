package hook_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/operator/hook"
)

// hugePatch is the values patch: 700,000 operations, 27 MB.
func hugePatch(ops int, yaml bool) []byte {
	var b bytes.Buffer
	b.WriteString("[")
	for i := range ops {
		if i > 0 {
			b.WriteString(",\n")
		}
		if yaml {
			b.WriteString(`{op: add, path: /myModule/k, value: 1}`)
		} else {
			b.WriteString(`{"op":"add","path":"/myModule/k","value":1}`)
		}
	}
	b.WriteString("]\n")
	return b.Bytes()
}

// allocated returns the bytes f allocates on the heap (all of them, not
// the peak: an upper bound of what it can hold at once).
func allocated(f func()) uint64 {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestPatchRefusedWhileReading: a patch of too many operations is refused
// having built nothing of it. Before, the 27 MB patch cost 1.5 GB of
// allocations (981 MiB in use at the peak) before "more than 100000
// operations".
func TestPatchRefusedWhileReading(t *testing.T) {
	for _, tc := range []struct {
		name     string
		data     []byte
		want     string
		maxAlloc uint64
	}{
		{"JSON, 700k operations", hugePatch(700_000, false),
			"p line 100001: more than 100000 operations, the limit of a patch", 1 << 20},
		// YAML's flow style is refused by the count of its nodes before
		// the YAML library builds anything.
		{"YAML, 700k operations", hugePatch(700_000, true),
			"p line 100001: more than 100000 operations, the limit of a patch", 1 << 20},
		// One operation whose value is 1.1M integers: refused at the
		// patch's node budget, while it is built.
		{"one huge value", []byte(`[{"op":"add","path":"/myModule/k","value":[` + strings.Repeat("1,", 1100_000) + `1]}]`),
			"p line 1: the operations' values hold more than 1048576 maps, lists and values together", 400 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			n := allocated(func() { _, err = hook.ParsePatch(tc.data, "p") })
			var oe *hook.OutputError
			if !errors.As(err, &oe) || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("ParsePatch(%d bytes) error = %v, want an *OutputError %q", len(tc.data), err, tc.want)
			}
			t.Logf("%d bytes refused; %d MiB allocated", len(tc.data), n>>20)
			if n > tc.maxAlloc {
				t.Errorf("refusing %d bytes allocated %d MiB, want at most %d MiB", len(tc.data), n>>20, tc.maxAlloc>>20)
			}
		})
	}
}

// TestPatchAtTheLimit: 100,000 operations, the limit, are read, one at a
// time, in a stream of lists and single operations.
func TestPatchAtTheLimit(t *testing.T) {
	data := append(hugePatch(99_999, false), []byte(`{"op":"remove","path":"/myModule/x"}`+"\n")...)
	var p hook.Patch
	var err error
	n := allocated(func() { p, err = hook.ParsePatch(data, "p") })
	if err != nil {
		t.Fatal(err)
	}
	if len(p) != 100_000 || p[99_999].Op != "remove" || p[99_999].Line != 100_000 || p[1].Line != 2 {
		t.Fatalf("ParsePatch = %d operations, last %+v", len(p), p[len(p)-1])
	}
	t.Logf("%d bytes, 100,000 operations: %d MiB allocated", len(data), n>>20)
	data = append(data, []byte(`{"op":"remove","path":"/myModule/y"}`)...)
	if _, err := hook.ParsePatch(data, "p"); err == nil || !strings.Contains(err.Error(), "p line 100001: more than 100000 operations") {
		t.Errorf("ParsePatch(100,001 operations) error = %v", err)
	}
}

// TestRunnerPatchTooManyOperations: the error names the hook, the file and
// the limit.
func TestRunnerPatchTooManyOperations(t *testing.T) {
	src := filepath.Join(t.TempDir(), "patch.json")
	if err := os.WriteFile(src, hugePatch(700_000, false), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file, env string
	}{
		{"values patch ($VALUES_JSON_PATCH_PATH)", "VALUES_JSON_PATCH_PATH"},
		{"config values patch ($CONFIG_VALUES_JSON_PATCH_PATH)", "CONFIG_VALUES_JSON_PATCH_PATH"},
	} {
		r := runner(t)
		h := script(t, hook.Module, `cp "$PATCH_SOURCE" "$`+tc.env+`"`)
		r.Env = append(r.Env, "PATCH_SOURCE="+src)
		_, err := r.Run(context.Background(), h, hook.Input{})
		want := "module myModule hook hooks/hook.sh: " + tc.file + " line 100001: more than 100000 operations, the limit of a patch"
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Run error = %v, want %q", err, want)
		}
	}
}
