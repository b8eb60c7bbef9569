// Package deploy_test checks the manifests under deploy/: the kustomize
// components composed with Argo CD's own install.yaml, the Helm chart
// (lint, templates with several value sets, its schema), and the install
// commands README.md gives. deploy/clustertest applies the same objects to
// a real API server with a server-side dry run.
package deploy_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/strata-dev/strata/deploy/deploytest"
	"github.com/strata-dev/strata/internal/cmpserver"
)

// sidecar is what a component adds to argocd-repo-server.
type sidecar struct {
	container   string
	metricsPort string // the named port of --metrics-listen
	copied      bool   // runs strata copied into var-files by strata-install
}

var (
	cmpSidecar  = sidecar{container: "strata-cmp", metricsPort: "cmp-metrics", copied: true}
	helmSidecar = sidecar{container: "strata-helm", metricsPort: "helm-metrics"}
)

// TestCmpComponents builds Argo CD's install.yaml with deploy/cmp,
// deploy/cmp/helm and both, and checks what argocd-repo-server gets.
func TestCmpComponents(t *testing.T) {
	for _, tc := range []struct {
		name       string
		components []string
		sidecars   []sidecar
	}{
		{"cmp", []string{"deploy/cmp"}, []sidecar{cmpSidecar}},
		{"helm", []string{"deploy/cmp/helm"}, []sidecar{helmSidecar}},
		{"cmp+helm", []string{"deploy/cmp", "deploy/cmp/helm"}, []sidecar{cmpSidecar, helmSidecar}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := deploytest.Compose(t, tc.components...)
			for _, u := range objs {
				if ns := u.GetNamespace(); ns != "" && ns != "argocd" {
					t.Errorf("%s %s: namespace %q, want argocd", u.GetKind(), u.GetName(), ns)
				}
			}
			d := deploytest.Deployment(t, objs, "argocd-repo-server")
			pod := &d.Spec.Template.Spec
			// Argo CD's own parts stay.
			if container(pod.Containers, "argocd-repo-server") == nil || container(pod.InitContainers, "copyutil") == nil {
				t.Fatalf("argocd-repo-server lost Argo CD's own containers: %v / %v", names(pod.Containers), names(pod.InitContainers))
			}
			checkVolumes(t, pod)
			copied := false
			for _, s := range tc.sidecars {
				c := container(pod.Containers, s.container)
				if c == nil {
					t.Fatalf("argocd-repo-server has no container %s (has %v)", s.container, names(pod.Containers))
				}
				checkSidecar(t, pod, c, s)
				copied = copied || s.copied
			}
			install := container(pod.InitContainers, "strata-install")
			if copied != (install != nil) {
				t.Errorf("init container strata-install present: %v, want %v", install != nil, copied)
			}
			if install != nil {
				checkInstall(t, install)
				if cmp := container(pod.Containers, cmpSidecar.container); cmp != nil && (len(cmp.Command) == 0 || cmp.Command[0] != installTarget(install)) {
					t.Errorf("strata-cmp runs %v, but strata-install copies strata to %s", cmp.Command, installTarget(install))
				}
			}
			if copied {
				cm := deploytest.Find(objs, "ConfigMap", "strata-cmp-plugin")
				if cm == nil {
					t.Fatal("no ConfigMap strata-cmp-plugin")
				}
				data, _, _ := unstructuredString(cm.Object, "data", "plugin.yaml")
				if _, err := cmpserver.ParseConfig([]byte(data), "strata-cmp-plugin data.plugin.yaml"); err != nil {
					t.Error(err)
				}
			}
			if container(pod.Containers, helmSidecar.container) != nil && deploytest.Find(objs, "Secret", "strata-helm-repositories") == nil {
				t.Error("no Secret strata-helm-repositories")
			}
		})
	}
}

func unstructuredString(obj map[string]any, fields ...string) (string, bool, error) {
	var cur any = obj
	for _, f := range fields {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false, nil
		}
		cur = m[f]
	}
	s, ok := cur.(string)
	return s, ok, nil
}

