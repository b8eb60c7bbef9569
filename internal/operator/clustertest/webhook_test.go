package clustertest_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/strata-dev/strata/internal/eventually"
	"github.com/strata-dev/strata/internal/kube/kubetest"
	"github.com/strata-dev/strata/internal/operator/webhook"
)

// webhookTree has two global hooks: one validating Widgets (a Widget of
// size huge is refused with the hook's message), one converting them
// between v1 (spec.size) and v2 (spec.dimension). Both are plain sh with
// sed, reading the binding context as shell-operator's hooks do.
var webhookTree = map[string]string{
	"global-hooks/validate.sh": `#!/bin/sh
if [ "$1" = "--config" ]; then
  cat <<'CFG'
configVersion: v1
kubernetesValidating:
- name: widgets.webhook.strata.test
  rules:
  - apiGroups: [webhook.strata.test]
    apiVersions: ["*"]
    resources: [widgets]
    operations: [CREATE, UPDATE]
  timeoutSeconds: 10
CFG
  exit 0
fi
grep -q '"type":"Validating"' "$BINDING_CONTEXT_PATH" || { echo "no Validating context" >&2; exit 1; }
if grep -q '"size":"huge"' "$BINDING_CONTEXT_PATH"; then
  echo '{"allowed":false,"message":"huge widgets do not fit"}' > "$VALIDATING_RESPONSE_PATH"
else
  echo '{"allowed":true,"warnings":["checked by validate.sh"]}' > "$VALIDATING_RESPONSE_PATH"
fi
`,
	"modules/values.yaml": "guardEnabled: true\n",
	"modules/001-guard/hooks/guard.sh": `#!/bin/sh
if [ "$1" = "--config" ]; then
  cat <<'CFG'
configVersion: v1
kubernetesValidating:
- name: guard.webhook.strata.test
  rules:
  - {apiGroups: [webhook.strata.test], apiVersions: ["*"], resources: [widgets], operations: [DELETE]}
CFG
  exit 0
fi
echo '{"allowed":true}' > "$VALIDATING_RESPONSE_PATH"
`,
	"global-hooks/convert.sh": `#!/bin/sh
if [ "$1" = "--config" ]; then
  cat <<'CFG'
configVersion: v1
kubernetesCustomResourceConversion:
- name: widgets
  crdName: widgets.webhook.strata.test
  conversions:
  - fromVersion: webhook.strata.test/v1
    toVersion: webhook.strata.test/v2
  - fromVersion: webhook.strata.test/v2
    toVersion: webhook.strata.test/v1
CFG
  exit 0
fi
objects=$(sed -e 's/.*"objects":\(\[.*\]\),"uid".*/\1/' "$BINDING_CONTEXT_PATH")
if grep -q '"toVersion":"webhook.strata.test/v2"' "$BINDING_CONTEXT_PATH"; then
  objects=$(printf '%s' "$objects" | sed -e 's#"apiVersion":"webhook.strata.test/v1"#"apiVersion":"webhook.strata.test/v2"#g' -e 's/"size":/"dimension":/g')
else
  objects=$(printf '%s' "$objects" | sed -e 's#"apiVersion":"webhook.strata.test/v2"#"apiVersion":"webhook.strata.test/v1"#g' -e 's/"dimension":/"size":/g')
fi
printf '{"convertedObjects":%s}\n' "$objects" > "$CONVERSION_RESPONSE_PATH"
`,
}

// writeCerts writes a CA and a server certificate for 127.0.0.1 signed by
// it into dir: ca.crt, tls.crt, tls.key.
func writeCerts(t *testing.T, dir string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "strata webhook test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	for name, block := range map[string]*pem.Block{
		"ca.crt":  {Type: "CERTIFICATE", Bytes: caDER},
		"tls.crt": {Type: "CERTIFICATE", Bytes: der},
		"tls.key": {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

var widgets = schema.GroupVersionResource{Group: "webhook.strata.test", Version: "v1", Resource: "widgets"}

func widget(version, name, size string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "webhook.strata.test/" + version, "kind": "Widget",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"size": size},
	}}
}

