package store

import (
	"reflect"
	"testing"

	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/values"
)

var (
	fuzzPaths = []string{"/s/a", "/s/a/b", "/s/a/b/c", "/s/b", "/s/l", "/s/l/0", "/s/l/1", "/s/l/-", "/s/a/10", "/s/a/2"}
	fuzzOps   = []string{"add", "remove", "replace", "move", "copy", "test"}
	fuzzVals  = []any{int64(1), "x", map[string]any{}, map[string]any{"b": int64(2)}, []any{}, []any{int64(1), int64(2)}}
)

// fuzzPatches turns bytes into patches of one to three operations over a
// small set of paths, so that operations often meet.
func fuzzPatches(data []byte) [][]any {
	if len(data) > 64 {
		data = data[:64] // 16 operations: copies double the values
	}
	var out [][]any
	for len(data) >= 4 {
		n := int(data[0]%3) + 1
		var ops []any
		for ; n > 0 && len(data) >= 4; n-- {
			op := fuzzOps[int(data[0])%len(fuzzOps)]
			o := map[string]any{"op": op, "path": fuzzPaths[int(data[1])%len(fuzzPaths)]}
			switch op {
			case "add", "replace", "test":
				o["value"] = fuzzVals[int(data[2])%len(fuzzVals)]
			case "move", "copy":
				o["from"] = fuzzPaths[int(data[3])%len(fuzzPaths)]
			}
			ops = append(ops, o)
			data = data[4:]
		}
		out = append(out, ops)
	}
	return out
}

// FuzzCompact checks compaction's promise: the compacted patches,
// re-applied to the same base, give what the patches gave when applied
// one by one as they were made.
func FuzzCompact(f *testing.F) {
	f.Add([]byte{0, 0, 2, 0, 0, 1, 1, 0, 1, 0, 0, 0})
	f.Add([]byte{0, 4, 5, 0, 0, 7, 0, 0, 0, 5, 0, 0, 1, 5, 0, 0})
	f.Add([]byte{3, 0, 0, 3, 0, 8, 0, 0, 0, 9, 0, 0, 4, 3, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		base := map[string]any{"s": map[string]any{"a": map[string]any{"z": int64(0)}, "l": []any{int64(0)}}}
		cur := values.CopyMaps(base)
		var stored []*storedPatch
		for _, ops := range fuzzPatches(data) {
			jp, err := values.NewJSONPatch(ops, "fuzz", nil)
			if err != nil {
				t.Fatal(err)
			}
			next, err := jp.Apply(values.CopyMaps(cur))
			if err != nil {
				continue // the store refuses it: not stored
			}
			cur = next
			stored = compact(stored, &storedPatch{ops: typed(ops)})
		}
		var all hook.Patch
		for _, p := range stored {
			all = append(all, p.ops...)
		}
		got := values.CopyMaps(base)
		if len(all) > 0 {
			var err error
			if got, err = applyLenient(all, got); err != nil {
				t.Fatalf("compacted patches %v do not apply: %v", all, err)
			}
		}
		if !reflect.DeepEqual(normalize(got), normalize(cur)) {
			t.Fatalf("compacted %v\ngave %v\nwant %v", all, got, cur)
		}
	})
}

// typed is ops as a hook's patch.
func typed(ops []any) hook.Patch {
	out := make(hook.Patch, len(ops))
	for i, o := range ops {
		m := o.(map[string]any)
		out[i].Op, _ = m["op"].(string)
		out[i].Path, _ = m["path"].(string)
		out[i].From, _ = m["from"].(string)
		out[i].Value = m["value"]
	}
	return out
}

func normalize(v any) any {
	jp, _ := values.NewJSONPatch(nil, "n", nil)
	m, _ := jp.Apply(map[string]any{"v": v})
	return m
}