func container(cs []corev1.Container, name string) *corev1.Container {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

func names(cs []corev1.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func mount(c *corev1.Container, name string) *corev1.VolumeMount {
	for i := range c.VolumeMounts {
		if c.VolumeMounts[i].Name == name {
			return &c.VolumeMounts[i]
		}
	}
	return nil
}

func volume(pod *corev1.PodSpec, name string) *corev1.Volume {
	for i := range pod.Volumes {
		if pod.Volumes[i].Name == name {
			return &pod.Volumes[i]
		}
	}
	return nil
}

// checkVolumes checks that every mount names a volume of the pod and that
// no volume is there twice.
func checkVolumes(t *testing.T, pod *corev1.PodSpec) {
	t.Helper()
	seen := map[string]bool{}
	for _, v := range pod.Volumes {
		if seen[v.Name] {
			t.Errorf("volume %s is there twice", v.Name)
		}
		seen[v.Name] = true
	}
	for _, cs := range [][]corev1.Container{pod.InitContainers, pod.Containers} {
		for _, c := range cs {
			for _, m := range c.VolumeMounts {
				if !seen[m.Name] {
					t.Errorf("container %s mounts %s, which is no volume of the pod", c.Name, m.Name)
				}
			}
		}
	}
}

// flag returns the value of --name=value in args.
func flag(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// checkSecure checks the container-level security defaults every strata
// container carries.
func checkSecure(t *testing.T, c *corev1.Container, pod *corev1.PodSpec) {
	t.Helper()
	sc := c.SecurityContext
	if sc == nil {
		t.Errorf("%s: no securityContext", c.Name)
		return
	}
	nonRoot := sc.RunAsNonRoot
	if nonRoot == nil && pod.SecurityContext != nil {
		nonRoot = pod.SecurityContext.RunAsNonRoot
	}
	seccomp := sc.SeccompProfile
	if seccomp == nil && pod.SecurityContext != nil {
		seccomp = pod.SecurityContext.SeccompProfile
	}
	switch {
	case nonRoot == nil || !*nonRoot:
		t.Errorf("%s: runAsNonRoot is not true", c.Name)
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Errorf("%s: readOnlyRootFilesystem is not true", c.Name)
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Errorf("%s: allowPrivilegeEscalation is not false", c.Name)
	case sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) > 0:
		t.Errorf("%s: capabilities %+v, want drop [ALL] and no add", c.Name, sc.Capabilities)
	case seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault:
		t.Errorf("%s: seccompProfile %+v, want RuntimeDefault", c.Name, seccomp)
	}
	if c.Resources.Limits.Memory().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Errorf("%s: no memory request and limit", c.Name)
	}
}

// checkMemoryEnv checks the memory contract: STRATA_MEMORY_LIMIT holds the
// container's own memory limit.
func checkMemoryEnv(t *testing.T, c *corev1.Container) {
	t.Helper()
	for _, e := range c.Env {
		if e.Name != "STRATA_MEMORY_LIMIT" {
			continue
		}
		r := e.ValueFrom
		if r == nil || r.ResourceFieldRef == nil || r.ResourceFieldRef.Resource != "limits.memory" ||
			(r.ResourceFieldRef.ContainerName != "" && r.ResourceFieldRef.ContainerName != c.Name) {
			t.Errorf("%s: STRATA_MEMORY_LIMIT is %+v, want valueFrom.resourceFieldRef limits.memory of the container itself", c.Name, e)
		}
		return
	}
	t.Errorf("%s: no STRATA_MEMORY_LIMIT env", c.Name)
}

func checkSidecar(t *testing.T, pod *corev1.PodSpec, c *corev1.Container, s sidecar) {
	t.Helper()
	checkSecure(t, c, pod)
	checkMemoryEnv(t, c)
	if c.SecurityContext != nil && (c.SecurityContext.RunAsUser == nil || *c.SecurityContext.RunAsUser != 999) {
		t.Errorf("%s: runAsUser is not 999, the repo-server's user (its socket must be reachable by it)", c.Name)
	}
	if m := mount(c, "plugins"); m == nil || m.MountPath != "/home/argocd/cmp-server/plugins" {
		t.Errorf("%s: the plugins volume is not at /home/argocd/cmp-server/plugins: %+v", c.Name, m)
	}
	if s.copied {
		if m := mount(c, "var-files"); m == nil || m.MountPath != "/var/run/argocd" {
			t.Errorf("%s: the var-files volume is not at /var/run/argocd: %+v", c.Name, m)
		}
	}
	args := append(append([]string{}, c.Command...), c.Args...)
	listen, ok := flag(args, "metrics-listen")
	if !ok {
		t.Fatalf("%s: no --metrics-listen in %v", c.Name, args)
	}
	port := -1
	for _, p := range c.Ports {
		if p.Name == s.metricsPort {
			port = int(p.ContainerPort)
		}
	}
	if port < 0 || listen != ":"+strconv.Itoa(port) {
		t.Errorf("%s: --metrics-listen=%s, but port %s is %d", c.Name, listen, s.metricsPort, port)
	}
	for what, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		path := map[string]string{"liveness": "/healthz", "readiness": "/readyz"}[what]
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path || p.HTTPGet.Port.String() != s.metricsPort {
			t.Errorf("%s: %s probe %+v, want GET %s on %s", c.Name, what, p, path, s.metricsPort)
		}
	}
	checkWorkVolume(t, pod, c, args)
}

