package helmrender

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
)

// TestCloneChartFields fails when Helm adds a field to a type CloneChart
// copies: the new field must be copied too (deeply, if it holds a map, a
// slice or a pointer).
func TestCloneChartFields(t *testing.T) {
	known := map[reflect.Type][]string{
		reflect.TypeFor[chart.Chart]():      {"Raw", "Metadata", "Lock", "Templates", "Values", "Schema", "SchemaModTime", "Files", "ModTime", "parent", "dependencies"},
		reflect.TypeFor[chart.Metadata]():   {"Name", "Home", "Sources", "Version", "Description", "Keywords", "Maintainers", "Icon", "APIVersion", "Condition", "Tags", "AppVersion", "Deprecated", "Annotations", "KubeVersion", "Dependencies", "Type"},
		reflect.TypeFor[chart.Maintainer](): {"Name", "Email", "URL"},
		reflect.TypeFor[chart.Dependency](): {"Name", "Version", "Repository", "Condition", "Tags", "Enabled", "ImportValues", "Alias"},
		reflect.TypeFor[chart.Lock]():       {"Generated", "Digest", "Dependencies"},
		reflect.TypeFor[common.File]():      {"Name", "Data", "ModTime"},
	}
	for typ, want := range known {
		var got []string
		for f := range typ.Fields() {
			got = append(got, f.Name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s has the fields %v; CloneChart knows %v: update CloneChart and this list", typ, got, want)
		}
	}
}

// TestCloneChart: the copy equals the original, field for field, down the
// subcharts, and shares no map, slice, byte slice or pointer with it.
func TestCloneChart(t *testing.T) {
	ch, err := loader.LoadDir("../helmplugin/testdata/bench/subchart") // helmplugin's benchmark chart
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Dependencies()) == 0 || len(ch.Templates) == 0 || len(ch.Values) == 0 {
		t.Fatal("the test chart should have subcharts, templates and values")
	}
	// Fill what the test chart leaves empty, so every field is compared.
	now := time.Now()
	dep := &chart.Dependency{Name: "d", Tags: []string{"t"}, ImportValues: []any{"x", map[string]any{"child": "a", "parent": "b"}}}
	ch.Metadata.Sources = []string{"s"}
	ch.Metadata.Keywords = []string{"k"}
	ch.Metadata.Maintainers = []*chart.Maintainer{{Name: "m"}, nil}
	ch.Metadata.Annotations = map[string]string{"a": "b"}
	ch.Metadata.Dependencies = append(ch.Metadata.Dependencies, dep, nil)
	ch.Lock = &chart.Lock{Generated: now, Digest: "x", Dependencies: []*chart.Dependency{dep}}
	ch.Schema = []byte(`{}`)
	ch.SchemaModTime = now
	ch.Files = append(ch.Files, &common.File{Name: "f", Data: []byte("x"), ModTime: now}, nil)
	ch.Values["nested"] = map[string]any{"list": []any{map[string]any{"a": 1.0}, "s"}, "table": common.Values{"b": true}}

	clone := CloneChart(ch)
	compareCharts(t, ch, clone, ch.Name())

	seen := map[uintptr]string{}
	references(reflect.ValueOf(ch), "original", seen)
	shared := map[uintptr]string{}
	references(reflect.ValueOf(clone), "clone", shared)
	for addr, where := range shared {
		if orig, ok := seen[addr]; ok {
			t.Errorf("the clone's %s is the original's %s", where, orig)
		}
	}
	if len(shared) < 50 {
		t.Fatalf("only %d references walked in the clone; the walk is broken", len(shared))
	}
}

func compareCharts(t *testing.T, want, got *chart.Chart, path string) {
	t.Helper()
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(chart.Chart{})); diff != "" {
		t.Errorf("clone of %s differs (-original +clone):\n%s", path, diff)
	}
	if (want.Parent() == nil) != (got.Parent() == nil) {
		t.Errorf("clone of %s: parent %v, want %v", path, got.Parent() != nil, want.Parent() != nil)
	}
	if len(want.Dependencies()) != len(got.Dependencies()) {
		t.Fatalf("clone of %s has %d subcharts, want %d", path, len(got.Dependencies()), len(want.Dependencies()))
	}
	for i, d := range want.Dependencies() {
		c := got.Dependencies()[i]
		if c.Parent() != got {
			t.Errorf("clone of %s: subchart %s's parent is not the clone", path, c.Name())
		}
		compareCharts(t, d, c, path+"/"+d.Name())
	}
}

// references records, by address, every map, non-empty slice and pointer
// reachable from v (unexported fields too), with where it was found.
func references(v reflect.Value, where string, into map[uintptr]string) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		if _, ok := into[v.Pointer()]; ok {
			return // a cycle (a subchart's parent), or shared within the tree
		}
		into[v.Pointer()] = where
		references(v.Elem(), where, into)
	case reflect.Map:
		if v.IsNil() {
			return
		}
		if _, ok := into[v.Pointer()]; ok {
			return
		}
		into[v.Pointer()] = where
		for it := v.MapRange(); it.Next(); {
			references(it.Value(), where+"["+it.Key().String()+"]", into)
		}
	case reflect.Slice:
		if v.Cap() == 0 {
			return
		}
		into[v.Pointer()] = where
		for i := range v.Len() {
			references(v.Index(i), where+"[]", into)
		}
	case reflect.Interface:
		if !v.IsNil() {
			references(v.Elem(), where, into)
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			return // a value; its location pointer is shared and immutable
		}
		for i := range v.NumField() {
			references(v.Field(i), where+"."+v.Type().Field(i).Name, into)
		}
	}
}
