package webhook_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/strata-dev/strata/internal/eventually"
	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/webhook"
)

// runFunc is a webhook.Runner made of a function.
type runFunc func(ctx context.Context, hookID string, bc hook.BindingContext) ([]byte, error)

func (f runFunc) RunWebhook(ctx context.Context, hookID string, bc hook.BindingContext) ([]byte, error) {
	return f(ctx, hookID, bc)
}

// pki is a CA and a server certificate for 127.0.0.1 in files.
type pki struct {
	dir    string
	caKey  *ecdsa.PrivateKey
	ca     *x509.Certificate
	serial int64
}

func newPKI(t testing.TB) *pki {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	p := &pki{dir: t.TempDir(), caKey: key, ca: ca, serial: 1}
	writePEM(t, filepath.Join(p.dir, "ca.crt"), "CERTIFICATE", der)
	p.issue(t)
	return p
}

// issue writes a new server certificate and key; it returns its serial.
func (p *pki) issue(t testing.TB) int64 {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p.serial++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(p.serial), Subject: pkix.Name{CommonName: "127.0.0.1"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	kd, _ := x509.MarshalECPrivateKey(key)
	writePEM(t, filepath.Join(p.dir, "tls.key"), "EC PRIVATE KEY", kd)
	writePEM(t, filepath.Join(p.dir, "tls.crt"), "CERTIFICATE", der)
	return p.serial
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (p *pki) server() webhook.ServerSettings {
	return webhook.ServerSettings{ServerCert: filepath.Join(p.dir, "tls.crt"), ServerKey: filepath.Join(p.dir, "tls.key"), CA: filepath.Join(p.dir, "ca.crt"),
		ListenAddress: "127.0.0.1", ListenPort: "0"}
}

func (p *pki) client() *http.Client {
	pool := x509.NewCertPool()
	pool.AddCert(p.ca)
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true}}
}

// started returns a manager serving b with runner, its PKI and registry.
func started(t testing.TB, runner webhook.Runner, b webhook.Bindings, policy string) (*webhook.Manager, *pki, *prometheus.Registry) {
	t.Helper()
	p := newPKI(t)
	reg := prometheus.NewRegistry()
	m := webhook.NewManager(webhook.Settings{FailurePolicy: policy, Validating: p.server(), Conversion: p.server()}, runner, nil, reg, "test_", slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	m.Start(ctx)
	t.Cleanup(func() { cancel(); m.Wait() })
	if err := m.Update(b); err != nil {
		t.Fatal(err)
	}
	return m, p, reg
}

func post(t *testing.T, c *http.Client, url, body string) (int, map[string]any) {
	t.Helper()
	resp, err := c.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(data, &out); err != nil {
			t.Fatalf("response %s: %v", data, err)
		}
	}
	return resp.StatusCode, out
}

func validating(name, policy string, timeout int32) webhook.Validating {
	return webhook.Validating{Hook: "global check.sh", Binding: &hook.ValidatingBinding{Name: name, FailurePolicy: policy, TimeoutSeconds: timeout,
		Rules: []hook.WebhookRule{{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}, Operations: []string{"CREATE"}}}}}
}

const admissionReview = `{"apiVersion":"admission.k8s.io/%s","kind":"AdmissionReview","request":{"uid":"uid-1","kind":{"group":"","version":"v1","kind":"ConfigMap"},"operation":"CREATE","name":"cm","namespace":"default","object":{"data":{"answer":%q}}}}`

