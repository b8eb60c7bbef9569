package clustertest_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/strata-dev/strata/internal/eventually"
	"github.com/strata-dev/strata/internal/layers/controller"
	"github.com/strata-dev/strata/internal/layers/v1alpha1"
)

// TestReconcile follows one App through its life: first outputs, changes
// to each kind of layer, a missing layer and its return, no-op changes,
// and outputs edited by hand.
func TestReconcile(t *testing.T) {
	const ns = "reconcile"
	e := setup(t, ns)
	run := e.start(controller.Manager{Namespace: ns})

	e.create(
		configMap(ns, "catalog-values", "image:\n  tag: \"1.0\"\nreplicas: 1\nfrom: catalog\n"),
		catalog(ns, "giantswarm", "catalog-values"),
		configMap(ns, "cluster-values", "replicas: 2\nfrom: config\n"),
		configMap(ns, "high", "replicas: 5\n"),
		secret(ns, "user-secrets", "secrets", "password: hunter2\nfrom: user-secret\n"),
		secret(ns, "low-secret", "values", "token: abc\nfrom: low-secret\n"),
	)
	a := app(ns, "ingress", "giantswarm")
	a.Spec.Config.ConfigMap = v1alpha1.ObjectRef{Name: "cluster-values", Namespace: ns}
	a.Spec.UserConfig.Secret = v1alpha1.ObjectRef{Name: "user-secrets", Namespace: ns}
	a.Spec.ExtraConfigs = []v1alpha1.ExtraConfig{
		{Name: "high", Namespace: ns, Priority: 120},
		{Name: "optional-extra", Namespace: ns, Priority: 130, Optional: true},
		{Kind: "secret", Name: "low-secret", Namespace: ns, Priority: 1},
	}
	e.create(a)

	// ConfigMaps: catalog (0) → config (50) → high (120); the optional
	// extra is missing. Secrets: low-secret (1) → user-secrets (100).
	cm, sec := e.waitValues("ingress",
		"image: {tag: \"1.0\"}\nreplicas: 5\nfrom: config\n",
		"token: abc\npassword: hunter2\nfrom: user-secret\n")
	got, cond := e.waitReady("ingress", metav1.ConditionTrue, controller.ReasonValuesMerged)
	if !strings.Contains(cond.Message, "2 Secret layers") || !strings.Contains(cond.Message, "1 optional layer left out") {
		t.Errorf("Ready message %q: want the layer counts and the optional layer left out", cond.Message)
	}
	for _, o := range []metav1.Object{cm, sec} {
		refs := o.GetOwnerReferences()
		if len(refs) != 1 || refs[0].UID != got.UID || refs[0].Kind != "App" || refs[0].Name != "ingress" ||
			refs[0].APIVersion != v1alpha1.GroupVersion.String() || refs[0].Controller == nil || !*refs[0].Controller ||
			refs[0].BlockOwnerDeletion == nil || !*refs[0].BlockOwnerDeletion {
			t.Errorf("%s owner references = %+v, want the App %s as controller", o.GetName(), refs, got.UID)
		}
		if l := o.GetLabels(); l[controller.LabelManagedBy] != controller.ManagedBy || l[controller.LabelApp] != "ingress" {
			t.Errorf("%s labels = %v", o.GetName(), l)
		}
	}
	if sec.Type != corev1.SecretTypeOpaque {
		t.Errorf("output Secret type %q, want Opaque", sec.Type)
	}
	e.waitEvent("ingress", corev1.EventTypeNormal, controller.ReasonValuesUpdated, "ConfigMap ingress-chart-values")
	if v := counter(t, run.reg, "strata_layers_app_ready", map[string]string{"namespace": ns, "app": "ingress"}); v != 1 {
		t.Errorf("strata_layers_app_ready = %v, want 1", v)
	}
	if v := counter(t, run.reg, "strata_layers_app_layers", map[string]string{"namespace": ns, "app": "ingress", "kind": "ConfigMap"}); v != 3 {
		t.Errorf("strata_layers_app_layers{kind=ConfigMap} = %v, want 3", v)
	}

	// A change to each kind of layer reaches the outputs.
	cmObj := &corev1.ConfigMap{}
	cmObj.Namespace, cmObj.Name = ns, "cluster-values"
	e.update(cmObj, func() { cmObj.Data["values"] = "replicas: 2\nfrom: config-v2\n" })
	e.waitValues("ingress",
		"image: {tag: \"1.0\"}\nreplicas: 5\nfrom: config-v2\n",
		"token: abc\npassword: hunter2\nfrom: user-secret\n")

	catCM := &corev1.ConfigMap{}
	catCM.Namespace, catCM.Name = ns, "catalog-values"
	e.update(catCM, func() { catCM.Data["values"] = "image:\n  tag: \"2.0\"\nreplicas: 1\n" })
	e.waitValues("ingress",
		"image: {tag: \"2.0\"}\nreplicas: 5\nfrom: config-v2\n",
		"token: abc\npassword: hunter2\nfrom: user-secret\n")

	userSec := &corev1.Secret{}
	userSec.Namespace, userSec.Name = ns, "user-secrets"
	e.update(userSec, func() { userSec.Data["secrets"] = []byte("password: correct-horse\n") })
	e.waitValues("ingress",
		"image: {tag: \"2.0\"}\nreplicas: 5\nfrom: config-v2\n",
		"token: abc\npassword: correct-horse\nfrom: low-secret\n")

	// The optional layer appears: merged from then on.
	e.create(configMap(ns, "optional-extra", "replicas: 7\nextra: true\n"))
	e.waitValues("ingress",
		"image: {tag: \"2.0\"}\nreplicas: 7\nfrom: config-v2\nextra: true\n",
		"token: abc\npassword: correct-horse\nfrom: low-secret\n")

	// The outputs are written before the status: wait for the status of
	// the new layer set, so the snapshot below is of a settled App.
	eventually.Within(t, deadline, "the App's status counts the optional layer", func() (bool, string) {
		_, c := e.ready("ingress")
		if c == nil {
			return false, "no Ready condition"
		}
		return strings.Contains(c.Message, "4 ConfigMap layers"), c.Message
	})

	// A change that leaves the merged values as they are writes nothing:
	// no hot loop, no needless rollouts downstream.
	cm, sec = e.output("ingress")
	before, _ := e.ready("ingress")
	reconciles := counter(t, run.reg, "strata_layers_reconciles_total", nil)
	e.update(cmObj, func() { cmObj.Data["values"] = "# reformatted\nfrom: config-v2\nreplicas: 2\n" })
	eventually.Within(t, deadline, "the App is reconciled after its config changed", func() (bool, string) {
		n := counter(t, run.reg, "strata_layers_reconciles_total", nil)
		return n > reconciles, fmt.Sprintf("%v reconciles", n)
	})
	cm2, sec2 := e.output("ingress")
	after, _ := e.ready("ingress")
	if cm2.ResourceVersion != cm.ResourceVersion || sec2.ResourceVersion != sec.ResourceVersion || after.ResourceVersion != before.ResourceVersion {
		t.Errorf("an unchanged result rewrote something: ConfigMap %s→%s, Secret %s→%s, App %s→%s",
			cm.ResourceVersion, cm2.ResourceVersion, sec.ResourceVersion, sec2.ResourceVersion, before.ResourceVersion, after.ResourceVersion)
	}

	// A required layer disappears: Ready False with the reason, a Warning
	// Event, and the last good outputs kept.
	e.delete(cmObj)
	_, cond = e.waitReady("ingress", metav1.ConditionFalse, controller.ReasonConfigMapMergeFailed)
	for _, want := range []string{"ConfigMap reconcile/cluster-values", "not found", "spec.config.configMap"} {
		if !strings.Contains(cond.Message, want) {
			t.Errorf("Ready message %q does not mention %q", cond.Message, want)
		}
	}
	e.waitEvent("ingress", corev1.EventTypeWarning, controller.ReasonConfigMapMergeFailed, "cluster-values")
	cm3, sec3 := e.output("ingress")
	if cm3.Data["values"] != cm2.Data["values"] || !bytes.Equal(sec3.Data["values"], sec2.Data["values"]) {
		t.Errorf("the outputs changed on failure:\n%s\nwas\n%s", cm3.Data["values"], cm2.Data["values"])
	}
	if v := counter(t, run.reg, "strata_layers_app_ready", map[string]string{"namespace": ns, "app": "ingress"}); v != 0 {
		t.Errorf("strata_layers_app_ready = %v, want 0", v)
	}

	// It comes back: the App recovers.
	e.create(configMap(ns, "cluster-values", "from: config-v3\n"))
	e.waitValues("ingress",
		"image: {tag: \"2.0\"}\nreplicas: 7\nfrom: config-v3\nextra: true\n",
		"token: abc\npassword: correct-horse\nfrom: low-secret\n")
	e.waitReady("ingress", metav1.ConditionTrue, controller.ReasonValuesMerged)

	// Outputs edited or deleted by hand are written again.
	out, _ := e.output("ingress")
	e.update(out, func() { out.Data["values"] = "hacked: true\n" })
	_, outSec := e.output("ingress")
	e.delete(outSec)
	e.waitValues("ingress",
		"image: {tag: \"2.0\"}\nreplicas: 7\nfrom: config-v3\nextra: true\n",
		"token: abc\npassword: correct-horse\nfrom: low-secret\n")

	// A spec change is observed: observedGeneration follows.
	e.update(got, func() { got.Spec.ExtraConfigs = got.Spec.ExtraConfigs[:2] })
	a2, _ := e.waitReady("ingress", metav1.ConditionTrue, controller.ReasonValuesMerged)
	if a2.Generation < 2 {
		t.Errorf("App generation %d after a spec change, want 2 or more", a2.Generation)
	}
	e.waitValues("ingress",
		"image: {tag: \"2.0\"}\nreplicas: 7\nfrom: config-v3\nextra: true\n",
		"password: correct-horse\n")
}

