package controller

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/strata-dev/strata/internal/layers"
	"github.com/strata-dev/strata/internal/layers/v1alpha1"
)

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func configMap(ns, name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
}

func secret(ns, name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

// failingReader fails every read, as a cache that is not ready would.
type failingReader struct{ client.Reader }

func (failingReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("the cache is not started")
}

// TestClassify renders Apps through cacheSource and checks the reason
// each failure gets: the reasons rely on the layers library's errors, so
// they are checked against its real Render.
func TestClassify(t *testing.T) {
	catalog := &v1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cat"},
		Spec: v1alpha1.CatalogSpec{Config: v1alpha1.CatalogConfig{ConfigMap: v1alpha1.ObjectRef{Name: "cat-values", Namespace: "ns"}}}}
	objects := []client.Object{
		catalog,
		configMap("ns", "cat-values", map[string]string{"values": "a: 1\n"}),
		configMap("ns", "good", map[string]string{"values": "b: 2\n"}),
		configMap("ns", "no-key", map[string]string{"values.yaml": "b: 2\n"}),
		configMap("ns", "bad-yaml", map[string]string{"values": "b: [\n"}),
		configMap("other", "elsewhere", map[string]string{"values": "b: 2\n"}),
		secret("ns", "good-secret", map[string]string{"secrets": "c: 3\n"}),
		secret("ns", "both-keys", map[string]string{"values": "c: 3\n", "secrets": "c: 4\n"}),
		secret("ns", "bad-secret", map[string]string{"values": "c: 'x\n"}),
	}
	tests := []struct {
		name      string
		extras    []v1alpha1.ExtraConfig
		catalog   string
		namespace string // the cache's; "" for all
		reader    client.Reader
		want      string // reason; "" for success
		transient bool
		msg       string // in the message
	}{
		{name: "all good", extras: []v1alpha1.ExtraConfig{{Name: "good", Namespace: "ns"}, {Kind: "secret", Name: "good-secret", Namespace: "ns"}}},
		{name: "optional missing", extras: []v1alpha1.ExtraConfig{{Name: "nope", Namespace: "ns", Optional: true}}},
		{name: "missing ConfigMap", extras: []v1alpha1.ExtraConfig{{Name: "nope", Namespace: "ns"}},
			want: ReasonConfigMapMergeFailed, msg: "ConfigMap ns/nope: not found (listed at App ns/app spec.extraConfigs[0]"},
		{name: "missing Secret", extras: []v1alpha1.ExtraConfig{{Kind: "secret", Name: "nope", Namespace: "ns"}},
			want: ReasonSecretMergeFailed, msg: "Secret ns/nope: not found"},
		{name: "no values key", extras: []v1alpha1.ExtraConfig{{Name: "no-key", Namespace: "ns"}},
			want: ReasonConfigMapMergeFailed, msg: "values.yaml"},
		{name: "invalid YAML", extras: []v1alpha1.ExtraConfig{{Name: "bad-yaml", Namespace: "ns"}},
			want: ReasonConfigMapMergeFailed, msg: "ConfigMap ns/bad-yaml"},
		{name: "ambiguous Secret", extras: []v1alpha1.ExtraConfig{{Kind: "secret", Name: "both-keys", Namespace: "ns"}},
			want: ReasonSecretMergeFailed, msg: "both"},
		{name: "invalid Secret YAML", extras: []v1alpha1.ExtraConfig{{Kind: "secret", Name: "bad-secret", Namespace: "ns"}},
			want: ReasonSecretMergeFailed, msg: "Secret ns/bad-secret"},
		{name: "listed twice", extras: []v1alpha1.ExtraConfig{{Name: "good", Namespace: "ns"}, {Name: "good", Namespace: "ns", Priority: 70}},
			want: ReasonInvalidSpec, msg: "spec.extraConfigs[1]: ConfigMap ns/good is already listed"},
		{name: "priority out of range", extras: []v1alpha1.ExtraConfig{{Name: "good", Namespace: "ns", Priority: 151}},
			want: ReasonInvalidSpec, msg: "spec.extraConfigs[0].priority"},
		{name: "catalog missing", catalog: "nope", want: ReasonCatalogNotFound, msg: "spec.catalog"},
		{name: "outside the namespace", namespace: "ns", extras: []v1alpha1.ExtraConfig{{Name: "elsewhere", Namespace: "other"}},
			want: ReasonConfigMapMergeFailed, msg: "outside namespace ns"},
		{name: "catalog outside the namespace", namespace: "other", want: ReasonCatalogNotFound, msg: "outside namespace other"},
		{name: "cache failing", reader: failingReader{}, transient: true},
	}
	s := testScheme(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reader := tc.reader
			if reader == nil {
				reader = fake.NewClientBuilder().WithScheme(s).WithObjects(objects...).Build()
			}
			app := &v1alpha1.App{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"},
				Spec: v1alpha1.AppSpec{Catalog: "cat", CatalogNamespace: "ns", ExtraConfigs: tc.extras}}
			if tc.catalog != "" {
				app.Spec.Catalog = tc.catalog
			}
			if tc.namespace == "other" {
				app.Namespace = "other"
			}
			_, err := (&layers.Renderer{Source: cacheSource{reader: reader, namespace: tc.namespace}, Namespaces: layers.Namespaces{Any: true}}).Render(t.Context(), app, nil)
			if tc.want == "" && !tc.transient {
				if err != nil {
					t.Fatalf("Render: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Render succeeded, want a %s failure", tc.want)
			}
			reason, transient := classify(err)
			if reason != tc.want || transient != tc.transient {
				t.Errorf("classify(%v) = %q, %v, want %q, %v", err, reason, transient, tc.want, tc.transient)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not mention %q", err, tc.msg)
			}
		})
	}
}

