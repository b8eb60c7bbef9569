package operator_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/operator"
	"github.com/strata-dev/strata/internal/operator/webhook"
)

func TestSettingsFromEnv(t *testing.T) {
	// Not this machine's service account, if it runs in a pod.
	old := operator.ServiceAccountNamespaceFile
	t.Cleanup(func() { operator.ServiceAccountNamespaceFile = old })
	operator.ServiceAccountNamespaceFile = filepath.Join(t.TempDir(), "none")
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
		{"webhook servers", map[string]string{
			"VALIDATING_WEBHOOK_CONFIGURATION_NAME": "ao", "VALIDATING_WEBHOOK_SERVICE_NAME": "ao-validating",
			"VALIDATING_WEBHOOK_SERVER_CERT": "/v/tls.crt", "VALIDATING_WEBHOOK_SERVER_KEY": "/v/tls.key", "VALIDATING_WEBHOOK_CA": "/v/ca.crt",
			"VALIDATING_WEBHOOK_CLIENT_CA": "/v/c1.crt, /v/c2.crt", "VALIDATING_WEBHOOK_FAILURE_POLICY": "Ignore",
			"VALIDATING_WEBHOOK_LISTEN_PORT": "8443", "VALIDATING_WEBHOOK_LISTEN_ADDRESS": "127.0.0.1", "STRATA_VALIDATING_WEBHOOK_URL": "https://op:8443",
			"CONVERSION_WEBHOOK_SERVICE_NAME": "ao-conversion", "CONVERSION_WEBHOOK_SERVER_CERT": "/c/tls.crt", "CONVERSION_WEBHOOK_SERVER_KEY": "/c/tls.key",
			"CONVERSION_WEBHOOK_CA": "/c/ca.crt", "CONVERSION_WEBHOOK_CLIENT_CA": "/c/c.crt", "CONVERSION_WEBHOOK_LISTEN_PORT": "8444",
			"CONVERSION_WEBHOOK_LISTEN_ADDRESS": "10.0.0.1", "STRATA_CONVERSION_WEBHOOK_URL": "https://op:8444/",
		}, func(s *operator.Settings) {
			s.Webhooks.FailurePolicy = "Ignore"
			s.Webhooks.Validating = webhook.ServerSettings{ConfigurationName: "ao", ServiceName: "ao-validating", ServerCert: "/v/tls.crt", ServerKey: "/v/tls.key",
				CA: "/v/ca.crt", ClientCA: []string{"/v/c1.crt", "/v/c2.crt"}, ListenPort: "8443", ListenAddress: "127.0.0.1", URL: "https://op:8443"}
			s.Webhooks.Conversion = webhook.ServerSettings{ServiceName: "ao-conversion", ServerCert: "/c/tls.crt", ServerKey: "/c/tls.key",
				CA: "/c/ca.crt", ClientCA: []string{"/c/c.crt"}, ListenPort: "8444", ListenAddress: "10.0.0.1", URL: "https://op:8444/"}
		}, ""},
		{"current releases' spellings win", map[string]string{
			"MODULES_DIR": "/old", "ADDON_OPERATOR_MODULES_DIR": "/new",
			"GLOBAL_HOOKS_DIR": "/old", "ADDON_OPERATOR_GLOBAL_HOOKS_DIR": "/new",
			"UNNUMBERED_MODULE_ORDER": "1", "ADDON_OPERATOR_UNNUMBERED_MODULES_ORDER": "9",
		}, func(s *operator.Settings) {
			s.ModulesDir, s.GlobalHooksDir, s.UnnumberedModuleOrder = "/new", "/new", 9
		}, ""},
		// addon-operator v1.24's own test: shell-operator's variables are
		// read, and addon-operator's win over them.
		{"shell-operator's names", map[string]string{
			"SHELL_OPERATOR_HOOKS_DIR": "/sh/h", "SHELL_OPERATOR_TMP_DIR": "/sh/t", "SHELL_OPERATOR_LISTEN_ADDRESS": "10.0.0.2",
			"SHELL_OPERATOR_LISTEN_PORT": "9700", "SHELL_OPERATOR_PROMETHEUS_METRICS_PREFIX": "sh_", "SHELL_OPERATOR_NAMESPACE": "sh-ns",
		}, func(s *operator.Settings) {
			s.GlobalHooksDir, s.TempDir, s.ListenAddress, s.ListenPort, s.MetricsPrefix, s.Namespace = "/sh/h", "/sh/t", "10.0.0.2", "9700", "sh_", "sh-ns"
		}, ""},
		{"addon-operator's names beat shell-operator's", map[string]string{
			"SHELL_OPERATOR_HOOKS_DIR": "/sh/h", "SHELL_OPERATOR_TMP_DIR": "/sh/t", "SHELL_OPERATOR_LISTEN_ADDRESS": "10.0.0.2",
			"SHELL_OPERATOR_LISTEN_PORT": "9700", "SHELL_OPERATOR_PROMETHEUS_METRICS_PREFIX": "sh_", "SHELL_OPERATOR_NAMESPACE": "sh-ns",
			"ADDON_OPERATOR_GLOBAL_HOOKS_DIR": "/ao/h", "ADDON_OPERATOR_TMP_DIR": "/ao/t", "ADDON_OPERATOR_LISTEN_ADDRESS": "127.0.0.1",
			"ADDON_OPERATOR_LISTEN_PORT": "9651", "ADDON_OPERATOR_PROMETHEUS_METRICS_PREFIX": "ao_", "ADDON_OPERATOR_NAMESPACE": "ao-ns",
		}, func(s *operator.Settings) {
			s.GlobalHooksDir, s.TempDir, s.ListenAddress, s.ListenPort, s.MetricsPrefix, s.Namespace = "/ao/h", "/ao/t", "127.0.0.1", "9651", "ao_", "ao-ns"
		}, ""},
		{"in a pod", map[string]string{"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, func(s *operator.Settings) { s.InCluster = true }, ""},
		{"in a pod, its namespace set", map[string]string{"KUBERNETES_SERVICE_HOST": "10.0.0.1", "ADDON_OPERATOR_NAMESPACE": "set"},
			func(s *operator.Settings) { s.InCluster, s.Namespace = true, "set" }, ""},
		{"cluster client and HA", map[string]string{
			"KUBE_CLIENT_QPS": "7.5", "KUBE_CLIENT_BURST": "12", "ADDON_OPERATOR_HA": "true", "ADDON_OPERATOR_POD": "op-7d9f-x2",
		}, func(s *operator.Settings) {
			s.KubeClientQPS, s.KubeClientBurst, s.HA, s.PodName = 7.5, 12, true, "op-7d9f-x2"
		}, ""},
		{"HA off", map[string]string{"ADDON_OPERATOR_HA": "false"}, func(*operator.Settings) {}, ""},
		{"HA empty", map[string]string{"ADDON_OPERATOR_HA": ""}, func(*operator.Settings) {}, ""},
		{"no history limit", map[string]string{"HELM_HISTORY_MAX": "0"}, func(s *operator.Settings) { s.HelmHistoryMax = 0 }, ""},
		{"helm timeout", map[string]string{"HELM_TIMEOUT": "5m"}, func(s *operator.Settings) { s.HelmTimeout = 5 * time.Minute }, ""},
		{"empty helm timeout", map[string]string{"HELM_TIMEOUT": ""}, func(*operator.Settings) {}, ""},
		{"bad helm timeout", map[string]string{"HELM_TIMEOUT": "soon"}, nil, "environment variable HELM_TIMEOUT: \"soon\" is not a duration; write one like 20m"},
		{"empty numbers keep the defaults", map[string]string{"KUBE_CLIENT_QPS": "", "KUBE_CLIENT_BURST": " ", "HELM_HISTORY_MAX": ""}, func(*operator.Settings) {}, ""},
		{"bad HA", map[string]string{"ADDON_OPERATOR_HA": "yes please"}, nil, "environment variable ADDON_OPERATOR_HA: \"yes please\" is not true or false"},
		{"bad QPS", map[string]string{"KUBE_CLIENT_QPS": "fast"}, nil, "environment variable KUBE_CLIENT_QPS: \"fast\" is not a number"},
		{"queue action metrics off", map[string]string{"QUEUE_ACTIONS_METRICS": "no"}, func(s *operator.Settings) { s.NoQueueActionMetrics = true }, ""},
		{"debug HTTP and reload on change", map[string]string{"DEBUG_HTTP_SERVER_ADDR": "127.0.0.1:9650", "STRATA_RELOAD_ON_CHANGE": "true"},
			func(s *operator.Settings) { s.DebugHTTPAddr, s.ReloadOnChange = "127.0.0.1:9650", true }, ""},
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

// TestSettingsPodNamespace: in a pod without ADDON_OPERATOR_NAMESPACE, the
// namespace is the service account's.
func TestSettingsPodNamespace(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "namespace")
	old := operator.ServiceAccountNamespaceFile
	t.Cleanup(func() { operator.ServiceAccountNamespaceFile = old })
	operator.ServiceAccountNamespaceFile = file
	env := map[string]string{"KUBERNETES_SERVICE_HOST": "10.0.0.1"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }

	s := operator.DefaultSettings()
	if err := s.FromEnv(lookup); err != nil || s.Namespace != "" {
		t.Fatalf("no namespace file: namespace %q, error %v; want none, no error", s.Namespace, err)
	}
	if err := s.Check(); err == nil || !strings.Contains(err.Error(), "ADDON_OPERATOR_NAMESPACE") {
		t.Errorf("Check in a pod without a namespace: %v, want an error naming ADDON_OPERATOR_NAMESPACE", err)
	}
	if err := os.WriteFile(file, []byte("addons\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s = operator.DefaultSettings()
	if err := s.FromEnv(lookup); err != nil || s.Namespace != "addons" {
		t.Fatalf("namespace file: namespace %q, error %v; want addons", s.Namespace, err)
	}
	if err := s.Check(); err != nil {
		t.Errorf("Check: %v", err)
	}
	env["ADDON_OPERATOR_NAMESPACE"] = "mine"
	s = operator.DefaultSettings()
	if err := s.FromEnv(lookup); err != nil || s.Namespace != "mine" {
		t.Fatalf("ADDON_OPERATOR_NAMESPACE and the file: namespace %q, error %v; want mine", s.Namespace, err)
	}
}

func TestSettingsIdentity(t *testing.T) {
	s := operator.DefaultSettings()
	s.PodName, s.ListenAddress, s.Namespace = "addon-operator-5f7c-abcde", "10.244.1.7", "d8-system"
	if got, want := s.Identity(), "addon-operator-5f7c-abcde.10-244-1-7.d8-system.pod"; got != want {
		t.Errorf("Identity = %q, want %q (addon-operator's)", got, want)
	}
}

func TestSettingsCheck(t *testing.T) {
	ha := func(s *operator.Settings) { s.KubeConfig, s.Namespace, s.HA, s.PodName = "/k", "ns", true, "pod-a" }
	tests := []struct {
		name string
		set  func(*operator.Settings)
		want string // substring of the error; "" for none
	}{
		{"local by default", func(*operator.Settings) {}, ""},
		{"kubeconfig", func(s *operator.Settings) { s.KubeConfig, s.Namespace = "/k", "ns" }, ""},
		{"kubeconfig without a namespace", func(s *operator.Settings) { s.KubeConfig = "/k" }, "ADDON_OPERATOR_NAMESPACE (--namespace)"},
		{"kubeconfig with --local", func(s *operator.Settings) { s.KubeConfig, s.Local = "/k", true }, ""},
		{"in a pod", func(s *operator.Settings) { s.InCluster, s.Namespace = true, "ns" }, ""},
		{"in a pod without a namespace", func(s *operator.Settings) { s.InCluster = true }, "no namespace"},
		{"bad namespace", func(s *operator.Settings) { s.Namespace = "Addons_1" }, "namespace \"Addons_1\" (ADDON_OPERATOR_NAMESPACE, --namespace)"},
		{"burst 0", func(s *operator.Settings) { s.KubeClientBurst = 0 }, "KUBE_CLIENT_BURST (--kube-client-burst) 0"},
		{"no rate limit", func(s *operator.Settings) { s.KubeClientQPS, s.KubeClientBurst = -1, 0 }, ""},
		{"HA", ha, ""},
		{"HA in a pod", func(s *operator.Settings) { ha(s); s.KubeConfig, s.InCluster = "", true }, ""},
		{"HA with local backends", func(s *operator.Settings) { ha(s); s.Local = true }, ""},
		{"HA without a cluster", func(s *operator.Settings) { ha(s); s.KubeConfig = "" }, "needs a cluster for its Lease"},
		{"HA --local without a namespace", func(s *operator.Settings) { ha(s); s.Local, s.Namespace = true, "" }, "no namespace for the Lease"},
		{"HA without a pod name", func(s *operator.Settings) { ha(s); s.PodName = " " }, "ADDON_OPERATOR_POD (--pod-name) is empty"},
		{"HA timing", func(s *operator.Settings) { ha(s); s.LeaseDuration, s.RenewDeadline, s.RetryPeriod = 4e9, 2e9, 1e9 }, ""},
		{"HA bad timing", func(s *operator.Settings) { ha(s); s.LeaseDuration = 5e9 }, "--ha-lease-duration (5s) must exceed --ha-renew-deadline (30s)"},
		{"HA negative grace", func(s *operator.Settings) { ha(s); s.ShutdownGrace = -1 }, "--shutdown-grace -1ns"},
		{"nothing to run", func(s *operator.Settings) { s.ModulesDir, s.GlobalHooksDir = "", "" }, "set MODULES_DIR"},
		{"bad port", func(s *operator.Settings) { s.ListenPort = "http" }, "listen port \"http\""},
		{"webhook failure policy", func(s *operator.Settings) { s.Webhooks.FailurePolicy = "fail" }, "VALIDATING_WEBHOOK_FAILURE_POLICY (--validating-webhook-failure-policy) \"fail\": must be Fail or Ignore"},
		{"webhook URL not https", func(s *operator.Settings) { s.Webhooks.Conversion.URL = "http://op:9681" }, "STRATA_CONVERSION_WEBHOOK_URL (--conversion-webhook-url) \"http://op:9681\": must be an https URL"},
		{"webhook URL", func(s *operator.Settings) { s.Webhooks.Validating.URL = "https://127.0.0.1:9680" }, ""},
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
