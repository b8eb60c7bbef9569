package operator

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRestConfig: the client of the cluster backends has no overall
// timeout (watches live) and KUBE_CLIENT_QPS/BURST's rate.
func TestRestConfig(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	const data = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: ctx, context: {cluster: c, user: u}}]
current-context: ctx
`
	if err := os.WriteFile(kc, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		qps   float32
		burst int
	}{{DefaultKubeClientQPS, DefaultKubeClientBurst}, {5, 10}, {-1, 0}} {
		s := DefaultSettings()
		s.KubeConfig, s.KubeClientQPS, s.KubeClientBurst = kc, tc.qps, tc.burst
		rc, err := s.restConfig()
		if err != nil {
			t.Fatal(err)
		}
		if rc.Timeout != 0 || rc.QPS != tc.qps || rc.Burst != tc.burst || rc.Host != "https://127.0.0.1:6443" {
			t.Errorf("restConfig: timeout %v, QPS %v, burst %d, host %s; want 0, %v, %d, https://127.0.0.1:6443", rc.Timeout, rc.QPS, rc.Burst, rc.Host, tc.qps, tc.burst)
		}
	}
	s := DefaultSettings()
	s.KubeConfig, s.KubeContext = kc, "missing"
	if _, err := s.restConfig(); err == nil {
		t.Error("restConfig with a missing context: no error")
	}
}