// TestWebhooksOnCluster has the real kube-apiserver call strata's webhook
// servers on loopback (clientConfig.url, a strata extension: a Service
// cannot route to the test's process): a Widget refused by the validating
// hook with its message, one allowed, and a Widget created as v1 read as
// v2 through the conversion hook.
func TestWebhooksOnCluster(t *testing.T) {
	c := kubetest.Shared(t)
	ns := freshNamespace(t, c, "operator-webhook")
	dir := t.TempDir()
	writeTree(t, dir, webhookTree)
	for _, p := range []string{"global-hooks/validate.sh", "global-hooks/convert.sh", "modules/001-guard/hooks/guard.sh"} {
		if err := os.Chmod(filepath.Join(dir, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	certs := filepath.Join(dir, "certs")
	if err := os.MkdirAll(certs, 0o700); err != nil {
		t.Fatal(err)
	}
	writeCerts(t, certs)

	s := clusterSettings(dir, ns, c)
	vport, cport := freePort(t), freePort(t)
	s.Webhooks.Validating = webhook.ServerSettings{ConfigurationName: "strata-test-" + ns, ServerCert: filepath.Join(certs, "tls.crt"), ServerKey: filepath.Join(certs, "tls.key"),
		CA: filepath.Join(certs, "ca.crt"), ListenAddress: "127.0.0.1", ListenPort: vport, URL: "https://127.0.0.1:" + vport}
	s.Webhooks.Conversion = webhook.ServerSettings{ServerCert: filepath.Join(certs, "tls.crt"), ServerKey: filepath.Join(certs, "tls.key"),
		CA: filepath.Join(certs, "ca.crt"), ListenAddress: "127.0.0.1", ListenPort: cport, URL: "https://127.0.0.1:" + cport}
	vwc := webhook.ValidatingConfigurationName(s.Webhooks.Validating.ConfigurationName)
	t.Cleanup(func() {
		_ = c.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(t.Context(), vwc, metav1.DeleteOptions{})
		_ = c.Dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}).
			Delete(t.Context(), "widgets.webhook.strata.test", metav1.DeleteOptions{})
	})
	r := startEngine(t, s)
	history := func() string { return strings.Join(r.eng.History(), "\n") }
	// The CRD comes after the operator (as a module's chart would make
	// it): its conversion is set once it exists.
	if err := c.InstallCRDs(t.Context(), "testdata/widgets.yaml"); err != nil {
		t.Fatal(err)
	}

	// The configuration strata applied: the global hook's webhook and the
	// enabled module's.
	webhookNames := func() ([]string, error) {
		got, err := c.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(t.Context(), vwc, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		var names []string
		for _, w := range got.Webhooks {
			names = append(names, w.Name)
		}
		return names, nil
	}
	eventually.True(t, "the ValidatingWebhookConfiguration applied", func() (bool, string) {
		got, err := c.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(t.Context(), vwc, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if len(got.Webhooks) != 2 {
			return false, fmt.Sprint(got.Webhooks)
		}
		w := got.Webhooks[0]
		if w.Name != "widgets.webhook.strata.test" {
			w = got.Webhooks[1]
		}
		ok := w.Name == "widgets.webhook.strata.test" && w.ClientConfig.URL != nil &&
			*w.ClientConfig.URL == "https://127.0.0.1:"+vport+"/hooks/widgets.webhook.strata.test" && len(w.ClientConfig.CABundle) > 0 &&
			w.FailurePolicy != nil && *w.FailurePolicy == "Fail" && w.TimeoutSeconds != nil && *w.TimeoutSeconds == 10
		return ok, fmt.Sprintf("%+v", w)
	})

	res := c.Dynamic.Resource(widgets).Namespace(ns)
	// (1) refused with the hook's message, through the API server.
	_, err := res.Create(t.Context(), widget("v1", "big", "huge"), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), `admission webhook "widgets.webhook.strata.test" denied the request: huge widgets do not fit`) {
		t.Fatalf("creating a huge Widget: %v, want it denied with the hook's message; history:\n%s", err, history())
	}
	if _, err := res.Get(t.Context(), "big", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the refused Widget exists: %v", err)
	}
	// ... and one allowed.
	if _, err := res.Create(t.Context(), widget("v1", "small", "small"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a small Widget: %v; history:\n%s", err, history())
	}

	// (2) the CRD's conversion points at strata, and v1 reads as v2.
	eventually.True(t, "the CRD's conversion set to strata's webhook", func() (bool, string) {
		crd, err := c.Dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}).
			Get(t.Context(), "widgets.webhook.strata.test", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		strategy, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "strategy")
		u, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "webhook", "clientConfig", "url")
		return strategy == "Webhook" && u == "https://127.0.0.1:"+cport+"/widgets.webhook.strata.test", fmt.Sprint(crd.Object["spec"])
	})
	v2 := c.Dynamic.Resource(schema.GroupVersionResource{Group: "webhook.strata.test", Version: "v2", Resource: "widgets"}).Namespace(ns)
	eventually.True(t, "the Widget read as v2, converted by the hook", func() (bool, string) {
		got, err := v2.Get(t.Context(), "small", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		dim, _, _ := unstructured.NestedString(got.Object, "spec", "dimension")
		_, hasSize, _ := unstructured.NestedString(got.Object, "spec", "size")
		return got.GetAPIVersion() == "webhook.strata.test/v2" && dim == "small" && !hasSize, fmt.Sprint(got.Object)
	})
	// Created as v2: stored as v1 (converted back), read as v1.
	if _, err := v2.Create(t.Context(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "webhook.strata.test/v2", "kind": "Widget", "metadata": map[string]any{"name": "wide"},
		"spec": map[string]any{"dimension": "medium"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a Widget as v2: %v; history:\n%s", err, history())
	}
	got, err := res.Get(t.Context(), "wide", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if size, _, _ := unstructured.NestedString(got.Object, "spec", "size"); size != "medium" {
		t.Fatalf("Widget wide read as v1 = %v, want spec.size medium", got.Object)
	}
	// The module disabled: its webhook leaves the configuration.
	putConfigMap(t, c, ns, "addon-operator", nil, map[string]string{"guardEnabled": "false"})
	eventually.True(t, "the disabled module's webhook removed", func() (bool, string) {
		names, err := webhookNames()
		return err == nil && len(names) == 1 && names[0] == "widgets.webhook.strata.test", fmt.Sprint(names, err)
	})
	if h := history(); !strings.Contains(h, "global validate.sh kubernetesValidating widgets.webhook.strata.test Validating") || !strings.Contains(h, "global convert.sh kubernetesCustomResourceConversion widgets Conversion") {
		t.Errorf("history has no webhook runs:\n%s", h)
	}
}
