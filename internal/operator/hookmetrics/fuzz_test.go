package hookmetrics_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/hookmetrics"
)

// FuzzApply applies the operations of two metrics files, as two runs of
// two hooks: whatever Apply accepts, the registry gathers.
func FuzzApply(f *testing.F) {
	f.Add([]byte(`{"group":"g","name":"m","action":"add","value":1,"labels":{"k":"a"}}`), []byte(`{"group":"g","action":"expire"}`))
	f.Add([]byte(`{"name":"h","action":"observe","value":3,"buckets":[1,5]}`), []byte(`{"name":"h","action":"observe","value":9,"buckets":[1,5]}`))
	f.Add([]byte(`{"name":"s","set":1}`), []byte(`{"name":"s","add":1}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		c := hookmetrics.NewCollector(hookmetrics.Limits{MaxSeries: 1000})
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(c)
		for i, data := range [][]byte{a, b} {
			ops, err := hook.ParseMetrics(data, "fuzz")
			if err != nil {
				continue
			}
			if i == 0 {
				_ = c.Apply("h1", ops)
			} else {
				_ = c.ApplyModule("mod", "h2", ops)
			}
			if _, err := reg.Gather(); err != nil {
				t.Fatalf("Gather after Apply: %v", err)
			}
		}
	})
}
