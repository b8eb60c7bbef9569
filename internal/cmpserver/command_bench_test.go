package cmpserver_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/strata-dev/strata/internal/cmpserver"
	"github.com/strata-dev/strata/internal/params"
)

// benchManifests is the m.yaml of make bench-cmp's plugin: three
// ConfigMaps.
const benchManifests = `apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
data:
  replicas: "3"
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-env
data:
  ENV: prod
  LOG_LEVEL: info
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-flags
data:
  feature.x: "on"
`

// BenchmarkCommandGenerate is one GenerateManifest of make bench-cmp's
// plugin (generate: [cat, m.yaml]) on a workspace that is ready, as cmp
// serve runs it: sandboxed, the store root hidden, the sidecar's own
// environment, an info-level logger. What it measures is everything a
// repeated request costs but receiving the repository and copying it.
//
// The store root lies in a crowded directory (crowd entries beside it,
// under os.TempDir(), which holds what it holds), as a sidecar's
// /tmp may be: the sandbox lets a command read every sibling of the store
// root and of its ancestors. "fresh" makes a new workspace directory for
// each generate (as a store that copies the repository does), "reused"
// runs every generate in the same one (a recycled workspace).
func BenchmarkCommandGenerate(b *testing.B) {
	const crowd = 200
	parent := b.TempDir()
	for i := range crowd {
		if err := os.Mkdir(filepath.Join(parent, fmt.Sprintf("other-%03d", i)), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	root := filepath.Join(parent, "strata-cmp-cat")
	cfg, err := cmpserver.ParseConfig([]byte(cfgHead+"spec:\n  generate:\n    command: [cat]\n    args: [m.yaml]\n"), "plugin.yaml")
	if err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	p := cmpserver.NewCommandPlugin(cfg, cmpserver.CommandOptions{Env: os.Environ(), Logger: log}).Hiding(root)
	n := 0
	workspace := func(b *testing.B) *params.Request {
		n++
		ws := filepath.Join(root, "work", fmt.Sprintf("ws-%d", n))
		app := filepath.Join(ws, "repo", "apps", "web")
		tmp := filepath.Join(ws, "tmp")
		for _, d := range []string{app, tmp} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(app, "m.yaml"), []byte(benchManifests), 0o644); err != nil {
			b.Fatal(err)
		}
		return &params.Request{
			AppName: "web", RepoRoot: filepath.Join(ws, "repo"), AppPath: app, TempDir: tmp,
			Env: []string{"ARGOCD_APP_NAME=web", "ARGOCD_APP_NAMESPACE=argocd", "ARGOCD_APP_REVISION=0123456789abcdef",
				"ARGOCD_APP_SOURCE_PATH=apps/web", "ARGOCD_APP_SOURCE_REPO_URL=https://example.com/repo.git",
				"ARGOCD_APP_SOURCE_TARGET_REVISION=HEAD", "KUBE_VERSION=1.31.0", "KUBE_API_VERSIONS=v1,apps/v1"},
		}
	}
	run := func(b *testing.B, req *params.Request) {
		out, err := p.Generate(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		if len(out) != 3 {
			b.Fatalf("Generate() gave %d manifests, want 3", len(out))
		}
	}
	// The directories around the store root have just changed: let their
	// timestamps age past the sandbox's cache's racy window (2 s), as
	// they have in a sidecar that has been running for a while.
	req := workspace(b)
	time.Sleep(2500 * time.Millisecond)
	b.Run("reused", func(b *testing.B) {
		b.ReportAllocs()
		cpu := startCPU()
		for b.Loop() {
			run(b, req)
		}
		cpu.report(b)
	})
	b.Run("fresh", func(b *testing.B) {
		reqs := make([]*params.Request, b.N)
		for i := range reqs {
			reqs[i] = workspace(b)
		}
		b.ReportAllocs()
		b.ResetTimer()
		cpu := startCPU()
		for _, req := range reqs {
			run(b, req)
		}
		cpu.report(b)
	})
}

// cpuUsage is the CPU time this process and its children had used when a
// benchmark started: on a loaded machine, a steadier figure than the time.
type cpuUsage struct{ self, children time.Duration }

func cpuNow() cpuUsage {
	var self, children syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	cpu := func(r *syscall.Rusage) time.Duration {
		return time.Duration(r.Utime.Nano() + r.Stime.Nano())
	}
	return cpuUsage{cpu(&self), cpu(&children)}
}

func startCPU() cpuUsage { return cpuNow() }

// report reports the CPU time per operation of the server (cpu-ns/op)
// and of the commands it ran (child-cpu-ns/op).
func (u cpuUsage) report(b *testing.B) {
	now := cpuNow()
	b.ReportMetric(float64(now.self-u.self)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(now.children-u.children)/float64(b.N), "child-cpu-ns/op")
}
