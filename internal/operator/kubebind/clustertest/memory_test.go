package clustertest_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/kube/kubetest"
	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/kubebind"
)

// BenchmarkHeldMemory measures the heap a binding over big objects holds
// once synchronized (50 ConfigMaps of 200 KiB; jqFilter .metadata.name),
// with keepFullObjectsInMemory true and false:
//
//	go test -run '^$' -bench HeldMemory -benchtime 1x ./internal/operator/kubebind/clustertest/
func BenchmarkHeldMemory(b *testing.B) {
	const n, size = 50, 200 << 10
	c := kubetest.Shared(b)
	e := &env{c: c}
	ns := unique("kb-bench-")
	e.applyB(b, namespaces, fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n", ns))
	big := strings.Repeat("x", size)
	for i := range n {
		e.applyB(b, configMaps, cm(ns, fmt.Sprintf("big%d", i), "", big))
	}
	for _, keep := range []bool{true, false} {
		b.Run(fmt.Sprintf("keepFullObjectsInMemory=%v", keep), func(b *testing.B) {
			cfg, err := hook.ParseConfig(fmt.Appendf(nil, "configVersion: v1\nkubernetes:\n- kind: ConfigMap\n  keepFullObjectsInMemory: %v\n  jqFilter: .metadata.name\n  namespace: {nameSelector: {matchNames: [%s]}}\n", keep, ns), hook.Global, "h")
			if err != nil {
				b.Fatal(err)
			}
			var held uint64
			for range b.N {
				src, err := kubebind.NewClusterSource(c.Config)
				if err != nil {
					b.Fatal(err)
				}
				before := heap()
				ctx, cancel := context.WithCancel(context.Background())
				m := kubebind.NewMonitor(cfg.Kubernetes[0], src)
				sync, err := m.Start(ctx, nil)
				if err != nil {
					b.Fatal(err)
				}
				if len(sync.Objects) != n {
					b.Fatalf("%d objects, want %d", len(sync.Objects), n)
				}
				after := heap()
				held = after - min(before, after)
				runtime.KeepAlive(m)
				runtime.KeepAlive(src)
				cancel()
			}
			b.ReportMetric(float64(held), "held-bytes")
			b.ReportMetric(float64(n*size), "objects-bytes")
		})
	}
}

// heap is the live heap after a collection.
func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
