//go:build linux

package clustertest

import "testing"

// keepAliveMin is ARGOCD_GRPC_KEEP_ALIVE_MIN of every process of the
// package: Argo CD's clients ping every max(2 × it, 10 s).
const keepAliveMin = "2s"

// TestKeepAlive: a render longer than 90 s, outlasting many of Argo CD's
// keepalive pings, succeeds through the real repo-server. Its gRPC client pings
// strata's sidecar every 10 s here (2 × ARGOCD_GRPC_KEEP_ALIVE_MIN, raised
// to gRPC's floor); a sidecar enforcing gRPC's default minimum (5 min)
// would end the stream with GOAWAY too_many_pings after the third ping,
// as Argo CD's sidecars did before they read the variable. With Argo CD's
// default (10 s, pings every 20 s) the same happens to renders past ~60 s.
func TestKeepAlive(t *testing.T) {
	t.Parallel()
	e := setup(t)
	req := e.manifestRequest("keepalive", "cmp", map[string]any{"plugin": map[string]any{
		"name":       e2ePlugin,
		"parameters": []any{map[string]any{"name": "sleep", "string": "95"}},
	}})
	// generateManifests fails the test on any error of the call.
	e.generateManifests(t, 1, req)
}
