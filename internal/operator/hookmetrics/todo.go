package hookmetrics

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-dev/strata/internal/operator/hook"
)

type family struct{}
type seriesKey struct{}

func (c *Collector) apply(hookName string, ops []hook.MetricOperation) error {
	return errors.New("hookmetrics: not implemented yet")
}
func (c *Collector) collect(ch chan<- prometheus.Metric) {}
