package layers_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/layers"
	"github.com/strata-dev/strata/internal/layers/v1alpha1"
)

func extra(kind, name string, prio int) v1alpha1.ExtraConfig {
	return v1alpha1.ExtraConfig{Kind: kind, Name: name, Namespace: "ns", Priority: prio}
}

func ref(name string) v1alpha1.ObjectRef { return v1alpha1.ObjectRef{Name: name, Namespace: "ns"} }

func app(spec v1alpha1.AppSpec) *v1alpha1.App {
	a := &v1alpha1.App{Spec: spec}
	a.Name, a.Namespace = "app", "ns"
	return a
}

// order writes a chain as "name@priority" items.
func order(refs []layers.Ref) string {
	var s []string
	for _, r := range refs {
		s = append(s, fmt.Sprintf("%s@%d", r.Name, r.Priority))
	}
	return strings.Join(s, " ")
}

func TestNewPlanOrder(t *testing.T) {
	catalog := &v1alpha1.Catalog{Spec: v1alpha1.CatalogSpec{Config: v1alpha1.CatalogConfig{
		ConfigMap: ref("cat"), Secret: ref("cat-secret")}}}
	catalog.Name, catalog.Namespace = "giantswarm", "default"
	tests := []struct {
		name       string
		spec       v1alpha1.AppSpec
		catalog    *v1alpha1.Catalog
		configMaps string
		secrets    string
	}{
		{"empty", v1alpha1.AppSpec{}, nil, "", ""},
		{"catalog only", v1alpha1.AppSpec{}, catalog, "cat@0", "cat-secret@0"},
		{
			"RFC example 3",
			v1alpha1.AppSpec{
				Config:     v1alpha1.AppConfig{ConfigMap: ref("ingress-controller-values")},
				UserConfig: v1alpha1.AppConfig{ConfigMap: ref("ingress-nginx-user-values")},
				ExtraConfigs: []v1alpha1.ExtraConfig{
					extra("configMap", "post-user", 125), extra("configMap", "pre-user", 75),
					extra("configMap", "pre-cluster", 0), extra("configMap", "final", 125),
					extra("configMap", "high-priority", 10),
				},
			},
			catalog,
			"cat@0 high-priority@10 pre-cluster@25 ingress-controller-values@50 pre-user@75 ingress-nginx-user-values@100 post-user@125 final@125",
			"cat-secret@0",
		},
		{
			"bucket edges",
			v1alpha1.AppSpec{
				Config:     v1alpha1.AppConfig{ConfigMap: ref("config"), Secret: ref("config-s")},
				UserConfig: v1alpha1.AppConfig{ConfigMap: ref("user"), Secret: ref("user-s")},
				ExtraConfigs: []v1alpha1.ExtraConfig{
					extra("", "e150", 150), extra("", "e101", 101), extra("", "e100", 100),
					extra("", "e51", 51), extra("", "e50", 50), extra("", "e1", 1),
					extra("secret", "s100", 100), extra("secret", "s50", 50), extra("secret", "s150", 150),
				},
			},
			nil,
			"e1@1 e50@50 config@50 e51@51 e100@100 user@100 e101@101 e150@150",
			"s50@50 config-s@50 s100@100 user-s@100 s150@150",
		},
		{
			"ties keep list order",
			v1alpha1.AppSpec{ExtraConfigs: []v1alpha1.ExtraConfig{
				extra("", "c", 40), extra("", "a", 40), extra("", "d", 0), extra("", "b", 40), extra("", "e", 25),
			}},
			nil,
			"d@25 e@25 c@40 a@40 b@40",
			"",
		},
		{
			"secrets only",
			v1alpha1.AppSpec{ExtraConfigs: []v1alpha1.ExtraConfig{extra("secret", "s", 0)}},
			nil, "", "s@25",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := layers.NewPlan(app(tc.spec), nil, tc.catalog, nil)
			if err != nil {
				t.Fatalf("NewPlan: %v", err)
			}
			if got := order(p.ConfigMaps); got != tc.configMaps {
				t.Errorf("ConfigMaps = %q, want %q", got, tc.configMaps)
			}
			if got := order(p.Secrets); got != tc.secrets {
				t.Errorf("Secrets = %q, want %q", got, tc.secrets)
			}
		})
	}
}

