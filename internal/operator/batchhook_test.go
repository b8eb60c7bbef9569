package operator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/strata-dev/strata/internal/eventually"
)

// batchHookBuild is testdata/batchhook built once per test binary; main
// removes it after the tests.
var batchHookBuild struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if batchHookBuild.dir != "" {
		_ = os.RemoveAll(batchHookBuild.dir)
	}
	os.Exit(code)
}

// batchHook returns the path of testdata/batchhook, a module-sdk batch
// hook written with the standard library, built with `go build`.
func batchHook(t *testing.T) string {
	t.Helper()
	b := &batchHookBuild
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "strata-batchhook-"); b.err != nil {
			return
		}
		b.bin = filepath.Join(b.dir, "batch")
		cmd := exec.Command("go", "build", "-o", b.bin, "./testdata/batchhook")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("building testdata/batchhook: %v\n%s", err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}

// TestBatchHook runs a module-sdk batch hook (two hooks in one compiled
// file) as a global hook and as module a's hook: each of its hooks gets
// its own bindings — hook 0 onStartup and a schedule, hook 1 beforeHelm
// (beforeAll for the global one) and a kubernetes binding with a
// jqFilter over the objects directory — and hook 1's values patch reaches
// the module's Helm release.
func TestBatchHook(t *testing.T) {
	bin := batchHook(t)
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, content := range map[string]string{
		"modules/values.yaml":             "aEnabled: true\n",
		"modules/001-a/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  fromOne: {{ .Values.a.fromOne | quote }}\n  globalFromOne: {{ .Values.global.fromOne | quote }}\n",
		"modules/001-a/hooks/batch":       string(data),
		"global-hooks/hooks/batch":        string(data),
		"objects/cms.yaml":                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: first\n  namespace: default\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: second\n  namespace: default\n",
		"config.yaml":                     "",
	} {
		writeFile(t, filepath.Join(dir, name), []byte(content))
	}
	h := &harness{t: t, dir: dir}
	defer h.stop()
	h.start()

	hist := strings.Join(h.eng.History(), "\n")
	for _, want := range []string{
		"global batch-zero-0 onStartup",
		"global batch-one-1 kubernetes cms Synchronization",
		"global batch-one-1 beforeAll",
		"module a hooks/batch:zero:0 onStartup",
		"module a hooks/batch:one:1 kubernetes cms Synchronization",
		"module a hooks/batch:one:1 beforeHelm",
		"module a helm upgrade",
	} {
		if !strings.Contains(hist, want) {
			t.Errorf("history lacks %q:\n%s", want, hist)
		}
	}
	// `strata operator hook list` shows each hook of the file with its key.
	hooksJSON, _ := json.Marshal(h.eng.Hooks())
	for _, want := range []string{`"name":"hooks/batch:one:1","module":"a","path":"` + filepath.Join(dir, "modules/001-a/hooks/batch") + `","batch":"1"`, `"name":"batch-zero-0","path":"` + filepath.Join(dir, "global-hooks/hooks/batch") + `","batch":"0"`} {
		if !strings.Contains(string(hooksJSON), want) {
			t.Errorf("hook list lacks %s:\n%s", want, hooksJSON)
		}
	}
	manifest, err := os.ReadFile(filepath.Join(dir, "releases/a/manifests.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`fromOne: "first,second"`, `globalFromOne: "first,second"`} {
		if !strings.Contains(string(manifest), want) {
			t.Errorf("release manifest lacks %s (hook 1's values patch):\n%s", want, manifest)
		}
	}

	// An object event reaches hook 1's kubernetes binding, and its patch
	// the release again.
	writeFile(t, filepath.Join(dir, "objects/more.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: third\n  namespace: default\n"))
	eventually.True(t, "hook 1 run on the event for the new object", func() (bool, string) {
		m, _ := os.ReadFile(filepath.Join(dir, "releases/a/manifests.yaml"))
		return strings.Contains(string(m), `fromOne: "first,second,third"`), string(m)
	})

	// Hook 0's schedule fires (every second; its context is of type Group,
	// as addon-operator puts a batch hook's bindings in group "main"), and
	// each hook was run as `hook run N` with MODULE_NAME.
	values := func(what string) map[string]any {
		var v any
		var err error
		if what == "global" {
			v, err = h.eng.Global("values", false)
		} else {
			v, err = h.eng.Module(context.Background(), what, "values", false)
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(v)
		var m map[string]map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m[what]
	}
	for _, key := range []string{"global", "a"} {
		eventually.True(t, key+" hook 0 run by its schedule", func() (bool, string) {
			v := values(key)
			b, _ := json.Marshal(v["zeroSeen"])
			return strings.Contains(string(b), `"tick:Group"`) && strings.Contains(string(b), `"onStartup:"`), string(b)
		})
		v := values(key)
		for field, want := range map[string]string{"moduleName": key, "args0": "hook run 0", "args1": "hook run 1"} {
			if v[field] != want {
				t.Errorf("%s values %s = %v, want %q", key, field, v[field], want)
			}
		}
	}
}
