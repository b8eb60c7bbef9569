package cli

import (
	"reflect"
	"testing"
)

func TestSplitSet(t *testing.T) {
	tests := []struct {
		arg  string
		want []setEntry
		err  bool
	}{
		{"a=1", []setEntry{{"a", "1"}}, false},
		{"a=1,b.c=x", []setEntry{{"a", "1"}, {"b.c", "x"}}, false},
		{`a=x\,y`, []setEntry{{"a", "x,y"}}, false},
		{"a={x,y},b=2", []setEntry{{"a", "{x,y}"}, {"b", "2"}}, false},
		{`a\.b=1`, []setEntry{{`a\.b`, "1"}}, false},
		{"a=", []setEntry{{"a", ""}}, false},
		{"a=1=2", []setEntry{{"a", "1=2"}}, false},
		{"a", nil, true},
		{"=1", nil, true},
		{"a=1,", nil, true},
	}
	for _, tc := range tests {
		got, err := splitSet(tc.arg)
		if (err != nil) != tc.err || !tc.err && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("splitSet(%q) = %v, %v; want %v, error %v", tc.arg, got, err, tc.want, tc.err)
		}
	}
}

func FuzzSplitSet(f *testing.F) {
	for _, s := range []string{"a=1,b=2", `a=x\,y`, "a={x,y}", "a", `\`, "{{,}}=,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, arg string) {
		entries, err := splitSet(arg)
		if err != nil {
			return
		}
		for _, e := range entries {
			if e.key == "" {
				t.Fatalf("splitSet(%q): an entry without a key: %v", arg, entries)
			}
		}
	})
}
