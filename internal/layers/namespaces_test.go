package layers_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/strata-dev/strata/internal/layers"
	"github.com/strata-dev/strata/internal/layers/v1alpha1"
)

// recordingSource serves objects from maps and records every read, so a
// test can tell that a refused namespace was never read.
type recordingSource struct {
	mu       sync.Mutex
	cms      map[string]*corev1.ConfigMap
	secrets  map[string]*corev1.Secret
	catalogs map[string]*v1alpha1.Catalog
	reads    []string
}

func (s *recordingSource) read(kind, ns, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads = append(s.reads, kind+" "+ns+"/"+name)
}

func (s *recordingSource) ConfigMap(_ context.Context, ns, name string) (*corev1.ConfigMap, error) {
	s.read("ConfigMap", ns, name)
	if cm, ok := s.cms[ns+"/"+name]; ok {
		return cm.DeepCopy(), nil
	}
	return nil, layers.ErrNotFound
}

func (s *recordingSource) Secret(_ context.Context, ns, name string) (*corev1.Secret, error) {
	s.read("Secret", ns, name)
	if sec, ok := s.secrets[ns+"/"+name]; ok {
		return sec.DeepCopy(), nil
	}
	return nil, layers.ErrNotFound
}

func (s *recordingSource) Catalog(_ context.Context, ns, name string) (*v1alpha1.Catalog, error) {
	s.read("Catalog", ns, name)
	if c, ok := s.catalogs[ns+"/"+name]; ok {
		return c.DeepCopy(), nil
	}
	return nil, layers.ErrNotFound
}

func tenantSource() *recordingSource {
	cm := func(ns, name, values string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"values": values}}
	}
	sec := func(ns, name string, data map[string]string) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{}}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		return s
	}
	return &recordingSource{
		cms: map[string]*corev1.ConfigMap{
			"tenant-a/own":           cm("tenant-a", "own", "own: 1\n"),
			"tenant-b/db":            cm("tenant-b", "db", "db: {host: b.internal}\n"),
			"platform/catalog-cm":    cm("platform", "catalog-cm", "catalog: 1\n"),
			"tenant-b/evil-cat-vals": cm("tenant-b", "evil-cat-vals", "stolen: 1\n"),
		},
		secrets: map[string]*corev1.Secret{
			"tenant-b/db-password": sec("tenant-b", "db-password", map[string]string{"values": "password: hunter2\n"}),
			"platform/api-key":     sec("platform", "api-key", map[string]string{"api-key-prod": "k", "token-b": "t"}),
		},
		catalogs: map[string]*v1alpha1.Catalog{
			"platform/main": {ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "main"},
				Spec: v1alpha1.CatalogSpec{Config: v1alpha1.CatalogConfig{ConfigMap: v1alpha1.ObjectRef{Namespace: "platform", Name: "catalog-cm"}}}},
			// A Catalog in the tenant's own namespace naming another
			// tenant's ConfigMap.
			"tenant-a/evil": {ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "evil"},
				Spec: v1alpha1.CatalogSpec{Config: v1alpha1.CatalogConfig{ConfigMap: v1alpha1.ObjectRef{Namespace: "tenant-b", Name: "evil-cat-vals"}}}},
		},
	}
}

func tenantApp(catalogNS, catalog string, extras ...v1alpha1.ExtraConfig) *v1alpha1.App {
	return &v1alpha1.App{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "web"},
		Spec: v1alpha1.AppSpec{Catalog: catalog, CatalogNamespace: catalogNS, Name: "web", Namespace: "web", Version: "1.0.0",
			Config:       v1alpha1.AppConfig{ConfigMap: v1alpha1.ObjectRef{Namespace: "tenant-a", Name: "own"}},
			ExtraConfigs: extras}}
}

