package hook_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/strata-dev/strata/internal/operator/hook"
)

// The floor of running a hook is starting the process; these benchmarks
// run the same shell script through Runner.Run (workspace, input files,
// outputs read and checked) and through os/exec alone.

const benchHook = `#!/bin/sh
echo '[{"op":"add","path":"/myModule/replicas","value":2}]' > "$VALUES_JSON_PATCH_PATH"
`

func benchScript(b *testing.B) string {
	p := filepath.Join(b.TempDir(), "hook.sh")
	if err := os.WriteFile(p, []byte(benchHook), 0o755); err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkRunnerRun is one beforeHelm run writing a values patch.
func BenchmarkRunnerRun(b *testing.B) {
	p := benchScript(b)
	h := &hook.Hook{Name: "hooks/h.sh", Path: p, Kind: hook.Module, ModuleKey: "myModule"}
	r := &hook.Runner{Env: []string{"PATH=" + os.Getenv("PATH")}, TempDir: b.TempDir()}
	defer r.Close()
	in := hook.Input{
		Contexts: []hook.BindingContext{{BindingType: hook.BeforeHelm, Binding: "beforeHelm", Snapshots: map[string][]hook.ObjectResult{}}},
		Values:   []byte(`{"global":{"enabledModules":["a","b"]},"myModule":{"replicas":1}}`),
	}
	ctx := context.Background()
	b.ResetTimer()
	defer cpuPerOp(b)()
	for b.Loop() {
		out, err := r.Run(ctx, h, in)
		if err != nil || len(out.ValuesPatch) != 1 {
			b.Fatal(out, err)
		}
	}
}

// cpuPerOp reports the CPU time this process (self-cpu-us/op) and its
// children (child-cpu-us/op) used per operation: unlike the wall time,
// it does not grow with the load of a shared machine.
func cpuPerOp(b *testing.B) func() {
	self, child := cpuTimes()
	return func() {
		s, c := cpuTimes()
		b.ReportMetric(float64((s-self).Microseconds())/float64(b.N), "self-cpu-us/op")
		b.ReportMetric(float64((c-child).Microseconds())/float64(b.N), "child-cpu-us/op")
	}
}

func cpuTimes() (self, children time.Duration) {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	children = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return self, children
}

// BenchmarkExecFloor starts the same script with os/exec, its patch file
// in a fixed temporary directory: the cost no runner can avoid.
func BenchmarkExecFloor(b *testing.B) {
	p := benchScript(b)
	dir := b.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "VALUES_JSON_PATCH_PATH=" + filepath.Join(dir, "patch.json")}
	b.ResetTimer()
	defer cpuPerOp(b)()
	for b.Loop() {
		cmd := exec.Command(p)
		cmd.Env = env
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunnerConfig is one `hook --config`.
func BenchmarkRunnerConfig(b *testing.B) {
	p := filepath.Join(b.TempDir(), "hook.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\necho '{\"configVersion\":\"v1\",\"beforeHelm\":10}'\n"), 0o755); err != nil {
		b.Fatal(err)
	}
	h := &hook.Hook{Name: "hooks/h.sh", Path: p, Kind: hook.Module, ModuleKey: "m"}
	r := &hook.Runner{Env: []string{"PATH=" + os.Getenv("PATH")}}
	defer cpuPerOp(b)()
	for b.Loop() {
		if _, err := r.Config(context.Background(), h); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseConfig is ParseConfig alone on a configuration with every
// kind of binding (v1), and on a v0 one.
func BenchmarkParseConfig(b *testing.B) {
	for _, bc := range []struct{ name, in string }{
		{"v1", `configVersion: v1
beforeHelm: 10
kubernetes:
- name: pods
  apiVersion: v1
  kind: Pod
  nameSelector: {matchNames: [a, b]}
  labelSelector:
    matchLabels: {app: x}
    matchExpressions: [{key: tier, operator: In, values: [web]}]
  fieldSelector:
    matchExpressions: [{field: status.phase, operator: Equals, value: Running}]
  namespace:
    labelSelector: {matchLabels: {team: a}}
  jqFilter: .metadata.labels
  executeHookOnEvent: [Added, Deleted]
  queue: pods
  group: g1
- {name: nodes, kind: Node, includeSnapshotsFrom: [pods], group: g1}
schedule:
- {crontab: "0 * * * *", includeSnapshotsFrom: [nodes], group: g1}
kubernetesValidating:
- name: a.example.com
  rules: [{apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [CREATE]}]
settings: {executionMinInterval: 3s, executionBurst: 2}
`},
		{"v0", `{"onStartup": 1, "beforeHelm": 2, "schedule": [{"crontab": "* * * * *", "allowFailure": true}],
"onKubernetesEvent": [{"kind": "Pod", "event": ["add", "delete"], "objectName": "p", "selector": {"matchLabels": {"a": "b"}},
"namespaceSelector": {"matchNames": ["ns"]}, "jqFilter": ".spec"}]}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			data := []byte(bc.in)
			b.ReportAllocs()
			defer cpuPerOp(b)()
			for b.Loop() {
				if _, err := hook.ParseConfig(data, hook.Module, "h.sh"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