func TestClassifyOther(t *testing.T) {
	if reason, transient := classify(errors.New("boom")); reason != ReasonMergeFailed || transient {
		t.Errorf("classify(boom) = %q, %v, want %q, false", reason, transient, ReasonMergeFailed)
	}
}

func TestTruncate(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{strings.Repeat("a", 40), 30, strings.Repeat("a", 10) + " … (30 more bytes)"},
		{strings.Repeat("é", 20), 30, strings.Repeat("é", 5) + " … (30 more bytes)"},
	}
	for _, tc := range tests {
		got := truncate(tc.in, tc.n)
		if got != tc.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
		if len(got) > tc.n || !utf8.ValidString(got) {
			t.Errorf("truncate(%q, %d) = %q: %d bytes or invalid UTF-8", tc.in, tc.n, got, len(got))
		}
	}
}

func TestAppRefs(t *testing.T) {
	app := &v1alpha1.App{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"},
		Spec: v1alpha1.AppSpec{
			Catalog:    "giantswarm",
			Config:     v1alpha1.AppConfig{ConfigMap: v1alpha1.ObjectRef{Name: "cluster", Namespace: "ns"}},
			UserConfig: v1alpha1.AppConfig{Secret: v1alpha1.ObjectRef{Name: "user", Namespace: "ns"}},
			ExtraConfigs: []v1alpha1.ExtraConfig{
				{Name: "east", Namespace: "other", Priority: 120},
				{Kind: "secret", Name: "token", Namespace: "ns", Optional: true},
			},
		}}
	want := []string{"ConfigMap/ns/app-chart-values", "Secret/ns/app-chart-secrets", "ConfigMap/ns/cluster", "ConfigMap/other/east", "Secret/ns/token", "Secret/ns/user", "Catalog/default/giantswarm"}
	if diff := cmp.Diff(want, appRefs(app)); diff != "" {
		t.Errorf("appRefs (-want +got):\n%s", diff)
	}
	app.Spec.ExtraConfigs[0].Priority = 500
	if diff := cmp.Diff([]string{"ConfigMap/ns/app-chart-values", "Secret/ns/app-chart-secrets", "Catalog/default/giantswarm"}, appRefs(app)); diff != "" {
		t.Errorf("appRefs of an invalid App (-want +got):\n%s", diff)
	}
	cat := &v1alpha1.Catalog{Spec: v1alpha1.CatalogSpec{Config: v1alpha1.CatalogConfig{
		ConfigMap: v1alpha1.ObjectRef{Name: "cat-values", Namespace: "giantswarm"},
		Secret:    v1alpha1.ObjectRef{Name: "no-namespace"},
	}}}
	if diff := cmp.Diff([]string{"ConfigMap/giantswarm/cat-values"}, catalogRefs(cat)); diff != "" {
		t.Errorf("catalogRefs (-want +got):\n%s", diff)
	}
}

// TestMapper checks that a changed object maps to the Apps that use it,
// directly and through their Catalog, with the indexes the Manager sets.
func TestMapper(t *testing.T) {
	cat := &v1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "giantswarm"},
		Spec: v1alpha1.CatalogSpec{Config: v1alpha1.CatalogConfig{ConfigMap: v1alpha1.ObjectRef{Name: "cat-values", Namespace: "default"}}}}
	app := func(ns, name, cm string) *v1alpha1.App {
		return &v1alpha1.App{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.AppSpec{Catalog: "giantswarm", Config: v1alpha1.AppConfig{ConfigMap: v1alpha1.ObjectRef{Name: cm, Namespace: ns}}}}
	}
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).
		WithObjects(cat, app("a", "one", "shared"), app("b", "two", "shared"), app("a", "three", "own")).
		WithIndex(&v1alpha1.App{}, refsIndex, indexApp).
		WithIndex(&v1alpha1.Catalog{}, refsIndex, indexCatalog).
		Build()
	tests := []struct {
		kind, ns, name string
		skipCatalog    bool
		want           []string
	}{
		{"ConfigMap", "a", "shared", false, []string{"a/one"}},
		{"ConfigMap", "a", "own", false, []string{"a/three"}},
		{"ConfigMap", "default", "cat-values", false, []string{"a/one", "a/three", "b/two"}},
		{"ConfigMap", "default", "cat-values", true, nil},
		{"Catalog", "default", "giantswarm", false, []string{"a/one", "a/three", "b/two"}},
		{"Secret", "a", "shared", false, nil},
	}
	for _, tc := range tests {
		reqs, err := mapper{reader: c, skipCatalog: tc.skipCatalog}.appsUsing(t.Context(), tc.kind, tc.ns, tc.name)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range reqs {
			got = append(got, r.String())
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("appsUsing(%s %s/%s, skipCatalog=%v) (-want +got):\n%s", tc.kind, tc.ns, tc.name, tc.skipCatalog, diff)
		}
	}
}