// TestFailures checks the reasons and messages of Apps that cannot be
// merged, and that each recovers once its cause is fixed.
func TestFailures(t *testing.T) {
	const ns = "failures"
	e := setup(t, ns)
	e.namespace("failures-other")
	e.start(controller.Manager{Namespace: ns})
	e.create(
		configMap(ns, "catalog-values", "a: 1\n"),
		catalog(ns, "giantswarm", "catalog-values"),
		configMap(ns, "good", "b: 2\n"),
		configMap("failures-other", "elsewhere", "c: 3\n"),
		secret(ns, "bad-secret", "values", "password: 'hunter2\n"),
	)

	t.Run("listed twice", func(t *testing.T) {
		a := app(ns, "twice", "giantswarm")
		a.Spec.ExtraConfigs = []v1alpha1.ExtraConfig{{Name: "good", Namespace: ns}, {Name: "good", Namespace: ns, Priority: 80}}
		e.create(a)
		_, c := e.waitReady("twice", metav1.ConditionFalse, controller.ReasonInvalidSpec)
		if !strings.Contains(c.Message, "spec.extraConfigs[1]") || !strings.Contains(c.Message, "already listed") {
			t.Errorf("Ready message %q: want the field and the problem", c.Message)
		}
		e.waitEvent("twice", corev1.EventTypeWarning, controller.ReasonInvalidSpec, "spec.extraConfigs[1]")
		if cm, sec := e.output("twice"); cm != nil || sec != nil {
			t.Errorf("outputs written for an invalid App")
		}
		e.update(a, func() { a.Spec.ExtraConfigs = a.Spec.ExtraConfigs[:1] })
		e.waitReady("twice", metav1.ConditionTrue, controller.ReasonValuesMerged)
		e.waitValues("twice", "a: 1\nb: 2\n", "{}")
	})

	t.Run("catalog missing", func(t *testing.T) {
		a := app(ns, "no-catalog", "later")
		e.create(a)
		_, c := e.waitReady("no-catalog", metav1.ConditionFalse, controller.ReasonCatalogNotFound)
		if !strings.Contains(c.Message, "Catalog failures/later") {
			t.Errorf("Ready message %q: want the Catalog", c.Message)
		}
		e.create(configMap(ns, "later-values", "late: true\n"), catalog(ns, "later", "later-values"))
		e.waitReady("no-catalog", metav1.ConditionTrue, controller.ReasonValuesMerged)
		e.waitValues("no-catalog", "late: true\n", "{}")
	})

	t.Run("outside the namespace", func(t *testing.T) {
		a := app(ns, "outside", "giantswarm")
		a.Spec.ExtraConfigs = []v1alpha1.ExtraConfig{{Name: "elsewhere", Namespace: "failures-other"}}
		e.create(a)
		// Refused by the namespaces an App may read, before the cache
		// (which holds this namespace only) is asked.
		_, c := e.waitReady("outside", metav1.ConditionFalse, controller.ReasonNamespaceNotAllowed)
		if !strings.Contains(c.Message, "spec.extraConfigs[0].namespace") || !strings.Contains(c.Message, "allowed namespaces") {
			t.Errorf("Ready message %q: want the field and the setting", c.Message)
		}
	})

	t.Run("invalid Secret", func(t *testing.T) {
		a := app(ns, "bad-secret", "giantswarm")
		a.Spec.UserConfig.Secret = v1alpha1.ObjectRef{Name: "bad-secret", Namespace: ns}
		e.create(a)
		_, c := e.waitReady("bad-secret", metav1.ConditionFalse, controller.ReasonSecretMergeFailed)
		if !strings.Contains(c.Message, "Secret failures/bad-secret") || strings.Contains(c.Message, "hunter2") {
			t.Errorf("Ready message %q: want the Secret named and its content withheld", c.Message)
		}
		ev := e.waitEvent("bad-secret", corev1.EventTypeWarning, controller.ReasonSecretMergeFailed, "bad-secret")
		if strings.Contains(ev.Note, "hunter2") {
			t.Errorf("Event note %q shows the Secret's content", ev.Note)
		}
	})

	t.Run("alias bomb in a user ConfigMap", func(t *testing.T) {
		// 500 bytes whose aliases expand to 1.2 million values and 240 MB of
		// strings (issue 16): its App fails, the others are served.
		bomb := `a: &a "` + strings.Repeat("x", 200) + `"
b: &b [*a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d]
f: &f {<<: {x0: *e, x1: *e}, x2: *e, x3: *e, x4: *e, x5: *e, x6: *e, x7: *e}
g: &g [*f, *f, *f, *f, *f, *f, *f, *f]
h: [*g, *g, *g, *g]
`
		e.create(configMap(ns, "bomb", bomb))
		bad := app(ns, "bombed", "giantswarm")
		bad.Spec.UserConfig.ConfigMap = v1alpha1.ObjectRef{Name: "bomb", Namespace: ns}
		e.create(bad)
		_, c := e.waitReadyMessage("bombed", metav1.ConditionFalse, controller.ReasonConfigMapMergeFailed, "aliases count each time")
		if !strings.Contains(c.Message, "ConfigMap failures/bomb") || !strings.Contains(c.Message, "document expands to more than") {
			t.Errorf("Ready message %q: want the ConfigMap and the alias budget", c.Message)
		}
		e.waitEvent("bombed", corev1.EventTypeWarning, controller.ReasonConfigMapMergeFailed, "aliases count each time")
		if cm, sec := e.output("bombed"); cm != nil || sec != nil {
			t.Errorf("outputs written for an App whose layer is refused")
		}
		// The controller goes on serving the other Apps.
		good := app(ns, "beside-the-bomb", "giantswarm")
		e.create(good)
		e.waitReady("beside-the-bomb", metav1.ConditionTrue, controller.ReasonValuesMerged)
		e.waitValues("beside-the-bomb", "a: 1\n", "{}")
	})

	t.Run("output name taken", func(t *testing.T) {
		squatter := configMap(ns, "taken-chart-values", "mine: true\n")
		e.create(squatter)
		a := app(ns, "taken", "giantswarm")
		e.create(a)
		_, c := e.waitReady("taken", metav1.ConditionFalse, controller.ReasonOutputConflict)
		if !strings.Contains(c.Message, "ConfigMap failures/taken-chart-values exists and is not controlled by App failures/taken") {
			t.Errorf("Ready message %q", c.Message)
		}
		cm, _ := e.output("taken")
		if cm.Data["values"] != "mine: true\n" || len(cm.OwnerReferences) != 0 {
			t.Errorf("the controller changed a ConfigMap it does not own: %+v", cm)
		}
		// Deleting the squatter lets the controller write its own.
		e.delete(squatter)
		e.waitReady("taken", metav1.ConditionTrue, controller.ReasonValuesMerged)
		e.waitValues("taken", "a: 1\n", "{}")
	})
}