func TestNewPlanRefs(t *testing.T) {
	spec := v1alpha1.AppSpec{
		Config:       v1alpha1.AppConfig{ConfigMap: ref("config")},
		ExtraConfigs: []v1alpha1.ExtraConfig{{Name: "x", Namespace: "ns", Optional: true}},
	}
	p, err := layers.NewPlan(app(spec), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []layers.Ref{
		{Kind: "ConfigMap", Namespace: "ns", Name: "x", Role: layers.RoleExtraConfig, Field: "spec.extraConfigs[0]", Priority: 25, Index: 0, Optional: true},
		{Kind: "ConfigMap", Namespace: "ns", Name: "config", Role: layers.RoleConfig, Field: "spec.config.configMap", Priority: 50, Index: -1},
	}
	if diff := cmp.Diff(want, p.ConfigMaps); diff != "" {
		t.Errorf("ConfigMaps (-want +got):\n%s", diff)
	}
	if got := p.ConfigMaps[0].LayerName(); got != "ConfigMap ns/x (spec.extraConfigs[0])" {
		t.Errorf("LayerName() = %q", got)
	}
}

func TestValidateApp(t *testing.T) {
	many := make([]v1alpha1.ExtraConfig, layers.MaxExtraConfigs+1)
	for i := range many {
		many[i] = extra("", fmt.Sprint("c", i), 0)
	}
	tests := []struct {
		name string
		spec v1alpha1.AppSpec
		want []string // fields, in order
	}{
		{"ok", v1alpha1.AppSpec{ExtraConfigs: []v1alpha1.ExtraConfig{extra("", "a", 1), extra("secret", "a", 150)}}, nil},
		{"priority 151", v1alpha1.AppSpec{ExtraConfigs: []v1alpha1.ExtraConfig{extra("", "a", 151)}}, []string{"spec.extraConfigs[0].priority"}},
		{"priority -1", v1alpha1.AppSpec{ExtraConfigs: []v1alpha1.ExtraConfig{extra("", "a", -1)}}, []string{"spec.extraConfigs[0].priority"}},
		{"unknown kind", v1alpha1.AppSpec{ExtraConfigs: []v1alpha1.ExtraConfig{extra("Secret", "a", 0)}}, []string{"spec.extraConfigs[0].kind"}},
		{"duplicate across fields", v1alpha1.AppSpec{
			UserConfig:   v1alpha1.AppConfig{Secret: ref("s")},
			ExtraConfigs: []v1alpha1.ExtraConfig{extra("secret", "s", 0), extra("secret", "s", 120)},
		}, []string{"spec.extraConfigs[0]", "spec.extraConfigs[1]"}},
		{"ref without namespace", v1alpha1.AppSpec{Config: v1alpha1.AppConfig{ConfigMap: v1alpha1.ObjectRef{Name: "x"}}}, []string{"spec.config.configMap.namespace"}},
		{"ref without name", v1alpha1.AppSpec{UserConfig: v1alpha1.AppConfig{Secret: v1alpha1.ObjectRef{Namespace: "x"}}}, []string{"spec.userConfig.secret.name"}},
		{"too many", v1alpha1.AppSpec{ExtraConfigs: many}, []string{"spec.extraConfigs"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := layers.ValidateApp(app(tc.spec), nil)
			var got []string
			if err != nil {
				if !errors.Is(err, layers.ErrInvalid) {
					t.Errorf("ValidateApp error %v does not wrap ErrInvalid", err)
				}
				for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
					var fe *layers.FieldError
					if !errors.As(e, &fe) {
						t.Fatalf("error %v is not a *FieldError", e)
					}
					if fe.Object != "App ns/app" {
						t.Errorf("FieldError.Object = %q", fe.Object)
					}
					got = append(got, fe.Field)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ValidateApp fields (-want +got):\n%s\nerror: %v", diff, err)
			}
		})
	}
}
