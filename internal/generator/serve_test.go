package generator_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/strata-dev/strata/internal/eventually"
	"github.com/strata-dev/strata/internal/generator"
)

// selfSigned writes a certificate for 127.0.0.1 and its key to dir and
// returns a pool trusting it.
func selfSigned(t *testing.T, dir, name string) *x509.CertPool {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, dir, map[string]string{
		"tls/tls.crt": string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		"tls/tls.key": string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})),
	})
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return pool
}

// serving runs srv.Serve on a local listener until the test stops it.
type serving struct {
	addr   string
	cancel context.CancelFunc
	done   chan error
}

func serve(t *testing.T, srv *generator.Server) *serving {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &serving{addr: lis.Addr().String(), cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- srv.Serve(ctx, lis, nil) }()
	t.Cleanup(func() {
		cancel()
		<-s.done
	})
	return s
}

func TestServerTLSReload(t *testing.T) {
	dir := t.TempDir()
	poolA := selfSigned(t, dir, "a")
	writeFiles(t, dir, map[string]string{"sets.yaml": "- {a: b}\n"})
	cfg, err := generator.ParseConfig([]byte(`apiVersion: strata.dev/v1alpha1
kind: GeneratorConfig
tls: {certFile: tls/tls.crt, keyFile: tls/tls.key}
plugins:
- name: p
  allowUnauthenticated: true
  backend: {static: {files: [sets.yaml]}}
`), "gen.yaml", dir)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	srv, err := generator.New(cfg, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	s := serve(t, srv)
	call := func(pool *x509.CertPool) error {
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		defer hc.CloseIdleConnections()
		c := &generator.Client{BaseURL: "https://" + s.addr + "/p", HTTPClient: hc}
		_, err := c.GetParams(context.Background(), "a", nil)
		return err
	}
	if err := call(poolA); err != nil {
		t.Fatalf("with the first certificate: %v", err)
	}
	poolB := selfSigned(t, dir, "b")
	srv.Reload()
	if err := call(poolB); err != nil {
		t.Errorf("with the new certificate after reload: %v", err)
	}
	var uerr x509.UnknownAuthorityError
	if err := call(poolA); !errors.As(err, &uerr) {
		t.Errorf("trusting only the old certificate after reload: %v, want an unknown authority error", err)
	}
	// A broken key keeps the last good pair.
	writeFiles(t, dir, map[string]string{"tls/tls.key": "garbage"})
	srv.Reload()
	if err := call(poolB); err != nil {
		t.Errorf("after a broken key file: %v, want the last good certificate", err)
	}
	if !strings.Contains(logs.String(), "reload failed") {
		t.Errorf("the failed reload is not logged:\n%s", logs.String())
	}
}

func TestServerGracefulShutdown(t *testing.T) {
	b := &countingBackend{entered: make(chan struct{}, 1), release: make(chan struct{})}
	cfg, _ := parseTestConfig(t, `
- name: p
  allowUnauthenticated: true
  backend: {static: {files: [sets.yaml]}}
`, map[string]string{"sets.yaml": "[]"})
	cfg.Plugins[0].Backend = b
	srv, err := generator.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := serve(t, srv)
	ready := func() int {
		resp, err := http.Get("http://" + s.addr + "/readyz")
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := ready(); got != 200 {
		t.Fatalf("/readyz = %d while serving, want 200", got)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := (&generator.Client{BaseURL: "http://" + s.addr + "/p"}).GetParams(context.Background(), "a", nil)
		errc <- err
	}()
	<-b.entered
	s.cancel()
	eventually.True(t, "the listener to close", func() (bool, string) {
		c, err := net.Dial("tcp", s.addr)
		if err == nil {
			c.Close()
			return false, "it accepts connections"
		}
		return true, ""
	})
	close(b.release)
	if err := <-errc; err != nil {
		t.Errorf("the in-flight request failed on shutdown: %v", err)
	}
	if err := <-s.done; err != nil {
		t.Errorf("Serve() = %v, want nil", err)
	}
	s.done <- nil // for the cleanup
}

func TestNewChecksEverything(t *testing.T) {
	tests := []struct {
		name, plugins string
		files         map[string]string
		env           map[string]string
		want          string
	}{
		{"missing command", `
- name: p
  allowUnauthenticated: true
  backend: {command: {argv: [./nope.sh]}}`, nil, nil, `plugin p: command "./nope.sh"`},
		{"not executable", `
- name: p
  allowUnauthenticated: true
  backend: {command: {argv: [./p.py]}}`, map[string]string{"p.py": "print(1)"}, nil, "is not an executable file"},
		{"command not in PATH", `
- name: p
  allowUnauthenticated: true
  backend: {command: {argv: [no-such-command-strata]}}`, nil, nil, `command "no-such-command-strata" is not in PATH`},
		{"missing token file", `
- name: p
  token: {file: token}
  backend: {static: {files: [s.yaml]}}`, map[string]string{"s.yaml": "[]"}, nil, "token: open"},
		{"empty token file", `
- name: p
  token: {file: token}
  backend: {static: {files: [s.yaml]}}`, map[string]string{"s.yaml": "[]", "token": "\n"}, nil, "the token is empty"},
		{"unset token env", `
- name: p
  token: {env: GEN_TEST_UNSET_VAR}
  backend: {static: {files: [s.yaml]}}`, map[string]string{"s.yaml": "[]"}, nil, "GEN_TEST_UNSET_VAR is not set"},
		{"static glob matches nothing", `
- name: p
  allowUnauthenticated: true
  backend: {static: {files: ["sets/*.yaml"]}}`, nil, nil, "sets/*.yaml matches no file"},
		{"static file not a list", `
- name: p
  allowUnauthenticated: true
  backend: {static: {files: [s.yaml]}}`, map[string]string{"s.yaml": "a: b\n"}, nil, "s.yaml:1: the file must hold a list of parameter sets (objects), but it holds a map"},
		// The controller could not read it.
		{"static number beyond float64", `
- name: p
  allowUnauthenticated: true
  backend: {static: {files: [s.json]}}`, map[string]string{"s.json": "[{\"a\": 1},\n {\"b\": [-1e400]}]"}, nil, "s.json:2: item 1: the number -1e400 is out of range"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _ := parseTestConfig(t, tc.plugins, tc.files)
			_, err := generator.New(cfg, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New() = %v, want an error containing %q", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "gen.yaml: plugin p: ") {
				t.Errorf("New() = %v, want it to name the file and plugin", err)
			}
		})
	}
}

func TestServeTLSNeedsCertificate(t *testing.T) {
	dir := t.TempDir()
	cfg, err := generator.ParseConfig([]byte(`apiVersion: strata.dev/v1alpha1
kind: GeneratorConfig
tls: {certFile: tls.crt, keyFile: tls.key}
plugins:
- {name: p, allowUnauthenticated: true, backend: {static: {files: [s.yaml]}}}
`), "gen.yaml", dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := generator.New(cfg, nil); err == nil || !strings.Contains(err.Error(), "tls: loading") {
		t.Errorf("New() without certificate files = %v, want a tls error", err)
	}
}
