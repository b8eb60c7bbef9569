package store_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/golden"
	"github.com/strata-dev/strata/internal/operator/config"
	"github.com/strata-dev/strata/internal/operator/module"
	"github.com/strata-dev/strata/internal/operator/store"
	"github.com/strata-dev/strata/internal/values"
)

// A golden case holds a modules tree (modules/..., global/openapi/...),
// config.yaml (the config store), patches.yaml (hook patches applied in
// order: [{scope, hook, binding, ops}]) and the expected output: the
// effective values of every section, the result of every patch, and the
// explanation of every key.
func TestGolden(t *testing.T) {
	golden.Run(t, "testdata/*.txtar", func(t *testing.T, c golden.Case) {
		dir := t.TempDir()
		c.WriteFiles(t, dir, "values", "explain", "patches.yaml", "results")
		globalDir := ""
		if _, ok := c.Section("global/openapi/values.yaml"); ok {
			globalDir = filepath.Join(dir, "global")
		}
		set, err := module.Discover([]string{filepath.Join(dir, "modules")}, globalDir, module.Options{})
		if err != nil {
			t.Fatal(err)
		}
		st, err := store.New(set, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		rel := func(s string) string { return strings.ReplaceAll(s, dir+string(filepath.Separator), "") }
		var results bytes.Buffer
		if text, ok := c.Section("config.yaml"); ok {
			cfg, err := config.Parse([]byte(text), "config.yaml", config.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			changed, err := st.SetConfig(cfg)
			fmt.Fprintf(&results, "config: changed %v, error %v\n", changed, errText(err, rel))
		}
		if text, ok := c.Section("patches.yaml"); ok {
			var list []struct {
				Scope   string `json:"scope"`
				Hook    string `json:"hook"`
				Binding string `json:"binding"`
				Ops     []any  `json:"ops"`
			}
			tree, pos, err := document.Loader{Positions: true}.ParseAny([]byte(text), "patches.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if err := document.Decode(tree, pos, "patches.yaml", &list); err != nil {
				t.Fatal(err)
			}
			for i, p := range list {
				ops := hookPatch(t, p.Hook, p.Ops)
				res, err := st.ApplyPatch(store.Patch{Scope: p.Scope, Hook: p.Hook, Binding: p.Binding,
					Time: time.Date(2026, 1, 2, 3, 4, i, 0, time.UTC), Ops: ops})
				fmt.Fprintf(&results, "patch %d (%s): changed %v, enabled %v, error %v\n", i, p.Hook, res.Changed, res.Enabled, errText(err, rel))
			}
		}
		keys := []string{store.GlobalKey}
		for _, m := range set.Modules {
			keys = append(keys, m.Key)
		}
		var vals, explain bytes.Buffer
		for _, k := range keys {
			fmt.Fprintf(&vals, "# %s\n", k)
			if err := document.Encode(&vals, st.Values(k), document.YAML); err != nil {
				t.Fatal(err)
			}
			for _, p := range st.Patches(k) {
				ops, _ := json.Marshal(p.Ops.Maps())
				fmt.Fprintf(&vals, "# patch %s: %s\n", p.Name(), ops)
			}
			ex, err := st.Explain(k, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ex {
				explain.WriteString(explainLine(e, rel))
			}
		}
		for _, m := range set.Modules {
			on, from := st.EnabledFlag(m)
			fmt.Fprintf(&results, "enabled %s: %v (%s)\n", m.Name, on, rel(from))
			if _, err := st.HelmValues(m.Key); err != nil {
				fmt.Fprintf(&results, "helm values %s: %s\n", m.Name, errText(err, rel))
			}
		}
		golden.Check(t, c.Path, "values", vals.String())
		golden.Check(t, c.Path, "explain", explain.String())
		golden.Check(t, c.Path, "results", results.String())
	})
}

func errText(err error, rel func(string) string) string {
	if err == nil {
		return "<nil>"
	}
	return rel(err.Error())
}

func explainLine(e values.Explanation, rel func(string) string) string {
	var b strings.Builder
	val, _ := json.Marshal(e.Value)
	if e.Deleted {
		val = []byte("(deleted)")
	}
	fmt.Fprintf(&b, "%s = %s <- %s\n", e.Path, val, origin(e.Winner, rel))
	for _, o := range e.Overrode {
		v, _ := json.Marshal(o.Value)
		if o.Deleted {
			v = []byte("(deleted)")
		}
		fmt.Fprintf(&b, "    overrode %s <- %s\n", v, origin(o, rel))
	}
	return b.String()
}

func origin(s values.Setting, rel func(string) string) string {
	o := s.Layer
	if s.Source != "" {
		o += " " + rel(s.Source)
		if s.Line > 0 {
			o += fmt.Sprintf(":%d", s.Line)
		}
	}
	if s.Path != nil {
		o += " at " + s.Path.String()
	}
	return o
}
