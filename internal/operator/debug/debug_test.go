package debug_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/eventually"
	"github.com/strata-dev/strata/internal/operator/debug"
)

// table is a Source over fixed answers, to test the routing and the
// socket; the operator's tests run the real engine behind it.
type table struct{}

func (table) Queues() any  { return []string{"main"} }
func (table) Modules() any { return []string{"a"} }
func (table) Hooks() any   { return []map[string]string{{"name": "h"}} }
func (table) Runs() any    { return []string{"run1"} }
func (table) Global(what string, explain bool) (any, error) {
	return map[string]any{"what": what, "explain": explain}, nil
}
func (table) Module(_ context.Context, name, what string, _ bool) (any, error) {
	if name != "a" {
		return nil, fmt.Errorf("no module %q: %w", name, debug.ErrNotFound)
	}
	return map[string]any{"module": name, "what": what}, nil
}

func serve(t *testing.T, sock string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- debug.Serve(ctx, sock, debug.Handler(table{}), slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	eventually.True(t, "the socket answers", func() (bool, string) {
		_, err := debug.Get(context.Background(), sock, "/queue/list.json")
		return err == nil, fmt.Sprint(err)
	})
}

func TestRoutes(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "run", "debug.sock") // its directory is made
	serve(t, sock)
	tests := []struct {
		path, want, wantErr string
	}{
		{"/queue/list.json", `["main"]`, ""},
		{"/queue/list.yaml", "- main\n", ""},
		{"/module/list.json", `["a"]`, ""},
		{"/global/values.json?explain=true", `{"explain":true,"what":"values"}`, ""},
		{"/global/snapshots.json", `{"explain":false,"what":"snapshots"}`, ""},
		{"/module/a/render.json", `{"module":"a","what":"render"}`, ""},
		{"/queue/history.json", `["run1"]`, ""},
		{"/hook/list.json", `[{"name":"h"}]`, ""},
		{"/global/list.json", `{"explain":false,"what":"list"}`, ""},
		{"/module/a/config.json?global=true", `{"explain":false,"module":"a","what":"config"}`, ""},
		{"/module/a/patches.json?global=true", `{"module":"a","what":"patches"}`, ""},
		{"/queue/other.json", "", "use list or history"},
		{"/module/b/values.json", "", `no module "b": not found`},
		{"/module/a/secrets.json", "", "use values, config, patches, render or snapshots"},
		{"/global/values.txt", "", "ask for NAME.json or NAME.yaml"},
	}
	for _, tc := range tests {
		got, err := debug.Get(context.Background(), sock, tc.path)
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("Get(%s) error %v, want one with %q", tc.path, err, tc.wantErr)
		case tc.wantErr == "" && (err != nil || string(got) != tc.want):
			t.Errorf("Get(%s) = %q, %v; want %q", tc.path, got, err, tc.want)
		}
	}
}

func TestServeReplacesStaleSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "debug.sock")
	// A socket file left behind by a process that died.
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	serve(t, sock)
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("socket mode %v, want 0600", perm)
	}
}

func TestServeRefusesAFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(path, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := debug.Serve(context.Background(), path, debug.Handler(table{}), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err == nil || !strings.Contains(err.Error(), "is not a socket") {
		t.Errorf("Serve on a regular file: %v, want a refusal", err)
	}
	if data, _ := os.ReadFile(path); string(data) != "keep me" {
		t.Error("Serve removed or changed a regular file")
	}
}

func TestGetNoServer(t *testing.T) {
	_, err := debug.Get(context.Background(), filepath.Join(t.TempDir(), "none.sock"), "/queue/list.json")
	if err == nil || !strings.Contains(err.Error(), "is `strata operator run` running") {
		t.Errorf("Get without a server: %v", err)
	}
	var ne *net.OpError
	if !errors.As(err, &ne) {
		t.Errorf("Get without a server: %v does not wrap the dial error", err)
	}
}

// TestServeTCP: the debug API over plain HTTP answers as over the socket;
// an address that cannot be listened on says which setting to change.
func TestServeTCP(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- debug.ServeListener(ctx, l, debug.Handler(table{})) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeListener: %v", err)
		}
	}()
	resp, err := http.Get("http://" + l.Addr().String() + "/hook/list.json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != `[{"name":"h"}]` {
		t.Errorf("GET /hook/list.json = %s %q", resp.Status, body)
	}

	err = debug.ServeTCP(context.Background(), l.Addr().String(), debug.Handler(table{}), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err == nil || !strings.Contains(err.Error(), "DEBUG_HTTP_SERVER_ADDR") {
		t.Errorf("ServeTCP on a taken address: %v, want an error naming DEBUG_HTTP_SERVER_ADDR", err)
	}
}
