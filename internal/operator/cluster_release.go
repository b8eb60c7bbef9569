package operator

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"

	"k8s.io/client-go/rest"

	"github.com/strata-dev/strata/internal/operator/release"
)

// openHelmReleases opens the release store on the API server: Helm
// releases in s.Namespace through the Helm SDK. Beside Settings it reads
// addon-operator's HELM_DRIVER and
// HELM_MONITOR_KUBE_CLIENT_QPS/BURST from the environment.
func openHelmReleases(ctx context.Context, s Settings, rc *rest.Config, log *slog.Logger) (releaseStore, error) {
	labels, err := release.ParseLabels(s.CRDExtraLabels)
	if err != nil {
		return releaseStore{}, fmt.Errorf("ADDON_OPERATOR_CRD_EXTRA_LABELS (--crd-extra-labels): %w", err)
	}
	o := release.HelmOptions{
		Namespace:  s.Namespace,
		Driver:     os.Getenv("HELM_DRIVER"),
		MaxHistory: s.HelmHistoryMax,
		// 0 keeps every revision, as addon-operator (and Helm) read it.
		AllHistory:     s.HelmHistoryMax == 0,
		ResourceLabels: labels,
		Logger:         log,
	}
	o.Timeout = s.HelmTimeout // 0: the default
	if v := os.Getenv("HELM_MONITOR_KUBE_CLIENT_QPS"); v != "" {
		q, err := strconv.ParseFloat(v, 32)
		if err != nil || q <= 0 {
			return releaseStore{}, fmt.Errorf("HELM_MONITOR_KUBE_CLIENT_QPS %q: write a positive number like 5", v)
		}
		o.MonitorQPS = float32(q)
	}
	if v := os.Getenv("HELM_MONITOR_KUBE_CLIENT_BURST"); v != "" {
		if o.MonitorBurst, err = strconv.Atoi(v); err != nil || o.MonitorBurst <= 0 {
			return releaseStore{}, fmt.Errorf("HELM_MONITOR_KUBE_CLIENT_BURST %q: write a positive integer like 10", v)
		}
	}
	h, err := release.NewHelm(ctx, rc, o)
	if err != nil {
		return releaseStore{}, err
	}
	return releaseStore{
		store: h,
		renderer: &release.Renderer{
			Namespace:      s.Namespace,
			Capabilities:   h.Capabilities,
			CRDExtraLabels: labels,
			ModuleChecksum: true,
			ResourceLabels: labels,
			Codecs:         s.Codecs,
		},
		checkEvery: ClusterReleaseCheckInterval,
	}, nil
}
