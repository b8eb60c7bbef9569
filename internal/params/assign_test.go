package params_test

import (
	"reflect"
	"testing"

	"github.com/strata-dev/strata/internal/params"
)

func TestBuilder(t *testing.T) {
	type op struct{ kind, arg string }
	tests := []struct {
		name    string
		ops     []op
		want    []params.Parameter
		wantErr string
	}{
		{name: "none", want: nil},
		{name: "string", ops: []op{{"s", "a=b=c"}}, want: []params.Parameter{{Name: "a", String: ptr("b=c")}}},
		{name: "empty string value", ops: []op{{"s", "a="}}, want: []params.Parameter{{Name: "a", String: ptr("")}}},
		{name: "later string wins", ops: []op{{"s", "a=1"}, {"s", "a=2"}}, want: []params.Parameter{{Name: "a", String: ptr("2")}}},
		{name: "array appends", ops: []op{{"a", "l=1,2"}, {"a", "l=3"}}, want: []params.Parameter{{Name: "l", Array: []string{"1", "2", "3"}}}},
		{name: "array empty item", ops: []op{{"a", "l="}}, want: []params.Parameter{{Name: "l", Array: []string{""}}}},
		{name: "map entries", ops: []op{{"m", "m.k=v"}, {"m", "m.a.b=x=y"}}, want: []params.Parameter{{Name: "m", Map: map[string]string{"k": "v", "a.b": "x=y"}}}},
		{name: "one parameter, several fields, first-seen order",
			ops:  []op{{"s", "b=1"}, {"a", "a=x"}, {"m", "b.k=v"}},
			want: []params.Parameter{{Name: "b", String: ptr("1"), Map: map[string]string{"k": "v"}}, {Name: "a", Array: []string{"x"}}}},
		{name: "string without =", ops: []op{{"s", "a"}}, wantErr: `"a": write name=value`},
		{name: "string without name", ops: []op{{"s", "=v"}}, wantErr: `"=v": write name=value`},
		{name: "array without =", ops: []op{{"a", "l"}}, wantErr: `"l": write name=v1,v2`},
		{name: "map without key", ops: []op{{"m", "m=v"}}, wantErr: `"m=v": write name.key=value`},
		{name: "map with empty key", ops: []op{{"m", "m.=v"}}, wantErr: `"m.=v": write name.key=value`},
		{name: "map without name", ops: []op{{"m", ".k=v"}}, wantErr: `".k=v": write name.key=value`},
		{name: "map without =", ops: []op{{"m", "m.k"}}, wantErr: `"m.k": write name.key=value`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b params.Builder
			var err error
			for _, o := range tc.ops {
				switch o.kind {
				case "s":
					err = b.String(o.arg)
				case "a":
					err = b.Array(o.arg)
				case "m":
					err = b.MapEntry(o.arg)
				}
				if err != nil {
					break
				}
			}
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := b.Parameters(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Parameters() = %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

func TestAppEnv(t *testing.T) {
	tests := []struct{ in, want, wantErr string }{
		{in: "FOO=bar", want: "ARGOCD_ENV_FOO=bar"},
		{in: "FOO=", want: "ARGOCD_ENV_FOO="},
		{in: "FOO=a=b", want: "ARGOCD_ENV_FOO=a=b"},
		{in: "FOO", wantErr: `"FOO": write NAME=VALUE`},
		{in: "=x", wantErr: `"=x": write NAME=VALUE`},
	}
	for _, tc := range tests {
		got, err := params.AppEnv(tc.in)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("AppEnv(%q) error = %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("AppEnv(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}
