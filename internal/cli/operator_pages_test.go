package cli_test

import (
	"bytes"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/strata-dev/strata/internal/eventually"
)

// lockedBuffer collects a process's output while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestOperatorReleasesExePages runs the built binary (dynamically linked,
// with read-only data the dynamic linker relocated) as `operator run`: it
// releases the binary's pages while its packages initialise, at start-up
// and after the first converge,
// and goes on working (a module's chart rendered, /readyz answering);
// STRATA_RELEASE_EXE_PAGES=false turns the release off, and a value that
// is no boolean is refused.
func TestOperatorReleasesExePages(t *testing.T) {
	bin := strataBinary(t)
	dir := t.TempDir()
	files := map[string]string{
		"modules/values.yaml":                    "demoEnabled: true\n",
		"modules/001-demo/Chart.yaml":            "apiVersion: v2\nname: demo\nversion: 0.0.1\n",
		"modules/001-demo/templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\n",
		"global-hooks/.keep":                     "",
		"modules/001-demo/hooks/before-helm.sh":  "#!/bin/sh\nif [ \"$1\" = --config ]; then echo '{\"configVersion\":\"v1\",\"beforeHelm\":1}'; fi\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const (
		atStart = `msg="released the binary's resident pages" after=start-up`
		atReady = `msg="released the binary's resident pages" after="the first converge"`
	)
	// While the packages initialise (some 40 MB of the binary's pages),
	// the watch releases at least once.
	atInit := regexp.MustCompile(`msg="released the binary's resident pages" after="package initialisation" releases=[1-9]`)
	for _, tc := range []struct {
		name    string
		env     string // STRATA_RELEASE_EXE_PAGES
		release bool
	}{
		{"default", "", true},
		{"on", "true", true},
		{"off", "false", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			port := freeTCPPort(t)
			state := filepath.Join(dir, "state-"+tc.name)
			cmd := exec.Command(bin, "operator", "run", "--local",
				"--modules-dir", filepath.Join(dir, "modules"), "--global-hooks-dir", filepath.Join(dir, "global-hooks"),
				"--namespace", "test", "--tmp-dir", filepath.Join(dir, "tmp"), "--state-dir", state,
				"--listen-address", "127.0.0.1", "--listen-port", strconv.Itoa(port),
				"--debug-unix-socket", "", "--log-level", "debug")
			// Empty counts as unset.
			cmd.Env = append(os.Environ(), "STRATA_RELEASE_EXE_PAGES="+tc.env)
			var log lockedBuffer
			cmd.Stdout, cmd.Stderr = &log, &log
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			defer func() {
				_ = cmd.Process.Signal(syscall.SIGTERM)
				select {
				case <-exited:
				case <-time.After(30 * time.Second):
					_ = cmd.Process.Kill()
					<-exited
				}
			}()
			ready := "http://127.0.0.1:" + strconv.Itoa(port) + "/readyz"
			eventually.True(t, "/readyz to answer 200", func() (bool, string) {
				select {
				case err := <-exited:
					exited <- err
					t.Fatalf("operator run exited: %v\n%s", err, log.String())
				default:
				}
				resp, err := http.Get(ready)
				if err != nil {
					return false, err.Error()
				}
				resp.Body.Close()
				return resp.StatusCode == http.StatusOK, resp.Status
			})
			if _, err := os.Stat(filepath.Join(state, "demo")); err != nil {
				t.Errorf("no release of the module: %v\n%s", err, log.String())
			}
			if !tc.release {
				if strings.Contains(log.String(), "released the binary's") {
					t.Errorf("released with STRATA_RELEASE_EXE_PAGES=%s:\n%s", tc.env, log.String())
				}
				return
			}
			eventually.True(t, "both releases logged", func() (bool, string) {
				l := log.String()
				return strings.Contains(l, atStart) && strings.Contains(l, atReady), l
			})
			if !atInit.MatchString(log.String()) {
				t.Errorf("no release while the packages initialised:\n%s", log.String())
			}
			// Still serving after the second release.
			resp, err := http.Get(ready)
			if err != nil {
				t.Fatalf("after the release: %v\n%s", err, log.String())
			}
			resp.Body.Close()
			if strings.Contains(log.String(), "could not release") {
				t.Errorf("a release failed:\n%s", log.String())
			}
		})
	}
	t.Run("not a boolean", func(t *testing.T) {
		cmd := exec.Command(bin, "operator", "run", "--local", "--modules-dir", filepath.Join(dir, "modules"),
			"--tmp-dir", filepath.Join(dir, "tmp"), "--listen-port", "", "--debug-unix-socket", "")
		cmd.Env = append(os.Environ(), "STRATA_RELEASE_EXE_PAGES=sometimes")
		out, err := cmd.CombinedOutput()
		want := `$STRATA_RELEASE_EXE_PAGES="sometimes": use true (the default) or false`
		if err == nil || !strings.Contains(string(out), want) {
			t.Errorf("operator run = %v, %s; want an error saying %s", err, out, want)
		}
	})
}

// freeTCPPort returns a port nothing listens on at the moment.
func freeTCPPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
