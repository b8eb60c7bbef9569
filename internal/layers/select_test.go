package layers_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/layers"
)

func appYAML(ns, name string) string {
	return fmt.Sprintf(`apiVersion: application.giantswarm.io/v1alpha1
kind: App
metadata: {name: %s, namespace: %s}
spec: {catalog: c, name: %s, namespace: %s, version: 1.0.0}
`, name, ns, name, ns)
}

func TestSelectApp(t *testing.T) {
	const how = "--app NAMESPACE/NAME"
	tests := []struct {
		name    string
		apps    []string // namespace/name
		want    string
		got     string
		wantErr error
		msg     string
	}{
		{name: "the only App", apps: []string{"team/one"}, got: "team/one"},
		{name: "by namespace/name", apps: []string{"team/one", "team/two"}, want: "team/two", got: "team/two"},
		{name: "by bare name", apps: []string{"team/one", "team/two"}, want: "one", got: "team/one"},
		{name: "several, none asked", apps: []string{"team/one", "team/two"}, wantErr: layers.ErrSeveralApps,
			msg: "apps.yaml holds several Apps (team/one, team/two): choose one with --app NAMESPACE/NAME"},
		{name: "bare name in two namespaces", apps: []string{"a/web", "b/web"}, want: "web", wantErr: layers.ErrSeveralApps,
			msg: "apps.yaml holds several Apps (a/web, b/web): choose one with --app NAMESPACE/NAME"},
		{name: "namespace/name tells them apart", apps: []string{"a/web", "b/web"}, want: "b/web", got: "b/web"},
		{name: "no such App", apps: []string{"team/one"}, want: "team/three", wantErr: layers.ErrNoApp,
			msg: `apps.yaml holds no App "team/three"; it holds team/one`},
		{name: "no App at all", wantErr: layers.ErrNoApp,
			msg: "apps.yaml holds no App (apiVersion application.giantswarm.io/v1alpha1, kind App)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var docs []string
			for _, a := range tc.apps {
				ns, name, _ := strings.Cut(a, "/")
				docs = append(docs, appYAML(ns, name))
			}
			apps, err := layers.ReadApps([]byte(strings.Join(docs, "---\n")), "apps.yaml")
			if err != nil {
				t.Fatal(err)
			}
			doc, err := layers.SelectApp(apps, "apps.yaml", tc.want, how)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || err.Error() != tc.msg {
					t.Fatalf("error = %v, want %q wrapping %v", err, tc.msg, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := layers.AppName(doc.App); got != tc.got {
				t.Errorf("SelectApp() = %s, want %s", got, tc.got)
			}
			if doc.Location == nil {
				t.Error("SelectApp() lost the App's location")
			}
		})
	}
}
