package cli_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/strata-dev/strata/internal/cmpserver"
	"github.com/strata-dev/strata/internal/cmpserver/pluginpb"
	"github.com/strata-dev/strata/internal/eventually"
	"github.com/strata-dev/strata/internal/hookexec"
)

// TestCmpServeCommandNamespaces: cmp serve runs a plugin's command in the
// server's own PID namespace by default (its shell's $$ is not 1), and,
// with --command-namespaces where the kernel allows user namespaces, as
// the init of a PID namespace of its own ($$ is 1).
func TestCmpServeCommandNamespaces(t *testing.T) {
	cases := []struct {
		name    string
		flags   []string
		wantPID string // "1", or "" for anything but 1
		logs    string
	}{
		{"default", nil, "", "found through the process tree"},
		{"process-tree-only (deprecated)", []string{"--process-tree-only"}, "", "found through the process tree"},
	}
	if hookexec.Namespaces() == nil {
		cases = append(cases, struct {
			name    string
			flags   []string
			wantPID string
			logs    string
		}{"command-namespaces", []string{"--command-namespaces"}, "1", "own user, PID and IPC namespaces"})
	} else {
		t.Logf("--command-namespaces not tried: %v", hookexec.Namespaces())
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "cmpns") // short: unix socket paths are limited
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			socketDir := filepath.Join(dir, "sock")
			if err := os.MkdirAll(socketDir, 0o755); err != nil {
				t.Fatal(err)
			}
			writeFiles(t, dir, map[string]string{
				"plugin.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: ConfigManagementPlugin\nmetadata: {name: pid}\nspec:\n" +
					"  generate:\n    command: [sh, -c]\n    args: ['printf \"kind: ConfigMap\\napiVersion: v1\\nmetadata: {name: pid}\\ndata: {pid: \\\"%s\\\"}\\n\" \"$$\"']\n",
			})
			args := append([]string{"cmp", "serve", "--config", filepath.Join(dir, "plugin.yaml"), "--socket-dir", socketDir,
				"--cache-dir", filepath.Join(dir, "cache")}, tc.flags...)
			server := exec.Command(strataBinary(t), args...)
			var logs syncBuffer
			server.Stderr = &logs
			if err := server.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				server.Process.Signal(syscall.SIGTERM)
				server.Wait()
				if t.Failed() {
					t.Logf("server log:\n%s", logs.String())
				}
			})
			socket := filepath.Join(socketDir, "pid.sock")
			eventually.True(t, "the server listens", func() (bool, string) {
				_, err := os.Stat(socket)
				return err == nil, fmt.Sprint(err)
			})
			conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			stream, err := pluginpb.NewConfigManagementPluginServiceClient(conn).GenerateManifest(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if err := cmpserver.SendApp(stream, &pluginpb.ManifestRequestMetadata{AppName: "demo", AppRelPath: "."}, tgzOf(t, "README", "x")); err != nil {
				t.Fatal(err)
			}
			resp, err := stream.CloseAndRecv()
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.GetManifests()) != 1 {
				t.Fatalf("GenerateManifest = %q, want one ConfigMap", resp.GetManifests())
			}
			m := resp.GetManifests()[0]
			isOne := strings.Contains(m, `"pid":"1"`)
			if tc.wantPID == "1" && !isOne {
				t.Errorf("with %v the command's $$ is not 1: %s", tc.flags, m)
			}
			if tc.wantPID == "" && (isOne || !strings.Contains(m, `"pid":"`)) {
				t.Errorf("with %v the command's $$ = 1 or missing, want its PID in the server's namespace: %s", tc.flags, m)
			}
			if !strings.Contains(logs.String(), tc.logs) {
				t.Errorf("server log lacks %q:\n%s", tc.logs, logs.String())
			}
		})
	}
}
