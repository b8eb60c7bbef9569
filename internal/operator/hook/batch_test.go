package hook_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/operator/hook"
)

// batchScript writes an executable file called name that answers as a
// module-sdk batch hook: `hook list` with list, `hook config` with config,
// `hook run N` / `hook ready` by writing its arguments and MODULE_NAME to
// a values patch; --config fails, as a module-sdk binary's does.
func batchScript(t *testing.T, kind hook.Kind, name, list, config string) *hook.Hook {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	body := `#!/bin/sh
case "$1 $2" in
"hook list") printf '%s\n' '` + list + `'; exit 0;;
"hook config") cat "$(dirname "$0")/config.json"; exit 0;;
"hook run"|"hook ready")
  key=global; [ "$MODULE_NAME" = global ] || key=myModule
  printf '[{"op":"add","path":"/%s/run","value":"%s %s %s %s"}]' "$key" "$1" "$2" "$3" "$MODULE_NAME" > "$VALUES_JSON_PATCH_PATH"
  exit 0;;
esac
echo "unknown flag: $1" >&2
exit 1
`
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	h := &hook.Hook{Name: "hooks/" + name, Path: p, Kind: kind}
	if kind == hook.Module {
		h.ModuleKey, h.Module = "myModule", "my-module"
	} else {
		h.Name = name
	}
	return h
}

const batchV1 = `{"version":"v1","hooks":[
 {"configVersion":"v1","metadata":{"name":"first","path":"x/first"},"onStartup":5,
  "schedule":[{"name":"tick","crontab":"*/5 * * * * *","queue":"slow"}],
  "settings":{"executionMinInterval":2000000000,"executionBurst":3}},
 {"configVersion":"v1","metadata":{"name":"second"},"beforeHelm":10,"afterHelm":20,
  "kubernetes":[{"name":"pods","kind":"Pod","jqFilter":".metadata.name","executeHookOnEvent":false,
    "nameSelector":{"matchNames":["a"]},"labelSelector":{"matchLabels":{"app":"x"}},
    "namespace":{"nameSelector":{"matchNames":["ns"]}},
    "fieldSelector":{"matchExpressions":[{"field":"status.phase","operator":"Equals","value":"Running"}]}},
   {"name":"nodes","apiVersion":"v1","kind":"Node","waitForSynchronization":false,"keepFullObjectsInMemory":true,"executeHookOnSynchronization":false,"allowFailure":true,"queue":"q","includeSnapshotsFrom":["pods"]}]}
],"readiness":{"configVersion":"v1","metadata":{"name":"readiness"},"schedule":[{"crontab":"* * * * *"}]},"has_settings_check":true,"futureField":1}`

// summary is what a test compares of a configured hook.
type summary struct {
	Name, Batch string
	Orders      map[hook.BindingType]float64
	Schedules   []string // name queue group
	Kubernetes  []string // name kind group events sync wait keep allowFailure queue
	Settings    string
}

func summarize(cs []hook.Configured) []summary {
	var out []summary
	for _, c := range cs {
		s := summary{Name: c.Hook.Name, Batch: c.Hook.Batch, Orders: c.Config.Orders}
		for _, sc := range c.Config.Schedules {
			s.Schedules = append(s.Schedules, strings.Join([]string{sc.Name, sc.Crontab, sc.Queue, sc.Group}, " "))
		}
		for _, k := range c.Config.Kubernetes {
			var ev []string
			for _, e := range k.ExecuteHookOnEvent {
				ev = append(ev, string(e))
			}
			s.Kubernetes = append(s.Kubernetes, strings.Join([]string{k.Name, k.Kind, k.Group, "events=" + strings.Join(ev, ","),
				"sync=" + bstr(k.ExecuteHookOnSynchronization), "wait=" + bstr(k.WaitForSynchronization),
				"keep=" + bstr(k.KeepFullObjectsInMemory), "allowFailure=" + bstr(k.AllowFailure), k.Queue,
				"names=" + strings.Join(k.NameSelector, ","), "jq=" + k.JqFilter}, " "))
		}
		if st := c.Config.Settings; st != nil {
			s.Settings = st.ExecutionMinInterval.String() + "/" + strings.Repeat("*", st.ExecutionBurst)
		}
		out = append(out, s)
	}
	return out
}

func bstr(b bool) string {
	if b {
		return "y"
	}
	return "n"
}

