package clustertest_test

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/strata-dev/strata/internal/eventually"
	"github.com/strata-dev/strata/internal/layers/controller"
	"github.com/strata-dev/strata/internal/layers/v1alpha1"
)

// BenchmarkControllerLatency measures the time from writing a change to
// one layer of an App to the moment the API server sends the updated
// output ConfigMap to a watcher, once per iteration. The App has a Catalog
// and 10 extraConfigs of 100 keys each; every iteration changes one key of
// the middle layer. Besides ns/op (the mean) it reports the median and the
// 99th percentile:
//
//	go test -run '^$' -bench ControllerLatency -benchtime 200x ./internal/layers/controller/clustertest
func BenchmarkControllerLatency(b *testing.B) {
	const layersN, keys = 10, 100
	// -count runs this again against the same control plane.
	ns := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	e := setup(b, ns)
	e.start(controller.Manager{Namespace: ns, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})

	layer := func(i, rev int) string {
		var sb strings.Builder
		for k := range keys {
			fmt.Fprintf(&sb, "key%03d: layer %d\n", k, i)
		}
		fmt.Fprintf(&sb, "rev%d: %d\n", i, rev)
		return sb.String()
	}
	e.create(configMap(ns, "catalog-values", "base: true\n"), catalog(ns, "giantswarm", "catalog-values"))
	a := app(ns, "bench", "giantswarm")
	for i := range layersN {
		name := fmt.Sprintf("layer-%02d", i)
		e.create(configMap(ns, name, layer(i, 0)))
		a.Spec.ExtraConfigs = append(a.Spec.ExtraConfigs, v1alpha1.ExtraConfig{Name: name, Namespace: ns, Priority: 10 + i*10})
	}
	e.create(a)
	const mid = layersN / 2
	eventually.Within(b, deadline, "the first output", func() (bool, string) {
		cm, _ := e.output("bench")
		return cm != nil && strings.Contains(cm.Data["values"], fmt.Sprintf("rev%d: 0\n", mid)), "no output yet"
	})

	ctx := b.Context()
	cms := e.c.Client.CoreV1().ConfigMaps(ns)
	w, err := cms.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "bench-chart-values").String()})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	target, err := cms.Get(ctx, fmt.Sprintf("layer-%02d", mid), metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	var lat []time.Duration
	for i := 1; b.Loop(); i++ {
		want := fmt.Sprintf("rev%d: %d\n", mid, i)
		target.Data["values"] = layer(mid, i)
		start := time.Now()
		if target, err = cms.Update(ctx, target, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
		timeout := time.After(deadline)
	wait:
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					b.Fatal("the watch of the output ended")
				}
				if cm, isCM := ev.Object.(*corev1.ConfigMap); isCM && ev.Type == watch.Modified && strings.Contains(cm.Data["values"], want) {
					break wait
				}
			case <-timeout:
				b.Fatalf("change %d did not reach the output within %v", i, deadline)
			}
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(pct(1), "max-ms")
}
