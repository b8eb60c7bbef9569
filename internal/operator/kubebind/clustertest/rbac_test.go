package clustertest_test

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/strata-dev/strata/internal/eventually"
	"github.com/strata-dev/strata/internal/operator/kubebind"
)

var (
	clusterRoles        = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
	clusterRoleBindings = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}
	roles               = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"}
	roleBindings        = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}
)

// TestNamespaceRefused: with a namespace labelSelector, a namespace whose
// objects the operator may not list yet is reported and tried again; once
// RBAC lets it, its objects come as Added events. The source runs as a
// user of its own (impersonated) that may only watch namespaces.
func TestNamespaceRefused(t *testing.T) {
	e := setup(t)
	user, team := unique("kb-user-"), unique("t")
	e.apply(clusterRoles, fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: %[1]s}
rules:
- {apiGroups: [""], resources: [namespaces], verbs: [list, watch]}
`, user))
	e.apply(clusterRoleBindings, fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: %[1]s}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: %[1]s}]
`, user))
	rc := rest.CopyConfig(e.c.Config)
	rc.Impersonate = rest.ImpersonationConfig{UserName: user}
	src, err := kubebind.NewClusterSource(rc)
	if err != nil {
		t.Fatal(err)
	}
	src.RetryMin, src.RetryMax, src.OnError = e.src.RetryMin, e.src.RetryMax, e.src.OnError
	e.src = src

	_, sync := e.start(binding(fmt.Sprintf("  namespace: {labelSelector: {matchLabels: {team: %s}}}\n", team)))
	if sync != "" {
		t.Fatalf("Synchronization %q, want no objects", sync)
	}
	ns := unique("kb-rbac-")
	e.namespace(ns, "")
	e.apply(configMaps, cm(ns, "a", "", "1"))
	e.namespace(ns, "team: "+team)
	eventually.True(t, "the refused list reported", func() (bool, string) {
		errs := e.reported()
		for _, err := range errs {
			if strings.Contains(err, "namespace "+ns) && strings.Contains(err, "forbidden") {
				return true, ""
			}
		}
		return false, strings.Join(errs, "\n")
	})
	e.apply(roles, fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: read, namespace: %s}
rules:
- {apiGroups: [""], resources: [configmaps], verbs: [list, watch]}
`, ns))
	e.apply(roleBindings, fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: read, namespace: %s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: read}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: %s}]
`, ns, user))
	e.expect("Added " + res(ns, "a", "1"))
	e.apply(configMaps, cm(ns, "a", "", "2"))
	e.expect("Modified " + res(ns, "a", "2"))
}
