package operator_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/operator"
)

func TestSettingsFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    func(*operator.Settings)
		wantErr string
	}{
		{"defaults", nil, func(*operator.Settings) {}, ""},
		{"documented names", map[string]string{
			"MODULES_DIR": "/m1:/m2", "GLOBAL_HOOKS_DIR": "/g", "UNNUMBERED_MODULE_ORDER": "7",
			"ADDON_OPERATOR_NAMESPACE": "ns", "ADDON_OPERATOR_CONFIG_MAP": "cm",
			"ADDON_OPERATOR_LISTEN_ADDRESS": "127.0.0.1", "ADDON_OPERATOR_LISTEN_PORT": "9090",
			"ADDON_OPERATOR_PROMETHEUS_METRICS_PREFIX": "dev_cluster_", "LOG_TYPE": "json", "LOG_LEVEL": "debug",
			"LOG_NO_TIME": "true", "DEBUG_UNIX_SOCKET": "/tmp/s", "ADDON_OPERATOR_CRD_EXTRA_LABELS": "a=b",
			"ADDON_OPERATOR_CRD_FILTER_PREFIXES": "x-", "HELM_HISTORY_MAX": "3", "HELM_IGNORE_RELEASE": "self",
		}, func(s *operator.Settings) {
			s.ModulesDir, s.GlobalHooksDir, s.UnnumberedModuleOrder = "/m1:/m2", "/g", 7
			s.Namespace, s.ConfigMapName, s.ListenAddress, s.ListenPort = "ns", "cm", "127.0.0.1", "9090"
			s.MetricsPrefix, s.LogType, s.LogLevel, s.LogNoTime, s.DebugUnixSocket = "dev_cluster_", "json", "debug", true, "/tmp/s"
			s.CRDExtraLabels, s.CRDFilterPrefixes, s.HelmHistoryMax, s.HelmIgnoreRelease = "a=b", "x-", 3, "self"
		}, ""},
		{"current releases' spellings win", map[string]string{
			"MODULES_DIR": "/old", "ADDON_OPERATOR_MODULES_DIR": "/new",
			"GLOBAL_HOOKS_DIR": "/old", "ADDON_OPERATOR_GLOBAL_HOOKS_DIR": "/new",
			"UNNUMBERED_MODULE_ORDER": "1", "ADDON_OPERATOR_UNNUMBERED_MODULES_ORDER": "9",
		}, func(s *operator.Settings) {
			s.ModulesDir, s.GlobalHooksDir, s.UnnumberedModuleOrder = "/new", "/new", 9
		}, ""},
		{"in a pod", map[string]string{"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, func(s *operator.Settings) { s.InCluster = true }, ""},
		{"queue action metrics off", map[string]string{"QUEUE_ACTIONS_METRICS": "no"}, func(s *operator.Settings) { s.NoQueueActionMetrics = true }, ""},
		{"queue action metrics on", map[string]string{"QUEUE_ACTIONS_METRICS": "yes"}, func(*operator.Settings) {}, ""},
		{"bad number", map[string]string{"UNNUMBERED_MODULE_ORDER": "ten"}, nil, "environment variable UNNUMBERED_MODULE_ORDER: \"ten\" is not an integer"},
		{"bad bool", map[string]string{"LOG_NO_TIME": "maybe"}, nil, "environment variable LOG_NO_TIME: \"maybe\" is not true or false"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := operator.DefaultSettings()
			err := got.FromEnv(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("FromEnv: %v, want %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := operator.DefaultSettings()
			tc.want(&want)
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("FromEnv (-want +got):\n%s", d)
			}
		})
	}
}

func TestSettingsCheck(t *testing.T) {
	tests := []struct {
		name string
		set  func(*operator.Settings)
		want string // substring of the error; "" for none
	}{
		{"local by default", func(*operator.Settings) {}, ""},
		{"kubeconfig", func(s *operator.Settings) { s.KubeConfig = "/k" }, ""},
		{"kubeconfig with --local", func(s *operator.Settings) { s.KubeConfig, s.Local = "/k", true }, ""},
		{"in a pod", func(s *operator.Settings) { s.InCluster = true }, ""},
		{"nothing to run", func(s *operator.Settings) { s.ModulesDir, s.GlobalHooksDir = "", "" }, "set MODULES_DIR"},
		{"bad port", func(s *operator.Settings) { s.ListenPort = "http" }, "listen port \"http\""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := operator.DefaultSettings()
			tc.set(&s)
			err := s.Check()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Check: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Check: %v, want an error with %q", err, tc.want)
			}
		})
	}
	if got := (&operator.Settings{ModulesDir: "a::b: "}).ModulesDirs(); strings.Join(got, ",") != "a,b" {
		t.Errorf("ModulesDirs = %v, want [a b]", got)
	}
}
