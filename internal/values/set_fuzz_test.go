package values_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/strvals"

	"github.com/strata-dev/strata/internal/values"
)

// A setStep is one flag argument of a differential run.
type setStep struct {
	kind values.SetKind
	arg  string
}

// setFakeRead is the --set-file reader of differential runs: it fails for ""
// and for paths holding "!", and otherwise makes up content.
func setFakeRead(path string) ([]byte, error) {
	if path == "" || strings.Contains(path, "!") {
		return nil, fmt.Errorf("cannot read %q", path)
	}
	return []byte("content of " + path), nil
}

// setHelm applies arg the way Helm's flag of that kind does.
func setHelm(dest map[string]any, kind values.SetKind, arg string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("helm panicked: %v", r)
		}
	}()
	switch kind {
	case values.SetValue:
		return strvals.ParseInto(arg, dest)
	case values.SetString:
		return strvals.ParseIntoString(arg, dest)
	case values.SetJSON:
		return strvals.ParseJSON(arg, dest)
	case values.SetFile:
		return strvals.ParseIntoFile(arg, dest, func(rs []rune) (any, error) {
			b, err := setFakeRead(string(rs))
			if err != nil {
				return nil, err
			}
			return string(b), nil
		})
	case values.SetLiteral:
		return strvals.ParseLiteralInto(arg, dest)
	}
	return errors.New("unknown kind")
}

// setOurLimit reports whether err is one of the limits Helm does not have.
func setOurLimit(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "steps deep") || strings.Contains(msg, "adds more than") ||
		strings.Contains(msg, "bytes, over the limit")
}

// setCompareWithHelm applies steps in turn with Helm and with ApplySet. As
// long as Helm succeeds, ApplySet must succeed with an equal tree (numbers
// compared as float64 once --set-json was used), and it must never change a
// list it was given.
func setCompareWithHelm(t testing.TB, steps ...setStep) {
	t.Helper()
	helm, ours := map[string]any{}, map[string]any{}
	usedJSON := false
	for _, s := range steps {
		herr := setHelm(helm, s.kind, s.arg)
		lists := setListsIn(ours, nil)
		before := make([][]any, len(lists))
		for i, l := range lists {
			before[i] = append([]any(nil), l...)
		}
		oerr := values.ApplySet(ours, s.kind, s.arg, setFakeRead)
		for i, l := range lists {
			for j := range l {
				if !setSame(l[j], before[i][j]) {
					t.Fatalf("%s %q changed a list it was given: element %d was %#v, is %#v", s.kind.Flag(), s.arg, j, before[i][j], l[j])
				}
			}
		}
		if oerr != nil && !errors.Is(oerr, values.ErrBadSet) {
			t.Fatalf("%s %q: error %q does not wrap ErrBadSet", s.kind.Flag(), s.arg, oerr)
		}
		if herr != nil {
			return // nothing more is required of us
		}
		if oerr != nil {
			if setOurLimit(oerr) {
				return
			}
			t.Fatalf("%s %q: Helm gives %v, we fail: %v", s.kind.Flag(), s.arg, helm, oerr)
		}
		usedJSON = usedJSON || s.kind == values.SetJSON
		want, got := any(helm), any(ours)
		if usedJSON {
			want, got = setFloats(want), setFloats(got)
		}
		if diff := setDiff(want, got); diff != "" {
			t.Fatalf("%s %q: (-helm +ours):\n%s", s.kind.Flag(), s.arg, diff)
		}
	}
}

// setListsIn appends the non-empty lists in v to out.
func setListsIn(v any, out [][]any) [][]any {
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			out = setListsIn(e, out)
		}
	case []any:
		if len(v) > 0 {
			out = append(out, v)
		}
		for _, e := range v {
			out = setListsIn(e, out)
		}
	}
	return out
}

// setSame reports whether a and b are the same value, or the same map or list.
func setSame(a, b any) bool {
	switch a.(type) {
	case map[string]any, []any:
		ra, rb := reflect.ValueOf(a), reflect.ValueOf(b)
		return ra.Type() == rb.Type() && ra.Len() == rb.Len() && ra.UnsafePointer() == rb.UnsafePointer()
	}
	return a == b
}

// setFloats returns a copy of v with every number a float64, as Helm's
// --set-json makes them.
func setFloats(v any) any {
	switch v := v.(type) {
	case int64:
		return float64(v)
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return v
		}
		return f
	case map[string]any:
		c := make(map[string]any, len(v))
		for k, e := range v {
			c[k] = setFloats(e)
		}
		return c
	case []any:
		c := make([]any, len(v))
		for i, e := range v {
			c[i] = setFloats(e)
		}
		return c
	}
	return v
}