// checkWorkVolume checks that the volume at /tmp (the cache and work
// directories) is an emptyDir whose sizeLimit holds the byte budgets the
// flags set.
func checkWorkVolume(t *testing.T, pod *corev1.PodSpec, c *corev1.Container, args []string) {
	t.Helper()
	var work *corev1.VolumeMount
	for i := range c.VolumeMounts {
		if c.VolumeMounts[i].MountPath == "/tmp" {
			work = &c.VolumeMounts[i]
		}
	}
	if work == nil {
		t.Fatalf("%s: nothing mounted at /tmp (its cache and work directories)", c.Name)
	}
	v := volume(pod, work.Name)
	if v == nil || v.EmptyDir == nil || v.EmptyDir.SizeLimit == nil {
		t.Fatalf("%s: the work volume %s is not an emptyDir with a sizeLimit", c.Name, work.Name)
	}
	var sum int64
	for _, f := range []string{"cache-bytes", "recycle-bytes", "max-disk-bytes", "max-written-bytes-total", "helm-dependency-cache-bytes"} {
		if s, ok := flag(args, f); ok {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				t.Errorf("%s: --%s=%s: %v", c.Name, f, s, err)
			}
			sum += n
		}
	}
	if _, ok := flag(args, "cache-bytes"); !ok {
		t.Errorf("%s: no --cache-bytes: the default is not bounded by the volume's size", c.Name)
	}
	if v.EmptyDir.SizeLimit.Cmp(*resource.NewQuantity(sum, resource.BinarySI)) < 0 {
		t.Errorf("%s: volume %s's sizeLimit %s is below the byte budgets of the flags (%d)", c.Name, v.Name, v.EmptyDir.SizeLimit, sum)
	}
}

// installTarget is where strata-install copies strata.
func installTarget(c *corev1.Container) string {
	if len(c.Args) == 0 {
		return ""
	}
	return c.Args[len(c.Args)-1]
}

func checkInstall(t *testing.T, c *corev1.Container) {
	t.Helper()
	checkSecure(t, c, nil)
	if !strings.HasPrefix(c.Image, "ghcr.io/strata-dev/strata:") {
		t.Errorf("strata-install runs %s, not strata's image", c.Image)
	}
	if fmt.Sprint(c.Args) != fmt.Sprint(installArgs("/var/run/argocd/strata")) || len(c.Command) != 0 {
		t.Errorf("strata-install runs %v %v, want the image's entrypoint with %v", c.Command, c.Args, installArgs("/var/run/argocd/strata"))
	}
	if m := mount(c, "var-files"); m == nil || m.MountPath != "/var/run/argocd" {
		t.Errorf("strata-install: the var-files volume is not at /var/run/argocd: %+v", m)
	}
}

// installArgs are the arguments of strata's image that copy strata to
// path: the one place the tests know them from.
func installArgs(path string) []string { return []string{"copy-self", path} }
