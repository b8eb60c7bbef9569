package clustertest_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/strata-dev/strata/internal/eventually"
	"github.com/strata-dev/strata/internal/kustomize"
	"github.com/strata-dev/strata/internal/layers/controller"
	"github.com/strata-dev/strata/internal/layers/v1alpha1"
)

const (
	deployDir = "../../../../deploy/layers-controller"
	saUser    = "system:serviceaccount:strata-system:strata-layers-controller"
)

// TestDeploy applies deploy/layers-controller to the API server (which
// validates every object), checks what its RBAC allows and denies, then
// runs the controller as its ServiceAccount, with leader election, metrics
// and probes, as the Deployment does.
func TestDeploy(t *testing.T) {
	const ns = "deploy"
	e := setup(t, ns)
	ctx := t.Context()

	stream, err := (&kustomize.Build{}).Run(ctx, deployDir)
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(stream), 4096)
	kinds := map[string]bool{}
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatal(err)
		}
		if len(u.Object) == 0 {
			continue
		}
		kinds[u.GetKind()] = true
		if err := e.cl.Create(ctx, u); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Errorf("creating %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	for _, k := range []string{"CustomResourceDefinition", "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding",
		"Role", "RoleBinding", "Deployment", "Service", "PodDisruptionBudget"} {
		if !kinds[k] {
			t.Errorf("deploy/layers-controller has no %s", k)
		}
	}

	// Least privilege: what the controller does is allowed, the rest is not.
	for _, tc := range []struct {
		ns, group, resource, sub, verb string
		allowed                        bool
	}{
		{"", "application.giantswarm.io", "apps", "", "watch", true},
		{"x", "application.giantswarm.io", "apps", "status", "patch", true},
		{"", "application.giantswarm.io", "catalogs", "", "list", true},
		{"", "", "secrets", "", "list", true},
		{"x", "", "configmaps", "", "update", true},
		{"x", "events.k8s.io", "events", "", "create", true},
		{"strata-system", "coordination.k8s.io", "leases", "", "update", true},
		{"x", "application.giantswarm.io", "apps", "", "update", false},
		{"x", "application.giantswarm.io", "catalogs", "", "update", false},
		{"x", "", "configmaps", "", "delete", false},
		{"x", "", "secrets", "", "delete", false},
		{"x", "", "pods", "", "create", false},
		{"kube-system", "coordination.k8s.io", "leases", "", "update", false},
	} {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   saUser,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:strata-system", "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: tc.ns, Group: tc.group,
				Resource: tc.resource, Subresource: tc.sub, Verb: tc.verb},
		}}
		if err := e.cl.Create(ctx, sar); err != nil {
			t.Fatal(err)
		}
		if sar.Status.Allowed != tc.allowed {
			t.Errorf("the ServiceAccount may %s %s/%s %s in %q: %v, want %v", tc.verb, tc.group, tc.resource, tc.sub, tc.ns, sar.Status.Allowed, tc.allowed)
		}
	}

	metricsAddr, probeAddr := freeAddr(t), freeAddr(t)
	e.start(controller.Manager{
		Config:         impersonate(e.c.Config, saUser),
		LeaderElection: true, LeaderElectionNamespace: "strata-system",
		MetricsBindAddress: metricsAddr, HealthProbeBindAddress: probeAddr,
		Registry: ctrlmetrics.Registry, // served at /metrics
	})
	e.create(configMap(ns, "catalog-values", "a: 1\n"), catalog(ns, "giantswarm", "catalog-values"),
		secret(ns, "creds", "secrets", "password: s3cret\n"))
	a := app(ns, "deployed", "giantswarm")
	a.Spec.UserConfig.Secret = v1alpha1.ObjectRef{Name: "creds", Namespace: ns}
	e.create(a)
	e.waitValues("deployed", "a: 1\n", "password: s3cret\n")
	e.waitReady("deployed", metav1.ConditionTrue, controller.ReasonValuesMerged)
	e.waitEvent("deployed", corev1.EventTypeNormal, controller.ReasonValuesUpdated, "")

	for _, path := range []string{"/healthz", "/readyz"} {
		eventually.Within(t, deadline, "GET "+path+" answers 200", func() (bool, string) {
			code, body := get(t, "http://"+probeAddr+path)
			return code == http.StatusOK, fmt.Sprintf("%d %s", code, body)
		})
	}
	eventually.Within(t, deadline, "/metrics has the controller's metrics", func() (bool, string) {
		code, body := get(t, "http://"+metricsAddr+"/metrics")
		ok := code == http.StatusOK &&
			strings.Contains(body, `strata_layers_reconciles_total{result="success"}`) &&
			strings.Contains(body, `strata_layers_app_ready{app="deployed",namespace="deploy"} 1`) &&
			strings.Contains(body, "strata_layers_render_duration_seconds_bucket") &&
			strings.Contains(body, "strata_build_info{commit=") &&
			strings.Contains(body, `controller_runtime_reconcile_total{controller="layers-app"`)
		return ok, fmt.Sprintf("%d, %d bytes", code, len(body))
	})
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return resp.StatusCode, string(body)
}