func TestConfigureBatchHook(t *testing.T) {
	for _, tc := range []struct {
		name   string
		kind   hook.Kind
		file   string
		config string
		want   []summary
	}{{
		name: "v1 module", kind: hook.Module, file: "batch", config: batchV1,
		want: []summary{{
			Name: "hooks/batch-readiness", Batch: "ready", Orders: map[hook.BindingType]float64{},
			Schedules: []string{"schedule * * * * * main main"},
		}, {
			Name: "hooks/batch:first:0", Batch: "0", Orders: map[hook.BindingType]float64{hook.OnStartup: 5},
			Schedules: []string{"tick */5 * * * * * slow main"}, Settings: "2s/***",
		}, {
			Name: "hooks/batch:second:1", Batch: "1", Orders: map[hook.BindingType]float64{hook.BeforeHelm: 10, hook.AfterHelm: 20},
			Kubernetes: []string{
				"pods Pod main events= sync=y wait=y keep=n allowFailure=n main names=a jq=.metadata.name",
				"nodes Node main events=Added,Modified,Deleted sync=n wait=n keep=y allowFailure=y q names= jq=",
			},
		}},
	}, {
		name: "v1 global: beforeHelm and afterHelm are beforeAll and afterAll", kind: hook.Global, file: "batch",
		config: `{"version":"v1","hooks":[{"configVersion":"v1","metadata":{"name":"g"},"beforeHelm":1,"afterHelm":2,"beforeDeleteHelm":3}]}`,
		want:   []summary{{Name: "batch-g-0", Batch: "0", Orders: map[hook.BindingType]float64{hook.BeforeAll: 1, hook.AfterAll: 2}}},
	}, {
		name: "the older bare list", kind: hook.Module, file: "batch",
		config: `[{"configVersion":"v1","metadata":{"name":"a"},"onStartup":1},{"metadata":{"name":"b"},"afterDeleteHelm":2}]`,
		want: []summary{
			{Name: "hooks/batch:a:0", Batch: "0", Orders: map[hook.BindingType]float64{hook.OnStartup: 1}},
			{Name: "hooks/batch:b:1", Batch: "1", Orders: map[hook.BindingType]float64{hook.AfterDeleteHelm: 2}},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			h := batchScript(t, tc.kind, tc.file, "Found 2 items:", tc.config)
			cs, err := runner(t).Configure(context.Background(), h)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, summarize(cs)); diff != "" {
				t.Errorf("Configure (-want +got):\n%s", diff)
			}
			for _, c := range cs {
				if c.Hook.Path != h.Path || c.Hook.Kind != h.Kind || c.Hook.ModuleKey != h.ModuleKey {
					t.Errorf("sub-hook %+v lost its file's path, kind or module", c.Hook)
				}
			}
		})
	}
}

func TestConfigureBatchHookErrors(t *testing.T) {
	for _, tc := range []struct {
		name, file, list, config, want string
	}{
		{"not a batch hook: --config's own error", "batch", "no items", `{}`, "module myModule hook hooks/batch: getting its configuration: "},
		{"an extension: never asked", "batch.sh", "Found 2 items:", `{}`, "module myModule hook hooks/batch.sh: getting its configuration: "},
		{"unknown version", "batch", "Found 1 items:", `{"version":"v2","hooks":[]}`, `module myModule hook hooks/batch: ` + "`hook config`" + ` output has version "v2"; strata reads version "v1"`},
		{"a log line", "batch", "Found 1 items:", `{"level":"fatal","msg":"boom"}`, "printed a log line instead of the configuration: {\"level\""},
		{"nothing", "batch", "Found 1 items:", ``, "`hook config` printed nothing"},
		{"no hooks", "batch", "Found 1 items:", `{"version":"v1","hooks":[]}`, "`hook config` lists no hooks"},
		{"not JSON", "batch", "Found 1 items:", `version: v1`, "`hook config` output: invalid character"},
		{"a bad binding, named", "batch", "Found 1 items:", `{"version":"v1","hooks":[{"metadata":{"name":"x"},"schedule":[{"crontab":"every day"}]}]}`,
			"module myModule hook hooks/batch:x:0 (hook 0 of module-sdk batch hook hooks/batch): "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := batchScript(t, hook.Module, tc.file, tc.list, tc.config)
			_, err := runner(t).Configure(context.Background(), h)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Configure error = %v, want one with %q", err, tc.want)
			}
		})
	}
}

// A batch hook's hook runs as `FILE hook run N` (the readiness hook as
// `FILE hook ready`) with MODULE_NAME: the module's name, "global" for a
// global hook.
func TestRunBatchHook(t *testing.T) {
	for _, tc := range []struct {
		kind  hook.Kind
		index int
		want  string
	}{
		{hook.Module, 2, `[{"op":"add","path":"/myModule/run","value":"hook run 1 my-module"}]`},
		{hook.Module, 0, `[{"op":"add","path":"/myModule/run","value":"hook ready  my-module"}]`},
		{hook.Global, 1, `[{"op":"add","path":"/global/run","value":"hook run 0 global"}]`},
	} {
		h := batchScript(t, tc.kind, "batch", "Found 2 items:", batchV1)
		r := runner(t)
		cs, err := r.Configure(context.Background(), h)
		if err != nil {
			t.Fatal(err)
		}
		out, err := r.Run(context.Background(), cs[tc.index].Hook, hook.Input{Values: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(out.ValuesPatch.Maps())
		if string(got) != tc.want {
			t.Errorf("%s: values patch %s, want %s", cs[tc.index].Hook, got, tc.want)
		}
	}
}