func TestNamespacesRefused(t *testing.T) {
	platform := layers.Namespaces{Allowed: []string{"platform"}, Setting: "--allowed-namespaces"}
	tests := []struct {
		name     string
		app      *v1alpha1.App
		ns       layers.Namespaces
		fields   []string // the fields the error names, in order
		notRead  []string // namespaces never read
		wantSame *v1alpha1.App
	}{
		{name: "another tenant's ConfigMap and Secret",
			app: tenantApp("platform", "main",
				v1alpha1.ExtraConfig{Kind: "configMap", Namespace: "tenant-b", Name: "db"},
				v1alpha1.ExtraConfig{Kind: "secret", Namespace: "tenant-b", Name: "db-password"}),
			ns:      platform,
			fields:  []string{"spec.extraConfigs[0].namespace", "spec.extraConfigs[1].namespace"},
			notRead: []string{"tenant-b"}},
		{name: "the platform's Secret when only the own namespace is allowed",
			app: tenantApp("tenant-a", "",
				v1alpha1.ExtraConfig{Kind: "secret", Namespace: "platform", Name: "api-key"}),
			ns:      layers.Namespaces{},
			fields:  []string{"spec.extraConfigs[0].namespace"},
			notRead: []string{"platform"}},
		{name: "a Catalog in a namespace not allowed",
			app:     tenantApp("tenant-b", "main"),
			ns:      platform,
			fields:  []string{"spec.catalogNamespace"},
			notRead: []string{"tenant-b"}},
		{name: "an empty catalogNamespace is default",
			app:     tenantApp("", "main"),
			ns:      platform,
			fields:  []string{"spec.catalogNamespace (empty: default)"},
			notRead: []string{"default"}},
		{name: "the tenant's own Catalog naming another tenant's ConfigMap",
			app:     tenantApp("tenant-a", "evil"),
			ns:      platform,
			fields:  []string{"Catalog tenant-a/evil spec.config.configMap.namespace"},
			notRead: []string{"tenant-b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := tenantSource()
			r := layers.Renderer{Source: src, SkipCatalog: tc.app.Spec.Catalog == "", Namespaces: tc.ns}
			res, err := r.Render(t.Context(), tc.app, nil)
			if !errors.Is(err, layers.ErrNamespaceNotAllowed) || !errors.Is(err, layers.ErrInvalid) {
				t.Fatalf("Render = %v, %v; want an error wrapping ErrNamespaceNotAllowed and ErrInvalid", res, err)
			}
			var fields []string
			for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
				var fe *layers.FieldError
				if !errors.As(e, &fe) {
					t.Fatalf("%v is not a *FieldError", e)
				}
				fields = append(fields, fe.Field)
				if !strings.Contains(fe.Msg, "ask the cluster's administrator") || !strings.Contains(fe.Msg, tc.ns.Setting) {
					t.Errorf("message %q does not say what the administrator must do", fe.Msg)
				}
			}
			if strings.Join(fields, "; ") != strings.Join(tc.fields, "; ") {
				t.Errorf("the error names %q, want %q\n%v", fields, tc.fields, err)
			}
			for _, read := range src.reads {
				for _, ns := range tc.notRead {
					if strings.Contains(read, " "+ns+"/") {
						t.Errorf("%s was read: a refused namespace must not be read at all", read)
					}
				}
			}
			for _, leak := range []string{"hunter2", "b.internal", "api-key-prod", "token-b", "stolen"} {
				if strings.Contains(err.Error(), leak) {
					t.Errorf("the error quotes %q of another namespace: %v", leak, err)
				}
			}
		})
	}
}

// TestNamespacesNoOracle: a refusal does not tell whether the object
// exists.
func TestNamespacesNoOracle(t *testing.T) {
	msg := func(name string) string {
		app := tenantApp("tenant-a", "", v1alpha1.ExtraConfig{Kind: "secret", Namespace: "tenant-b", Name: name})
		_, err := (&layers.Renderer{Source: tenantSource(), SkipCatalog: true}).Render(t.Context(), app, nil)
		if err == nil {
			t.Fatal("Render succeeded")
		}
		return strings.ReplaceAll(err.Error(), name, "NAME")
	}
	if a, b := msg("db-password"), msg("no-such-secret"); a != b {
		t.Errorf("an existing and a missing Secret are refused differently:\n%s\n%s", a, b)
	}
}

func TestNamespacesAllowed(t *testing.T) {
	app := tenantApp("platform", "main", v1alpha1.ExtraConfig{Kind: "configMap", Namespace: "tenant-b", Name: "db"})
	for _, tc := range []struct {
		name string
		ns   layers.Namespaces
		want string
	}{
		{"listed", layers.Namespaces{Allowed: []string{"platform", "tenant-b"}}, "b.internal"},
		{"any", layers.Namespaces{Any: true}, "b.internal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := (&layers.Renderer{Source: tenantSource(), Namespaces: tc.ns}).Render(t.Context(), app, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Values["catalog"] != int64(1) || res.Values["own"] != int64(1) {
				t.Errorf("Values = %v, want the catalog's and the own layer", res.Values)
			}
		})
	}
}