// setQuirks are inputs for the differential test beyond the table cases.
var setQuirks = []string{
	"", ",", ",,", "=", "==", "[", "]", ".", "..", "\\", "a\\", "a=\\", "a=1\\,", "[0]", "[0]=1", "].", "]={}].",
	"a.b.", "a..b=1", ".a=1", "a.[0]=1", "a[0].[1]=2", "a[0]]=1", "a[[0]]=1", "a[0][=1", "a[0][x", "a[1\\]=2",
	"a[\\1]=2", "a[ 1]=2", "a[1 ]=2", "a[0x1]=2", "a[1e2]=2", "a[0].b[1].c=3,a[0].b[0]=4", "a[1].b=1,a[0]=2,a[1].c=3",
	"a=1,a.b=2", "a.b=1,a=2", "a={1,2},a[3]=x", "a={1,2},a[0].b=x", "a[0]={x},a[0][1]=y", "a=null,a[0]=1",
	"a={,}", "a={,", "a={a\\,b,c\\}}", "a={x}}", "a={x},,b=1", "a={x}=1", "a=x,b", "a=x,b.", "a=x,b[", "a=x,b[0]",
	"a[2]=x,a[0].", "a[0][0]=x,a[0][0].", "a[0][0]=x,a[0][1][", "a[0]=x,a[0][0]=y", "a[0].b=1,a[0][0]=2",
	"a=TrUe,b=nUlL,c=-0,d=+0,e=00,f=-,g=+,h=0x10,i=1_0", "a=\u00a0", "a\u00a0=b", "a=\xff\xfe,\xff=1",
	"a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z.aa.ab.ac.ad=1",
	"a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z.aa.ab.ac.ad.ae=1",
	"a[0].b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z.aa.ab.ac.ad.ae=1",
}

var setJSONQuirks = []string{
	"a=1 2", "a=1,,b=2", "a=[1,2],b", "a= \t\n", "a=\u00a0 1", "a=\"x\"\"y\"", "a={}b=1", "a=nullx=1", "a=-", "a=1.",
	"a=01", "a=1e", "a=[", "a={\"b\":1,\"b\":2}", "a=\"\\u00e9\xff\"", "a=123456789012345678901234567890",
	"a=-9223372036854775809", "a=1e308,b=-1e-400", "a=[[[[1]]]],a[0][0][1]=2", "a[0]=1,a[0].b=2", "a={\"x\":1},a.y=2",
}

func TestApplySetMatchesHelm(t *testing.T) {
	for _, c := range setCases {
		if c.kind == values.SetFile {
			continue // the table reads real files
		}
		t.Run(c.name, func(t *testing.T) {
			if c.before != "" {
				setCompareWithHelm(t, setStep{values.SetJSON, c.before}, setStep{c.kind, c.arg})
			} else {
				setCompareWithHelm(t, setStep{c.kind, c.arg})
			}
		})
	}
	for _, q := range setQuirks {
		for k := values.SetValue; k <= values.SetLiteral; k++ {
			setCompareWithHelm(t, setStep{k, q})
		}
		// And on top of what other quirks leave behind.
		for _, r := range setQuirks[:20] {
			setCompareWithHelm(t, setStep{values.SetValue, r}, setStep{values.SetValue, q})
		}
	}
	for _, q := range setJSONQuirks {
		setCompareWithHelm(t, setStep{values.SetJSON, q})
	}
	setCompareWithHelm(t, setStep{values.SetFile, "a=x,b={y,z},c=,d[1]=w"})
	setCompareWithHelm(t, setStep{values.SetFile, "a=x!"})
}

// TestApplySetMatchesHelmRandom compares with Helm on arguments made of
// random pieces of the syntax, which reach deeper than the fuzzer's bytes.
func TestApplySetMatchesHelmRandom(t *testing.T) {
	pieces := []string{"a", "b", "", ".", "[0]", "[1]", "[2]", "[", "]", "=", "=", ",", "{", "}", `\`, "1", "0",
		"null", "x", " ", `"`, ":", "[]", "{}", `"s"`, "true", "-", "é", "\xff",
		"a[0].b", "a.b", "a[0][1]", "=,", "b=", `\,`, `\.`, "x=1", "a[0]=", "[0]."}
	r := rand.New(rand.NewPCG(3, 4))
	arg := func() string {
		var b strings.Builder
		for range 1 + r.IntN(12) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		return b.String()
	}
	n := 100000
	if testing.Short() {
		n = 5000
	}
	for range n {
		k1, k2 := values.SetKind(r.IntN(5)), values.SetKind(r.IntN(5))
		setCompareWithHelm(t, setStep{k1, arg()}, setStep{k2, arg()})
	}
}

// FuzzApplySet applies two arguments in turn with Helm and with ApplySet.
// Where Helm succeeds we must succeed with the same tree; where Helm fails
// or panics we must merely not panic.
func FuzzApplySet(f *testing.F) {
	for _, c := range setCases {
		if len(c.arg) > 4096 {
			continue
		}
		if c.before != "" {
			f.Add(uint8(values.SetJSON), c.before, uint8(c.kind), c.arg)
		} else {
			f.Add(uint8(c.kind), c.arg, uint8(values.SetValue), "")
		}
	}
	for _, q := range setQuirks {
		f.Add(uint8(values.SetValue), q, uint8(values.SetString), q)
	}
	for _, q := range setJSONQuirks {
		f.Add(uint8(values.SetJSON), q, uint8(values.SetValue), q)
	}
	f.Fuzz(func(t *testing.T, k1 uint8, a1 string, k2 uint8, a2 string) {
		kind := func(k uint8) values.SetKind { return values.SetKind(k % 5) }
		setCompareWithHelm(t, setStep{kind(k1), a1}, setStep{kind(k2), a2})
	})
}
