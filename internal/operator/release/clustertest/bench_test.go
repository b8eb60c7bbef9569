package clustertest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/operator/module"
	"github.com/strata-dev/strata/internal/operator/release"
)

// BenchmarkConvergeNoop measures one converge of 50 unchanged modules (a
// ConfigMap and a ServiceAccount each) on the Helm store: render, read the
// release, check its resources, no upgrade — a no-op restart's Helm work:
//
//	go test -run '^$' -bench ConvergeNoop -benchtime 5x ./internal/operator/release/clustertest
func BenchmarkConvergeNoop(b *testing.B) {
	e, mods := benchModules(b)
	e.convergeAll(mods, true)
	b.ResetTimer()
	for b.Loop() {
		e.convergeAll(mods, false)
	}
}

// BenchmarkConvergeInstall measures the install of the same 50 modules,
// each iteration in a namespace of its own (a cold start's Helm work):
//
//	go test -run '^$' -bench ConvergeInstall -benchtime 3x ./internal/operator/release/clustertest
func BenchmarkConvergeInstall(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		e, mods := benchModules(b)
		b.StartTimer()
		e.convergeAll(mods, true)
	}
}

// benchModules makes a namespace and 50 modules.
func benchModules(b *testing.B) (*env, []*module.Module) {
	e := setup(b, release.HelmOptions{})
	var mods []*module.Module
	for i := range 50 {
		name := fmt.Sprintf("mod%03d", i)
		mods = append(mods, e.module(name, map[string]string{
			"templates/cm.yaml": strings.ReplaceAll(cmTemplate, ".Values.app.x", ".Values."+name+".x"),
			"templates/sa.yaml": "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: " + name + "\n",
		}))
	}
	return e, mods
}

// convergeAll converges each module, one after the other.
func (e *env) convergeAll(mods []*module.Module, wantUpgrade bool) {
	b := e.t
	for _, m := range mods {
		r, err := e.rnd.Render(b.Context(), m, map[string]any{m.Key: map[string]any{"x": "1"}})
		if err != nil {
			b.Fatal(err)
		}
		res, err := release.Converge(b.Context(), e.store, r)
		if err != nil {
			b.Fatal(err)
		}
		if res.Upgraded != wantUpgrade {
			b.Fatalf("Converge(%s) = %+v, want upgraded %v", m.Name, res, wantUpgrade)
		}
	}
}