func TestValidatingReviews(t *testing.T) {
	var mu sync.Mutex
	var seen []hook.BindingContext
	runner := runFunc(func(ctx context.Context, hookID string, bc hook.BindingContext) ([]byte, error) {
		mu.Lock()
		seen = append(seen, bc)
		mu.Unlock()
		if hookID != "global check.sh" {
			return nil, fmt.Errorf("hook %q", hookID)
		}
		if _, ok := ctx.Deadline(); !ok {
			return nil, errors.New("no deadline")
		}
		var r struct {
			Request struct {
				Object struct{ Data struct{ Answer string } }
			}
		}
		if err := json.Unmarshal(bc.Review, &r); err != nil {
			return nil, err
		}
		switch a := r.Request.Object.Data.Answer; a {
		case "fail":
			return nil, errors.New("hook exited 1: boom")
		case "none":
			return nil, nil
		default:
			return []byte(a), nil
		}
	})
	b := webhook.Bindings{Validating: []webhook.Validating{validating("strict.example.com", "Fail", 10), validating("lax.example.com", "Ignore", 10), validating("default.example.com", "", 10)}}
	m, p, reg := started(t, runner, b, "Fail")
	c := p.client()
	base := "https://" + m.Addr("validating")

	tests := []struct {
		name, webhook, version, answer string
		want                           map[string]any
	}{
		{"allowed with warnings", "strict.example.com", "v1", `{"allowed":true,"warnings":["it is Tuesday"]}`,
			map[string]any{"uid": "uid-1", "allowed": true, "warnings": []any{"it is Tuesday"}}},
		{"denied", "strict.example.com", "v1", `{"allowed":false,"message":"You cannot do this because it is Tuesday"}`,
			map[string]any{"uid": "uid-1", "allowed": false, "status": map[string]any{"status": "Failure", "code": 403.0, "message": "You cannot do this because it is Tuesday"}}},
		{"v1beta1 review", "strict.example.com", "v1beta1", `{"allowed":true}`, map[string]any{"uid": "uid-1", "allowed": true}},
		{"hook failed, Fail", "strict.example.com", "v1", "fail",
			map[string]any{"uid": "uid-1", "allowed": false, "status": map[string]any{"status": "Failure", "code": 500.0, "message": "the hook failed: global check.sh (webhook strict.example.com): hook exited 1: boom"}}},
		{"hook failed, Ignore", "lax.example.com", "v1", "fail",
			map[string]any{"uid": "uid-1", "allowed": true, "warnings": []any{"allowed by failurePolicy Ignore: global check.sh (webhook lax.example.com): hook exited 1: boom"}}},
		{"no answer, the default policy", "default.example.com", "v1", "none",
			map[string]any{"uid": "uid-1", "allowed": false, "status": map[string]any{"status": "Failure", "code": 500.0, "message": "the hook failed: global check.sh (webhook default.example.com): the hook wrote no answer to $VALIDATING_RESPONSE_PATH; write {\"allowed\": true} or {\"allowed\": false, \"message\": \"...\"}"}}},
		{"bad answer", "strict.example.com", "v1", `{"allowed":"yes"}`,
			map[string]any{"uid": "uid-1", "allowed": false, "status": map[string]any{"status": "Failure", "code": 500.0, "message": "the hook failed: global check.sh (webhook strict.example.com): $VALIDATING_RESPONSE_PATH: json: cannot unmarshal string into Go struct field ValidatingAnswer.allowed of type bool; allowed is true or false, message a string, warnings a list of strings"}}},
		{"unknown webhook", "gone.example.com", "v1", `{"allowed":true}`,
			map[string]any{"uid": "uid-1", "allowed": false, "status": map[string]any{"code": 500.0, "message": "strata operator: no hook serves the validating webhook \"gone.example.com\" now; its configuration is being updated"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out := post(t, c, base+webhook.ValidatingPath(tc.webhook), fmt.Sprintf(admissionReview, tc.version, tc.answer))
			if code != http.StatusOK {
				t.Fatalf("status %d", code)
			}
			if out["apiVersion"] != "admission.k8s.io/"+tc.version || out["kind"] != "AdmissionReview" {
				t.Errorf("review %v %v, want admission.k8s.io/%s AdmissionReview", out["apiVersion"], out["kind"], tc.version)
			}
			if diff := cmp.Diff(tc.want, out["response"]); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}
	mu.Lock()
	bc := seen[0]
	mu.Unlock()
	if bc.BindingType != hook.KubernetesValidating || bc.Type != hook.TypeValidating || bc.Binding != "strict.example.com" || !json.Valid(bc.Review) || !bytes.Contains(bc.Review, []byte(`"uid":"uid-1"`)) {
		t.Errorf("binding context %+v, want a Validating context with the whole review", bc)
	}
	if got := testutil.ToFloat64(mustCounter(t, reg, "test_webhook_reviews_total", "validating", "strict.example.com", "denied")); got != 1 {
		t.Errorf("reviews_total{denied} = %v, want 1", got)
	}

	for _, bad := range []struct{ body, ct string }{{"not json", "application/json"}, {`{"kind":"AdmissionReview"}`, "application/json"}, {`{}`, "text/plain"}} {
		resp, err := c.Post(base+webhook.ValidatingPath("strict.example.com"), bad.ct, strings.NewReader(bad.body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Errorf("POST %q (%s): status %d, want an error", bad.body, bad.ct, resp.StatusCode)
		}
	}
}

func mustCounter(t *testing.T, reg *prometheus.Registry, name string, labels ...string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, mt := range mf.GetMetric() {
			var vals []string
			for _, lp := range mt.GetLabel() {
				vals = append(vals, lp.GetValue())
			}
			// labels sort by name: kind, outcome, webhook.
			if cmp.Equal(vals, []string{labels[0], labels[2], labels[1]}) {
				return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "x", Help: "x"}, func() float64 { return mt.GetCounter().GetValue() })
			}
		}
	}
	t.Fatalf("no %s%v", name, labels)
	return nil
}

// The hook's run is bounded by the binding's timeoutSeconds.
func TestValidatingTimeout(t *testing.T) {
	runner := runFunc(func(ctx context.Context, _ string, _ hook.BindingContext) ([]byte, error) {
		dl, ok := ctx.Deadline()
		if !ok || time.Until(dl) > 2*time.Second {
			return []byte(`{"allowed":false,"message":"deadline not set from timeoutSeconds"}`), nil
		}
		return []byte(`{"allowed":true}`), nil
	})
	m, p, _ := started(t, runner, webhook.Bindings{Validating: []webhook.Validating{validating("fast.example.com", "Fail", 2)}}, "Fail")
	_, out := post(t, p.client(), "https://"+m.Addr("validating")+webhook.ValidatingPath("fast.example.com"), fmt.Sprintf(admissionReview, "v1", "x"))
	if r := out["response"].(map[string]any); r["allowed"] != true {
		t.Errorf("response %v", r)
	}
}

func TestUpdateRefusesDuplicateWebhooks(t *testing.T) {
	m := webhook.NewManager(webhook.Settings{}, runFunc(nil), nil, nil, "", slog.New(slog.NewTextHandler(io.Discard, nil)))
	a, b := validating("same.example.com", "", 10), validating("same.example.com", "", 10)
	b.Hook = "module m other.sh"
	err := m.Update(webhook.Bindings{Validating: []webhook.Validating{a, b}})
	want := `the validating webhook "same.example.com" is bound by two hooks, global check.sh and module m other.sh; webhook names must be unique across all hooks`
	if err == nil || err.Error() != want {
		t.Errorf("Update = %v, want %s", err, want)
	}
}

// A renewed certificate is served without a restart.
func TestCertificateReload(t *testing.T) {
	runner := runFunc(func(context.Context, string, hook.BindingContext) ([]byte, error) {
		return []byte(`{"allowed":true}`), nil
	})
	m, p, _ := started(t, runner, webhook.Bindings{Validating: []webhook.Validating{validating("a.example.com", "", 10)}}, "Fail")
	addr := m.Addr("validating")
	servedSerial := func() int64 {
		pool := x509.NewCertPool()
		pool.AddCert(p.ca)
		conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
	}
	if got := servedSerial(); got != 2 {
		t.Fatalf("serial %d, want 2", got)
	}
	want := p.issue(t)
	eventually.True(t, "the new certificate served", func() (bool, string) {
		got := servedSerial()
		return got == want, fmt.Sprintf("serial %d, want %d", got, want)
	})
}

func TestServerCertificateMissing(t *testing.T) {
	m := webhook.NewManager(webhook.Settings{Validating: webhook.ServerSettings{ServerCert: "/nonexistent/tls.crt", ServerKey: "/nonexistent/tls.key", ListenAddress: "127.0.0.1", ListenPort: "0"}},
		runFunc(nil), nil, nil, "", slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); m.Wait() }()
	m.Start(ctx)
	err := m.Update(webhook.Bindings{Validating: []webhook.Validating{validating("a.example.com", "", 10)}})
	if err == nil || !strings.Contains(err.Error(), "validating webhook server: reading the webhook server certificate") || !strings.Contains(err.Error(), "VALIDATING_WEBHOOK_SERVER_CERT") {
		t.Errorf("Update = %v, want an error naming the certificate and the setting", err)
	}
}

// A manager stopped with its context serves again when started anew (an
// engine's second start, under HA).
func TestManagerRestart(t *testing.T) {
	p := newPKI(t)
	runner := runFunc(func(context.Context, string, hook.BindingContext) ([]byte, error) {
		return []byte(`{"allowed":true}`), nil
	})
	m := webhook.NewManager(webhook.Settings{Validating: p.server()}, runner, nil, prometheus.NewRegistry(), "", slog.New(slog.NewTextHandler(io.Discard, nil)))
	b := webhook.Bindings{Validating: []webhook.Validating{validating("a.example.com", "", 10)}}
	for i := range 2 {
		ctx, cancel := context.WithCancel(context.Background())
		m.Start(ctx)
		if err := m.Update(b); err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
		code, out := post(t, p.client(), "https://"+m.Addr("validating")+webhook.ValidatingPath("a.example.com"), fmt.Sprintf(admissionReview, "v1", "x"))
		if code != http.StatusOK || out["response"].(map[string]any)["allowed"] != true {
			t.Errorf("start %d: %d %v", i, code, out)
		}
		cancel()
		m.Wait()
		if a := m.Addr("validating"); a != "" {
			t.Errorf("start %d: still serving on %s after its context ended", i, a)
		}
	}
}
