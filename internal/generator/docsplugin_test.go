package generator_test

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/generator"
)

// startDocsPlugin runs testdata/docsplugin.py, a plugin written the way
// Argo CD's documentation shows, and returns its base URL.
func startDocsPlugin(t *testing.T, token string) string {
	t.Helper()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("python3", filepath.Join("testdata", "docsplugin.py"), tokenFile)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the plugin (python3 is needed, as for examples/generator): %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	port, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the plugin's port: %v", err)
	}
	return "http://127.0.0.1:" + strings.TrimSpace(port)
}

// TestClientAgainstDocsStylePlugin: the client reads a plugin written as
// users write them (HTTP/1.0, no Content-Type, no Content-Length, a bare
// 403 followed by a second answer on the same connection) as the
// controller's client does.
func TestClientAgainstDocsStylePlugin(t *testing.T) {
	base := startDocsPlugin(t, "strong-password")
	tests := []struct {
		name       string
		base       string
		token      string
		input      map[string]any
		want       []map[string]any
		wantStatus int
	}{
		{
			name: "parameters", base: base, token: "strong-password",
			input: map[string]any{"envs": []any{"dev", "prod"}, "tier": "gold"},
			want: []map[string]any{
				{"app": "shop", "env": "dev", "replicas": int64(3), "tags": map[string]any{"tier": "gold"}},
				{"app": "shop", "env": "prod", "replicas": int64(3), "tags": map[string]any{"tier": "gold"}},
			},
		},
		{
			name: "no parameters", base: base + "/", token: "strong-password",
			want: []map[string]any{{"app": "shop", "env": "dev", "replicas": int64(3), "tags": map[string]any{"tier": "none"}}},
		},
		// The plugin's second answer follows its 403 on the connection:
		// the 403 is what counts, never the parameter sets after it.
		{name: "wrong token", base: base, token: "guess", wantStatus: http.StatusForbidden},
		{name: "no token", base: base, wantStatus: http.StatusForbidden},
		{name: "wrong path", base: base + "/other", token: "strong-password", wantStatus: http.StatusNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &generator.Client{BaseURL: tc.base, Token: tc.token}
			got, err := c.GetParams(context.Background(), "shop", tc.input)
			if tc.wantStatus != 0 {
				var se *generator.StatusError
				if !errors.As(err, &se) || se.StatusCode != tc.wantStatus {
					t.Fatalf("GetParams() = %v, %v; want a %d StatusError", got, err, tc.wantStatus)
				}
				if strings.Contains(err.Error(), "strong-password") {
					t.Errorf("error %q shows the token", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("GetParams() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
