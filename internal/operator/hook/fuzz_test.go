package hook_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/store"
)

func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		"configVersion: v1\nonStartup: 10\n",
		`{"configVersion":"v1","beforeHelm":1,"kubernetes":[{"name":"a","kind":"Pod","jqFilter":".metadata","labelSelector":{"matchExpressions":[{"key":"a","operator":"In","values":["b"]}]},"namespace":{"nameSelector":{"matchNames":["x"]}},"group":"g"}],"schedule":[{"crontab":"* * * * *","includeSnapshotsFrom":["a"],"group":"g"}],"settings":{"executionMinInterval":"1s","executionBurst":1}}`,
		`{"onStartup":1,"onKubernetesEvent":[{"kind":"Pod","event":["add"],"namespaceSelector":{"any":true}}]}`,
		"configVersion: v1\nkubernetes:\n- kind: Pod\n  fieldSelector: {matchExpressions: [{field: a, operator: '=', value: b}]}\n",
		`{"configVersion":"v1","kubernetes":[{"name":"a","kind":"Pod","group":"g"}],"kubernetesValidating":[{"name":"a.example.com","group":"g","failurePolicy":"Ignore","timeoutSeconds":5,"rules":[{"apiGroups":[""],"apiVersions":["v1"],"resources":["pods"],"operations":["CREATE"],"scope":"*"}],"namespace":{"labelSelector":{"matchLabels":{"a":"b"}}},"matchConditions":[{"name":"x","expression":"true"}]}],"kubernetesCustomResourceConversion":[{"name":"c","crdName":"crontabs.stable.example.com","includeSnapshotsFrom":["a"],"conversions":[{"fromVersion":"v1","toVersion":"v2"}]}]}`,
	} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, data []byte, global bool) {
		k := hook.Module
		if global {
			k = hook.Global
		}
		cfg, err := hook.ParseConfig(data, k, "fuzz")
		if err != nil {
			if cfg != nil {
				t.Fatal("config with an error")
			}
			var ce *hook.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not a *ConfigError", err)
			}
			return
		}
		if cfg.Version != "v0" && cfg.Version != "v1" {
			t.Fatalf("version %q", cfg.Version)
		}
		for _, s := range cfg.Schedules {
			if s.Spec == nil || s.Name == "" || s.Queue == "" {
				t.Fatalf("schedule %+v", s)
			}
		}
		for _, kb := range cfg.Kubernetes {
			if kb.Kind == "" || kb.Name == "" || kb.Queue == "" {
				t.Fatalf("binding %+v", kb)
			}
		}
		for _, v := range cfg.Validating {
			if v.Name == "" || len(v.Rules) == 0 || v.TimeoutSeconds < 1 || v.TimeoutSeconds > 30 {
				t.Fatalf("validating binding %+v", v)
			}
		}
		for _, c := range cfg.Conversion {
			if c.Name == "" || c.CRDName == "" || len(c.Conversions) == 0 {
				t.Fatalf("conversion binding %+v", c)
			}
		}
	})
}

func FuzzParsePatch(f *testing.F) {
	for _, s := range []string{
		`[{"op":"add","path":"/m/a","value":{"b":1}},{"op":"remove","path":"/m/c"}]`,
		"[{\"op\":\"add\",\"path\":\"/m/a\",\"value\":1}]\n{\"op\":\"move\",\"from\":\"/m/a\",\"path\":\"/m/b\"}",
		`[{"op":"add","path":"/global/a","value":[1,2]},{"op":"add","path":"/aEnabled","value":true}]`,
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := hook.ParsePatch(data, "fuzz")
		if err != nil {
			return
		}
		for _, op := range p {
			if op.Path == "" || op.Path[0] != '/' {
				t.Fatalf("op %+v", op)
			}
		}
		// Every parsed patch is one values' JSON patch code takes.
		if _, err := json.Marshal(p.Maps()); err != nil {
			t.Fatalf("Maps: %v", err)
		}
		_ = store.CheckScope(p, "m", "fuzz")
		_ = store.CheckScope(p, store.GlobalKey, "fuzz")
	})
}

func FuzzParseMetrics(f *testing.F) {
	for _, s := range []string{
		`{"name":"a","action":"add","value":1,"labels":{"l":"v"}}` + "\n" + `{"group":"g","action":"expire"}`,
		`{"name":"h","action":"observe","value":42,"buckets":[1,2,5]}`,
		`{"name":"s","set":3}{"name":"s","add":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ops, err := hook.ParseMetrics(data, "fuzz")
		if err != nil {
			return
		}
		for _, op := range ops {
			switch op.Action {
			case hook.MetricAdd:
				if op.Value < 0 {
					t.Fatalf("negative add %+v", op)
				}
			case hook.MetricSet, hook.MetricObserve:
			case hook.MetricExpire:
				if op.Group == "" {
					t.Fatalf("expire without group %+v", op)
				}
			default:
				t.Fatalf("action %q", op.Action)
			}
		}
	})
}

func FuzzParseKubernetesPatch(f *testing.F) {
	for _, s := range []string{
		`{"operation":"Create","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}}`,
		`{"operation":"JSONPatch","kind":"D","name":"d","jsonPatch":[{"op":"replace","path":"/a","value":3}]}`,
		"operation: MergePatch\nkind: D\nname: d\nmergePatch: '{\"a\":1}'\n---\noperation: Delete\nkind: P\nname: p\n",
		`{"operation":"JQPatch","kind":"D","name":"d","jqFilter":".a = 1"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ops, err := hook.ParseKubernetesPatch(data, "fuzz")
		if err != nil {
			return
		}
		for _, op := range ops {
			if op.Operation == "" {
				t.Fatalf("op %+v", op)
			}
		}
	})
}

func FuzzDecodeContexts(f *testing.F) {
	for _, tc := range contextCases {
		if tc.version == "v1" {
			data, err := hook.EncodeContexts("v1", tc.ctxs)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ctxs, err := hook.DecodeContexts(data)
		if err != nil {
			return
		}
		enc, err := hook.EncodeContexts("v1", ctxs)
		if err != nil {
			t.Fatalf("EncodeContexts of decoded contexts: %v", err)
		}
		if !json.Valid(enc) {
			t.Fatalf("invalid JSON %s", enc)
		}
		back, err := hook.DecodeContexts(enc)
		if err != nil {
			t.Fatalf("DecodeContexts(EncodeContexts(x)): %v\n%s", err, enc)
		}
		again, err := hook.EncodeContexts("v1", back)
		if err != nil || string(again) != string(enc) {
			t.Fatalf("not stable:\n%s\n%s", enc, again)
		}
	})
}
