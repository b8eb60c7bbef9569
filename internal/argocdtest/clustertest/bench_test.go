//go:build linux

package clustertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// peerPlugin is testdata/plugin.yaml served by Argo CD's own sidecar
// (argocd-cmp-server of the same release), under another name so that the
// repo-server can tell the two apart, and without discovery (the
// discovery test must find strata's sidecar alone).
const peerPlugin = "argocd-e2e-v1"

var peer struct {
	once sync.Once
	err  error
}

// startPeerSidecar starts argocd-cmp-server with testdata/plugin.yaml,
// its socket beside strata's, once per package run.
func (e *env) startPeerSidecar(ctx context.Context) error {
	peer.once.Do(func() { peer.err = e.startPeer(ctx) })
	return peer.err
}

func (e *env) startPeer(ctx context.Context) error {
	data, err := os.ReadFile(filepath.Join("testdata", "plugin.yaml"))
	if err != nil {
		return err
	}
	var plugin map[string]any
	if err := yaml.Unmarshal(data, &plugin); err != nil {
		return fmt.Errorf("testdata/plugin.yaml: %w", err)
	}
	plugin["metadata"] = map[string]any{"name": "argocd-e2e"}
	spec, _ := plugin["spec"].(map[string]any)
	delete(spec, "discover")
	if data, err = yaml.Marshal(plugin); err != nil {
		return err
	}
	base := filepath.Dir(e.logDir)
	conf := filepath.Join(base, "peer-config")
	work := filepath.Join(base, "peer-work")
	for _, d := range []string{conf, work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(conf, "plugin.yaml"), data, 0o600); err != nil {
		return err
	}
	env := append(os.Environ(), "ARGOCD_PLUGINSOCKFILEPATH="+e.sockDir, "ARGOCD_CMP_WORKDIR="+work)
	p, err := start("argocd-cmp-server", e.logDir, env, e.argocd, "argocd-cmp-server", "--config-dir-path", conf, "--logformat", "text")
	if err != nil {
		return err
	}
	e.procs = append(e.procs, p)
	wait, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return p.waitFile(wait, filepath.Join(e.sockDir, peerPlugin+".sock"))
}

// manifestRequest is the ManifestRequest the application controller sends
// for an Application of the shared repository at path with source (its
// plugin or helm block), with the repo-server's manifest cache skipped.
func (e *env) manifestRequest(app, path string, source map[string]any) map[string]any {
	src := map[string]any{"repoURL": e.repo.url, "targetRevision": "main", "path": path}
	for k, v := range source {
		src[k] = v
	}
	return map[string]any{
		"repo":               map[string]any{"repo": e.repo.url},
		"revision":           "main",
		"noCache":            true,
		"appLabelKey":        "app.kubernetes.io/instance",
		"appName":            app,
		"namespace":          "bench",
		"applicationSource":  src,
		"kubeVersion":        "1.34.0",
		"projectName":        "default",
		"projectSourceRepos": []any{"*"},
		"trackingMethod":     "annotation",
	}
}

// generateManifests runs `argocd generate-manifest` (Argo CD's repo-server
// client) for rounds rounds over reqs and returns each request's timings.
func (e *env) generateManifests(tb testing.TB, rounds int, reqs ...map[string]any) [][]float64 {
	tb.Helper()
	in, err := json.Marshal(reqs)
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(e.argocd, "generate-manifest", "--repo-server", e.repoAddr, "--count", strconv.Itoa(rounds), "--timeout", "3m")
	cmd.Stdin = bytes.NewReader(in)
	cmd.Env = append(os.Environ(), "ARGOCD_GRPC_KEEP_ALIVE_MIN="+keepAliveMin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("generate-manifest: %v\n%s", err, stderr.String())
	}
	var res []struct {
		Seconds   []float64 `json:"seconds"`
		Manifests int       `json:"manifests"`
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res) != len(reqs) {
		tb.Fatalf("generate-manifest answered %s (%v)", out, err)
	}
	times := make([][]float64, len(res))
	for i, r := range res {
		if r.Manifests == 0 {
			tb.Fatalf("request %d (%v) generated no manifest", i, reqs[i]["appName"])
		}
		times[i] = r.Seconds
	}
	return times
}

func median(s []float64) float64 {
	s = slices.Clone(s)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkGenerateManifest measures what a user of Argo CD waits for:
// GenerateManifest through the real repo-server (its git checkout, the
// tarball it streams to a sidecar or its helm run, its parsing of the
// answer), with strata and with the peer a user would run instead, the
// calls of the two interleaved. Each pair reports both medians and their
// ratio (peer / strata: above 1, strata is faster):
//
//   - cmp: testdata/plugin.yaml in strata's sidecar and in Argo CD's
//     argocd-cmp-server of the same release;
//   - helm: the chart of testdata/repo/chart through strata's built-in Helm
//     plugin and through Argo CD's native Helm source (the helm CLI).
//
// make bench-argocd runs it (docs/benchmarks.md).
func BenchmarkGenerateManifest(b *testing.B) {
	e := setup(b)
	if err := e.startPeerSidecar(b.Context()); err != nil {
		b.Fatalf("starting argocd-cmp-server: %v", err)
	}
	params := []any{
		map[string]any{"name": "greeting", "string": "bench"},
		map[string]any{"name": "zones", "array": []any{"a", "b"}},
	}
	helmValues := map[string]any{"replicaCount": "3"}
	pairs := []struct {
		name           string
		strata, peerRq map[string]any
	}{
		{"cmp",
			e.manifestRequest("bench-cmp-strata", "cmp", map[string]any{"plugin": map[string]any{"name": e2ePlugin, "parameters": params}}),
			e.manifestRequest("bench-cmp-argocd", "cmp", map[string]any{"plugin": map[string]any{"name": peerPlugin, "parameters": params}}),
		},
		{"helm",
			e.manifestRequest("bench-helm-strata", "chart", map[string]any{"plugin": map[string]any{"name": helmPlugin, "parameters": []any{
				map[string]any{"name": "values-files", "array": []any{"values-prod.yaml"}},
				map[string]any{"name": "helm-parameters", "map": helmValues},
			}}}),
			e.manifestRequest("bench-helm-native", "chart", map[string]any{"helm": map[string]any{
				"valueFiles": []any{"values-prod.yaml"},
				"parameters": []any{map[string]any{"name": "replicaCount", "value": "3"}},
			}}),
		},
	}
	for _, p := range pairs {
		b.Run(p.name, func(b *testing.B) {
			// One warm-up round: the repo-server's checkout, the sidecars'
			// first start of their commands.
			e.generateManifests(b, 1, p.strata, p.peerRq)
			b.ResetTimer()
			times := e.generateManifests(b, b.N, p.strata, p.peerRq)
			b.StopTimer()
			s, q := median(times[0]), median(times[1])
			b.ReportMetric(s*1e3, "strata-ms/op")
			b.ReportMetric(q*1e3, "peer-ms/op")
			b.ReportMetric(q/s, "peer/strata")
		})
	}
}
