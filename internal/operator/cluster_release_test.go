package operator

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

// The Helm variables openHelmReleases reads are checked before the cluster
// is reached; an error names the variable and what to write. (HELM_TIMEOUT
// is a setting: TestSettingsFromEnv.)
func TestOpenHelmReleasesEnv(t *testing.T) {
	for _, tc := range []struct {
		name, env, value, want string
	}{
		{"qps", "HELM_MONITOR_KUBE_CLIENT_QPS", "0", "HELM_MONITOR_KUBE_CLIENT_QPS \"0\": write a positive number"},
		{"burst", "HELM_MONITOR_KUBE_CLIENT_BURST", "x", "HELM_MONITOR_KUBE_CLIENT_BURST \"x\": write a positive integer"},
		{"driver", "HELM_DRIVER", "sql", "HELM_DRIVER \"sql\": use secret (the default), configmap or memory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(tc.env, tc.value)
			s := DefaultSettings()
			s.Namespace = "ops"
			_, err := openHelmReleases(context.Background(), s, &rest.Config{Host: "https://127.0.0.1:1"}, slog.New(slog.DiscardHandler))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("openHelmReleases with %s=%s = %v, want an error containing %q", tc.env, tc.value, err, tc.want)
			}
		})
	}
	s := DefaultSettings()
	s.Namespace, s.CRDExtraLabels = "ops", "novalue"
	if _, err := openHelmReleases(context.Background(), s, &rest.Config{Host: "https://127.0.0.1:1"}, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "ADDON_OPERATOR_CRD_EXTRA_LABELS") {
		t.Errorf("openHelmReleases with bad CRD extra labels = %v, want an error naming ADDON_OPERATOR_CRD_EXTRA_LABELS", err)
	}
}
