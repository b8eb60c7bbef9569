package hook

import (
	"encoding/json"
	"testing"
)

// FuzzBatchConfig feeds `hook config` outputs through what Configure does
// with them: parseBatchConfig, then each hook's conversion and
// ParseConfig. Nothing may panic, and every conversion must be JSON.
func FuzzBatchConfig(f *testing.F) {
	for _, s := range []string{
		`{"version":"v1","hooks":[{"configVersion":"v1","metadata":{"name":"a"},"onStartup":1,"schedule":[{"name":"t","crontab":"* * * * *","queue":"q"}],"settings":{"executionMinInterval":1000,"executionBurst":2}}],"readiness":{"metadata":{"name":"readiness"},"schedule":[{"crontab":"* * * * *"}]}}`,
		`[{"configVersion":"v1","metadata":{"name":"b"},"beforeHelm":1,"kubernetes":[{"name":"p","kind":"Pod","jqFilter":".a","executeHookOnEvent":false,"labelSelector":{"matchLabels":{"a":"b"}},"namespace":{"nameSelector":{"matchNames":["x"]}},"fieldSelector":{"matchExpressions":[{"field":"status.phase","operator":"Equals","value":"x"}]},"includeSnapshotsFrom":["p"]}]}]`,
		`{"level":"fatal","msg":"x"}`,
		`{"version":"v1","hooks":[{"kubernetes":[{"kind":"Pod","nameSelector":null,"labelSelector":7}]}]}`,
	} {
		f.Add([]byte(s))
	}
	h := &Hook{Name: "hooks/batch", Path: "/nonexistent", Kind: Module, ModuleKey: "m"}
	f.Fuzz(func(t *testing.T, data []byte) {
		bc, err := parseBatchConfig(data, h)
		if err != nil {
			return
		}
		hooks := bc.Hooks
		if bc.Readiness != nil {
			hooks = append(hooks, *bc.Readiness)
		}
		for _, k := range []Kind{Global, Module} {
			for i := range hooks {
				doc, err := hooks[i].shellConfig(k)
				if err != nil {
					t.Fatalf("shellConfig: %v", err)
				}
				if !json.Valid(doc) {
					t.Fatalf("shellConfig gave %q", doc)
				}
				_, _ = ParseConfig(doc, k, "hooks/batch:x:0")
			}
		}
	})
}
