package cmpserver_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/cmpserver"
	"github.com/strata-dev/strata/internal/document"
)

func TestMessageSizeFromEnv(t *testing.T) {
	tests := []struct {
		name           string
		env            []string
		size, manifest int
		wantErr        string
	}{
		{name: "unset", env: []string{"PATH=/bin"}},
		{name: "empty", env: []string{"ARGOCD_GRPC_MAX_SIZE_MB="}},
		{name: "200 MiB", env: []string{"ARGOCD_GRPC_MAX_SIZE_MB=200"}, size: 200 << 20, manifest: (200 << 20) / 100 * 96},
		{name: "the last entry wins", env: []string{"ARGOCD_GRPC_MAX_SIZE_MB=50", "ARGOCD_GRPC_MAX_SIZE_MB=10"}, size: 10 << 20, manifest: (10 << 20) / 100 * 96},
		{name: "not a number", env: []string{"ARGOCD_GRPC_MAX_SIZE_MB=200Mi"}, wantErr: `ARGOCD_GRPC_MAX_SIZE_MB="200Mi": set it to the gRPC message size in MiB`},
		{name: "zero", env: []string{"ARGOCD_GRPC_MAX_SIZE_MB=0"}, wantErr: "a whole number from 1 to 2047"},
		{name: "too large", env: []string{"ARGOCD_GRPC_MAX_SIZE_MB=4096"}, wantErr: "a whole number from 1 to 2047"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			size, manifest, err := cmpserver.MessageSizeFromEnv(tc.env)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("MessageSizeFromEnv(%q) error = %v, want one holding %q", tc.env, err, tc.wantErr)
				}
				return
			}
			if err != nil || size != tc.size || manifest != tc.manifest {
				t.Errorf("MessageSizeFromEnv(%q) = %d, %d, %v, want %d, %d, nil", tc.env, size, manifest, err, tc.size, tc.manifest)
			}
		})
	}
}

// TestCommandPluginMaxManifestBytes: the bound on a generate command's
// manifests follows CommandOptions.MaxManifestBytes.
func TestCommandPluginMaxManifestBytes(t *testing.T) {
	spec := "  generate:\n    command: [cat, m.yaml]\n"
	files := map[string]string{"m.yaml": "apiVersion: v1\nkind: ConfigMap\ndata: {k: " + strings.Repeat("x", 2000) + "}\n"}
	for _, tc := range []struct {
		max  int
		fail bool
	}{{0, false}, {4096, false}, {1000, true}} {
		p := newCommandPlugin(t, spec, cmpserver.CommandOptions{NoSandbox: true, MaxManifestBytes: tc.max}, nil)
		_, err := p.Generate(context.Background(), newApp(t, files))
		if got := errors.Is(err, document.ErrTooLarge); got != tc.fail {
			t.Errorf("MaxManifestBytes %d: Generate() error = %v, want too large: %v", tc.max, err, tc.fail)
		}
	}
}

func TestMaxOutputFor(t *testing.T) {
	for _, tc := range []struct {
		size int
		want int64
	}{{0, 0}, {10 << 20, 0}, {32 << 20, 0}, {100 << 20, 200 << 20}} {
		if got := cmpserver.MaxOutputFor(tc.size); got != tc.want {
			t.Errorf("MaxOutputFor(%d) = %d, want %d", tc.size, got, tc.want)
		}
	}
}

// TestCommandPluginOutputTooLarge: a command printing past its bound
// fails with advice.
func TestCommandPluginOutputTooLarge(t *testing.T) {
	p := newCommandPlugin(t, "  generate:\n    command: [sh, -c, 'head -c 5000 /dev/zero']\n", cmpserver.CommandOptions{NoSandbox: true, MaxOutput: 1000}, nil)
	_, err := p.Generate(context.Background(), newApp(t, nil))
	for _, want := range []string{"wrote more than 1000 bytes to stdout", "ARGOCD_GRPC_MAX_SIZE_MB"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Generate() error = %v, want one holding %q", err, want)
		}
	}
}
