package cli_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/strata-dev/strata/internal/cmpserver/pluginpb"
	"github.com/strata-dev/strata/internal/testbin"
)

// attackRepo holds a good chart (apps/web) and the hostile charts of issue
// 16 (§3, §4): one looping for ever, and three building a value without
// bound.
var attackRepo = map[string]string{
	"apps/loop/Chart.yaml":           "apiVersion: v2\nname: loop\nversion: 0.1.0\n",
	"apps/loop/templates/loop.yaml":  `{{- range until 100000 }}{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}{{ end }}`,
	"apps/nested/Chart.yaml":         "apiVersion: v2\nname: nested\nversion: 0.1.0\n",
	"apps/nested/templates/cm.yaml":  `{{ repeat 1000000 (repeat 1000000 "x") }}`,
	"apps/double/Chart.yaml":         "apiVersion: v2\nname: double\nversion: 0.1.0\n",
	"apps/double/templates/cm.yaml":  `{{- $s := repeat 1000000 "x" }}{{ range until 40 }}{{ $s = printf "%s%s" $s $s }}{{ end }}{{ len $s }}`,
	"apps/tpl/Chart.yaml":            "apiVersion: v2\nname: tpl\nversion: 0.1.0\n",
	"apps/tpl/values.yaml":           "t: '{{ tpl .Values.t . }}'\n",
	"apps/tpl/templates/cm.yaml":     `{{ tpl .Values.t . }}`,
	"apps/web/Chart.yaml":            helmRepo["apps/web/Chart.yaml"],
	"apps/web/values.yaml":           helmRepo["apps/web/values.yaml"],
	"apps/web/templates/deploy.yaml": helmRepo["apps/web/templates/deployment.yaml"],
}

// TestCmpServeHelmAttacks runs the built strata binary as the sidecar
// (`strata cmp serve --builtin helm`, two render slots, a 256 MiB and 20 s
// budget per render) and sends it each attack while another client
// renders the good chart: every attack fails with an error naming its
// chart and the budget, every good render succeeds during and after, and
// the server is still the same process at the end and stops cleanly on
// SIGTERM.
func TestCmpServeHelmAttacks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds strata")
	}
	dir, err := os.MkdirTemp("", "cmp") // short: unix socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := testbin.Strata(t)
	socket := filepath.Join(dir, "helm.sock")
	var stderr syncBuffer
	srv := exec.Command(bin, "cmp", "serve", "--builtin", "helm", "--socket-dir", dir, "--cache-dir", filepath.Join(dir, "cache"),
		"--helm-max-concurrent", "2", "--helm-render-memory", "268435456", "--helm-render-timeout", "20s", "--shutdown-grace", "5s")
	srv.Stderr = &stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- srv.Wait() }()
	t.Cleanup(func() {
		_ = srv.Process.Kill()
	})
	for i := 0; ; i++ {
		if _, err := os.Stat(socket); err == nil {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("strata cmp serve exited (%v) before listening\nstderr:\n%s", err, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if i > 1500 {
			t.Fatalf("no socket %s after 30s\nstderr:\n%s", socket, stderr.String())
		}
	}
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := pluginpb.NewConfigManagementPluginServiceClient(conn)
	repo := tarGz(t, attackRepo)
	env := map[string]string{"ARGOCD_APP_NAMESPACE": "team-a"}
	generate := func(ctx context.Context, rel string) ([]string, error) {
		s, err := client.GenerateManifest(ctx)
		if err != nil {
			return nil, err
		}
		sendApp(t, s, rel, env, repo)
		resp, err := s.CloseAndRecv()
		return resp.GetManifests(), err
	}
	ctx := t.Context()
	web := func(when string) {
		got, err := generate(ctx, "apps/web")
		if err != nil || len(got) != 1 || !strings.Contains(got[0], `"kind":"Deployment"`) {
			t.Errorf("GenerateManifest(apps/web) %s = %v, %v; want the Deployment", when, got, err)
		}
	}
	for _, tc := range []struct{ app, want string }{
		{"loop", `rendering chart "loop" in apps/loop did not finish in`},
		{"nested", `repeat: 1000000 copies of a string of 1000000 bytes would be larger than the rendered manifests may be`},
		{"double", `rendering chart "double" in apps/double: the render needed more than its memory budget of 256 MiB and was stopped`},
		// tpl recursing into itself grows by parse trees and stack: on an
		// idle machine it meets the memory budget first, on a loaded one
		// (or under -race) the time budget; either stops it, named.
		{"tpl", `rendering chart "tpl" in apps/tpl: the render needed more than its memory budget of 256 MiB and was stopped|rendering chart "tpl" in apps/tpl did not finish in`},
	} {
		t.Run(tc.app, func(t *testing.T) {
			var wg sync.WaitGroup
			var attackErr error
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, attackErr = generate(ctx, "apps/"+tc.app)
			}()
			for range 3 {
				web("during the attack")
			}
			wg.Wait()
			if attackErr == nil || !slices.ContainsFunc(strings.Split(tc.want, "|"), func(w string) bool { return strings.Contains(attackErr.Error(), w) }) {
				t.Errorf("GenerateManifest(apps/%s) error = %v, want one holding %q", tc.app, attackErr, tc.want)
			}
			web("after the attack")
		})
	}
	// Two loops at once fill both slots; renders after them still run.
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := generate(ctx, "apps/loop"); err == nil {
				t.Error("GenerateManifest(apps/loop) succeeded")
			}
		}()
	}
	wg.Wait()
	web("after two loops")

	select {
	case err := <-exited:
		t.Fatalf("strata cmp serve ended during the attacks (%v)\nstderr:\n%s", err, stderr.String())
	default:
	}
	// The render workers are strata itself, `strata helm-worker`, as ps
	// shows them: the check that none is left after shutdown looks for
	// them so.
	if pids := processesOf(bin, "helm-worker"); len(pids) == 0 {
		t.Errorf("no render worker (%s helm-worker) found while the server runs", bin)
	}
	if err := srv.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("strata cmp serve exited with %v after SIGTERM\nstderr:\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("strata cmp serve did not stop on SIGTERM\nstderr:\n%s", stderr.String())
	}
	if _, err := os.Stat(socket); err == nil {
		t.Errorf("the socket %s is left behind after shutdown", socket)
	}
	if pids := processesOf(bin, "helm-worker"); len(pids) > 0 {
		t.Errorf("render workers left running after shutdown: pids %v", pids)
	}
}

// TestHelmWorkerByHand: the render worker run by hand (`strata
// helm-worker`, no pipes) refuses, and says what starts it.
func TestHelmWorkerByHand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds strata")
	}
	bin := testbin.Strata(t)
	out, err := exec.CommandContext(t.Context(), bin, "helm-worker").CombinedOutput()
	want := "helm-worker: the render worker is started by `strata cmp serve --builtin helm`, with its pipes on file descriptors 3 and 4; it is not run by hand\n"
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || string(out) != want {
		t.Errorf("strata helm-worker: %v, output %q; want exit 1 and %q", err, out, want)
	}
}

// processesOf lists the processes (on Linux, from /proc) running bin with
// arg among their arguments.
func processesOf(bin, arg string) []string {
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var pids []string
	for _, f := range cmdlines {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		args := strings.Split(string(data), "\x00")
		if len(args) > 0 && args[0] == bin && slices.Contains(args, arg) {
			pids = append(pids, filepath.Base(filepath.Dir(f)))
		}
	}
	return pids
}

// A syncBuffer is a bytes.Buffer safe for a process's output and a test
// reading it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
