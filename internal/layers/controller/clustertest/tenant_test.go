package clustertest_test

import (
	"encoding/base64"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/strata-dev/strata/internal/layers"
	"github.com/strata-dev/strata/internal/layers/controller"
	"github.com/strata-dev/strata/internal/layers/v1alpha1"
)

// TestTenantIsolation is the attack of issue 23 on a controller deployed
// cluster-wide: an App in tenant-a names tenant-b's ConfigMap and Secret
// and the platform's Secret. It is refused, field by field, and nothing of
// tenant-b's or of the platform's Secret appears in any object of
// tenant-a's namespace, its status or its Events.
func TestTenantIsolation(t *testing.T) {
	const tenantA, tenantB, platform = "iso-tenant-a", "iso-tenant-b", "iso-platform"
	e := setup(t, tenantA)
	e.namespace(tenantB)
	e.namespace(platform)
	secrets := []string{"hunter2-b-db-password", "b-db-host-internal", "platform-api-key-value", "api-key-prod", "token-platform"}
	e.create(
		configMap(tenantB, "db", "db: {host: b-db-host-internal}\n"),
		secret(tenantB, "db-password", "values", "password: hunter2-b-db-password\n"),
		// The platform's Secret holds no values key: its key names must
		// not reach the App's status either.
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: platform, Name: "api-key"},
			Data: map[string][]byte{"api-key-prod": []byte("platform-api-key-value"), "token-platform": []byte("t")}},
		configMap(platform, "catalog-values", "catalog: platform\n"),
		catalog(platform, "main", "catalog-values"),
		configMap(tenantA, "own", "own: a\n"),
	)
	e.start(controller.Manager{Namespaces: layers.Namespaces{Allowed: []string{platform}, Setting: "the controller's --allowed-namespaces"}})

	attack := app(tenantA, "attack", "main")
	attack.Spec.CatalogNamespace = platform
	attack.Spec.ExtraConfigs = []v1alpha1.ExtraConfig{
		{Kind: "configMap", Name: "db", Namespace: tenantB},
		{Kind: "secret", Name: "db-password", Namespace: tenantB, Priority: 120},
	}
	// Allowed namespace, a Secret without a values key: refused, and its
	// keys not named.
	keys := app(tenantA, "keys", "main")
	keys.Spec.CatalogNamespace = platform
	keys.Spec.UserConfig.Secret = v1alpha1.ObjectRef{Name: "api-key", Namespace: platform}
	// The tenant's own Catalog naming tenant-b's ConfigMap.
	evilCat := catalog(tenantA, "evil", "db")
	evilCat.Spec.Config.ConfigMap.Namespace = tenantB
	viaCatalog := app(tenantA, "via-catalog", "evil")
	// What the rule allows: the own namespace and the platform's Catalog.
	fine := app(tenantA, "fine", "main")
	fine.Spec.CatalogNamespace = platform
	fine.Spec.Config.ConfigMap = v1alpha1.ObjectRef{Name: "own", Namespace: tenantA}
	e.create(evilCat, attack, keys, viaCatalog, fine)

	_, c := e.waitReady("attack", metav1.ConditionFalse, controller.ReasonNamespaceNotAllowed)
	for _, want := range []string{"spec.extraConfigs[0].namespace", "spec.extraConfigs[1].namespace", "ConfigMap iso-tenant-b/db",
		"ask the cluster's administrator to add its namespace to the controller's --allowed-namespaces"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("Ready message %q: want %q", c.Message, want)
		}
	}
	e.waitEvent("attack", corev1.EventTypeWarning, controller.ReasonNamespaceNotAllowed, "spec.extraConfigs[0].namespace")
	_, c = e.waitReady("via-catalog", metav1.ConditionFalse, controller.ReasonNamespaceNotAllowed)
	if !strings.Contains(c.Message, "Catalog iso-tenant-a/evil spec.config.configMap.namespace") {
		t.Errorf("Ready message %q: want the Catalog's field", c.Message)
	}
	_, c = e.waitReady("keys", metav1.ConditionFalse, controller.ReasonSecretMergeFailed)
	if !strings.Contains(c.Message, "2 other data keys (not named: it is a Secret)") {
		t.Errorf("Ready message %q: want the count of the Secret's keys", c.Message)
	}
	e.waitValues("fine", "catalog: platform\nown: a\n", "{}")
	e.waitReady("fine", metav1.ConditionTrue, controller.ReasonValuesMerged)

	for _, name := range []string{"attack", "via-catalog", "keys"} {
		if cm, sec := e.output(name); cm != nil || sec != nil {
			t.Errorf("App %s: outputs written", name)
		}
	}

	// Nothing of tenant-b's nor of the platform's Secret anywhere in
	// tenant-a's namespace: its ConfigMaps, Secrets, Apps (status
	// included) and Events, in plain text or base64.
	var cms corev1.ConfigMapList
	var secs corev1.SecretList
	var apps v1alpha1.AppList
	var evs eventsv1.EventList
	var dump []byte
	for _, l := range []client.ObjectList{&cms, &secs, &apps, &evs} {
		if err := e.cl.List(t.Context(), l, client.InNamespace(tenantA)); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		dump = append(dump, b...)
	}
	for _, s := range secrets {
		for _, form := range []string{s, base64.StdEncoding.EncodeToString([]byte(s))} {
			if strings.Contains(string(dump), form) {
				t.Errorf("%q of another namespace appears in namespace %s", form, tenantA)
			}
		}
	}
}

// TestTenantMemory is the memory attack: a 960 KB flow list
// (480,000 integers) in a tenant's userConfig cost the controller 663 MiB
// (limit 512Mi) at every start. Now that App fails alone, refused before
// its layer is built, and another App of the namespace is served; the
// test process's heap (the controller runs in it) stays far from the
// limit.
func TestTenantMemory(t *testing.T) {
	const ns = "iso-memory"
	e := setup(t, ns)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	peak := base
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()

	e.create(
		configMap(ns, "catalog-values", "a: 1\n"), catalog(ns, "giantswarm", "catalog-values"),
		configMap(ns, "flows", "flows: ["+strings.Repeat("1,", 479_999)+"1]\n"),
		configMap(ns, "user", "b: 2\n"),
	)
	e.start(controller.Manager{Namespace: ns})
	flood := app(ns, "flood", "giantswarm")
	flood.Spec.UserConfig.ConfigMap = v1alpha1.ObjectRef{Name: "flows", Namespace: ns}
	neighbour := app(ns, "neighbour", "giantswarm")
	neighbour.Spec.UserConfig.ConfigMap = v1alpha1.ObjectRef{Name: "user", Namespace: ns}
	e.create(flood, neighbour)

	_, c := e.waitReadyMessage("flood", metav1.ConditionFalse, controller.ReasonConfigMapMergeFailed, "the layers of one App may cost 32 MiB")
	if !strings.Contains(c.Message, "ConfigMap iso-memory/flows data.values") {
		t.Errorf("Ready message %q: want the layer", c.Message)
	}
	e.waitValues("neighbour", "a: 1\nb: 2\n", "{}")
	e.waitReady("neighbour", metav1.ConditionTrue, controller.ReasonValuesMerged)
	close(stop)
	<-sampled
	t.Logf("heap in use: %d MiB before, %d MiB at the peak", base>>20, peak>>20)
	// Before: rendering and encoding this App took 454 MiB more at the
	// peak; the controller's cache and the test's client hold ~2 MB of it.
	if grew := int64(peak) - int64(base); grew > 128<<20 {
		t.Errorf("the heap grew by %d MiB while the controller refused the flow list, want far less than the 512Mi limit", grew>>20)
	}
}
