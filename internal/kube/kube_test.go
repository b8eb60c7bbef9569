package kube_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/strata-dev/strata/internal/kube"
)

const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: a
  cluster: {server: "https://a.example:6443"}
- name: b
  cluster: {server: "https://b.example:6443"}
contexts:
- name: a
  context: {cluster: a, user: me}
- name: b
  context: {cluster: b, user: me}
current-context: a
users:
- name: me
  user: {token: abc}
`

func TestRESTConfig(t *testing.T) {
	file := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(file, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		opts    kube.Options
		host    string
		timeout time.Duration
		err     string
	}{
		{"current context", kube.Options{Kubeconfig: file}, "https://a.example:6443", kube.DefaultTimeout, ""},
		{"named context", kube.Options{Kubeconfig: file, Context: "b", Timeout: time.Second}, "https://b.example:6443", time.Second, ""},
		{"unknown context", kube.Options{Kubeconfig: file, Context: "c"}, "", 0, `context "c" does not exist`},
		{"missing file", kube.Options{Kubeconfig: file + ".missing"}, "", 0, "loading " + file + ".missing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := kube.RESTConfig(tc.opts)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("RESTConfig error = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Host != tc.host || cfg.Timeout != tc.timeout || cfg.UserAgent != "strata" || cfg.BearerToken != "abc" {
				t.Errorf("RESTConfig = host %s timeout %v agent %q, want %s %v strata", cfg.Host, cfg.Timeout, cfg.UserAgent, tc.host, tc.timeout)
			}
		})
	}
}

// TestErrors maps the API server's error statuses, as it writes them, to
// strata's errors.
func TestErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/configmaps/gone"):
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"configmaps \"gone\" not found","reason":"NotFound","details":{"name":"gone","kind":"configmaps"},"code":404}`))
		case strings.HasSuffix(r.URL.Path, "/secrets/s"):
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"secrets \"s\" is forbidden: User \"me\" cannot get resource \"secrets\"","reason":"Forbidden","details":{"name":"s","kind":"secrets"},"code":403}`))
		case strings.Contains(r.URL.Path, "/apis/application.giantswarm.io/"):
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404}`))
		case strings.HasSuffix(r.URL.Path, "/configmaps/here"):
			w.Write([]byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"here","namespace":"ns"},"data":{"values":"a: 1"}}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c, err := kube.New(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cm, err := c.ConfigMap(ctx, "ns", "here")
	if err != nil || cm.Data["values"] != "a: 1" {
		t.Errorf("ConfigMap(here) = %v, %v", cm, err)
	}
	if _, err := c.ConfigMap(ctx, "ns", "gone"); !errors.Is(err, kube.ErrNotFound) {
		t.Errorf("ConfigMap(gone) error = %v, want ErrNotFound", err)
	}
	if _, err := c.Secret(ctx, "ns", "s"); err == nil || errors.Is(err, kube.ErrNotFound) || !strings.Contains(err.Error(), "need get on secrets") {
		t.Errorf("Secret(s) error = %v, want forbidden with a hint", err)
	}
	gvr := schema.GroupVersionResource{Group: "application.giantswarm.io", Version: "v1alpha1", Resource: "catalogs"}
	if _, err := c.Object(ctx, gvr, "ns", "x"); err == nil || errors.Is(err, kube.ErrNotFound) || !strings.Contains(err.Error(), "CustomResourceDefinition") {
		t.Errorf("Object(catalog) error = %v, want a missing-CRD error", err)
	}
}