// TestSecretKeysNotNamed: the error for a Secret without a values key does
// not name its keys (it reaches the App's status).
func TestSecretKeysNotNamed(t *testing.T) {
	app := tenantApp("tenant-a", "", v1alpha1.ExtraConfig{Kind: "secret", Namespace: "platform", Name: "api-key"})
	_, err := (&layers.Renderer{Source: tenantSource(), SkipCatalog: true, Namespaces: layers.Namespaces{Any: true}}).Render(t.Context(), app, nil)
	if !errors.Is(err, layers.ErrNoValuesKey) {
		t.Fatalf("Render: %v, want ErrNoValuesKey", err)
	}
	if strings.Contains(err.Error(), "api-key-prod") || strings.Contains(err.Error(), "token-b") || !strings.Contains(err.Error(), "2 other data keys") {
		t.Errorf("error = %v; want the count of the Secret's keys, not their names", err)
	}
}

func TestParseNamespaces(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string // Namespaces.String, or the error
	}{
		{nil, "its own namespace only"},
		{[]string{"platform", "giantswarm", "platform"}, "its own namespace and platform, giantswarm"},
		{[]string{"*"}, "any namespace"},
		{[]string{"*", "x"}, `--allowed-namespaces: "*" allows every namespace and goes alone; drop the other names or the "*"`},
		{[]string{"Bad_NS"}, `--allowed-namespaces: "Bad_NS" is not a namespace name`},
		{[]string{"a", ""}, `--allowed-namespaces: an empty namespace name in "a,"`},
	} {
		n, err := layers.ParseNamespaces(tc.in, "--allowed-namespaces")
		got := n.String()
		if err != nil {
			got = err.Error()
		}
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("ParseNamespaces(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestRenderMaxCost: a tenant's 960 KB flow list (480,000 values) fails its
// render within a budget, refused before it is built; and the budget holds
// across the layers of one App.
func TestRenderMaxCost(t *testing.T) {
	src := tenantSource()
	src.cms["tenant-a/flows"] = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "flows"},
		Data: map[string]string{"values": "flows: [" + strings.Repeat("1,", 479_999) + "1]\n"}}
	src.cms["tenant-a/half"] = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "half"},
		Data: map[string]string{"values": "half: [" + strings.Repeat("1,", 49_999) + "1]\n"}}
	r := layers.Renderer{Source: src, SkipCatalog: true, MaxCost: 32 << 20}

	app := tenantApp("", "")
	app.Spec.UserConfig.ConfigMap = v1alpha1.ObjectRef{Namespace: "tenant-a", Name: "flows"}
	_, err := r.Render(t.Context(), app, nil)
	if err == nil || !strings.Contains(err.Error(), "ConfigMap tenant-a/flows data.values") ||
		!strings.Contains(err.Error(), "the layers of one App may cost 32 MiB of memory together") {
		t.Fatalf("Render = %v, want the layer refused at the budget", err)
	}

	app = tenantApp("", "")
	app.Spec.UserConfig.ConfigMap = v1alpha1.ObjectRef{Namespace: "tenant-a", Name: "half"}
	if _, err := r.Render(t.Context(), app, nil); err != nil {
		t.Fatalf("one layer of 50,000 values: %v", err)
	}
	app.Spec.ExtraConfigs = []v1alpha1.ExtraConfig{{Namespace: "tenant-a", Name: "half", Priority: 120}}
	app.Spec.UserConfig.ConfigMap = v1alpha1.ObjectRef{}
	app.Spec.ExtraConfigs = append(app.Spec.ExtraConfigs, v1alpha1.ExtraConfig{Namespace: "tenant-a", Name: "flows", Priority: 130, Optional: true})
	src.cms["tenant-a/flows"].Data["values"] = "half: [" + strings.Repeat("2,", 49_999) + "2]\n"
	if _, err := r.Render(t.Context(), app, nil); err == nil || !strings.Contains(err.Error(), "ConfigMap tenant-a/flows") {
		t.Errorf("two flow lists of 50,000 values (counted twice before parsing) within 131,072: %v, want the second refused", err)
	}
}
