package v1alpha1_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/strata-dev/strata/internal/layers/v1alpha1"
)

func TestScheme(t *testing.T) {
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"App", "AppList", "Catalog", "CatalogList"} {
		if !s.Recognizes(v1alpha1.GroupVersion.WithKind(kind)) {
			t.Errorf("scheme does not know %s", kind)
		}
	}
}

func TestDeepCopy(t *testing.T) {
	timeout := metav1.Duration{Duration: 5}
	a := &v1alpha1.App{Spec: v1alpha1.AppSpec{
		ExtraConfigs:    []v1alpha1.ExtraConfig{{Name: "x", Namespace: "y", Priority: 7}},
		NamespaceConfig: v1alpha1.AppNamespaceConfig{Labels: map[string]string{"a": "b"}},
		Install:         v1alpha1.AppHelmAction{Timeout: &timeout},
	}, Status: v1alpha1.AppStatus{Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue}}}}
	b, ok := a.DeepCopyObject().(*v1alpha1.App)
	if !ok {
		t.Fatalf("DeepCopyObject returned %T", a.DeepCopyObject())
	}
	if diff := cmp.Diff(a, b); diff != "" {
		t.Fatalf("copy differs (-orig +copy):\n%s", diff)
	}
	b.Spec.ExtraConfigs[0].Priority = 9
	b.Spec.NamespaceConfig.Labels["a"] = "c"
	b.Spec.Install.Timeout.Duration = 6
	b.Status.Conditions[0].Status = metav1.ConditionFalse
	if a.Spec.ExtraConfigs[0].Priority != 7 || a.Spec.NamespaceConfig.Labels["a"] != "b" ||
		a.Spec.Install.Timeout.Duration != 5 || a.Status.Conditions[0].Status != metav1.ConditionTrue {
		t.Errorf("changing the copy changed the original: %+v", a)
	}
}
