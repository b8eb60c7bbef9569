package operator_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-dev/strata/internal/operator"
)

// TestLocalWebhookBindings: with the local backends the webhook bindings
// are accepted, not served, and each hook that has them is named in a
// warning; the rest of the run goes on.
func TestLocalWebhookBindings(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{
		"modules/values.yaml":             "aEnabled: true\n",
		"modules/001-a/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
		"modules/001-a/hooks/convert.sh":  "#!/bin/sh\nif [ \"$1\" = --config ]; then printf 'configVersion: v1\\nbeforeHelm: 1\\nkubernetesCustomResourceConversion:\\n- {name: c, crdName: crontabs.stable.example.com, conversions: [{fromVersion: v1, toVersion: v2}]}\\n'; exit 0; fi\n",
		"global-hooks/hooks/validate.sh":  "#!/bin/sh\nif [ \"$1\" = --config ]; then printf 'configVersion: v1\\nkubernetesValidating:\\n- name: a.example.com\\n  rules: [{apiGroups: [\"\"], apiVersions: [v1], resources: [configmaps], operations: [CREATE]}]\\n'; exit 0; fi\nexit 1\n",
		"config.yaml":                     "",
	} {
		writeFile(t, filepath.Join(dir, name), []byte(data))
	}
	var out syncBuffer
	h := &harness{t: t, dir: dir}
	e, err := operator.New(h.settings(), slog.New(slog.NewJSONHandler(&out, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	select {
	case <-e.Ready():
	case err := <-done:
		t.Fatalf("Run: %v", err)
	case <-ctx.Done():
		t.Fatal("no converge")
	}
	views, err := json.Marshal(e.Hooks())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"kubernetesValidating":[{"name":"a.example.com","rules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["configmaps"]}],"sideEffects":"None","timeoutSeconds":10}]`,
		`"kubernetesCustomResourceConversion":[{"conversions":[{"fromVersion":"v1","toVersion":"v2"}],"crdName":"crontabs.stable.example.com","name":"c"}]`,
	} {
		if !strings.Contains(string(views), want) {
			t.Errorf("hook views have no %s:\n%s", want, views)
		}
	}
	cancel()
	<-done
	for _, want := range []string{`"hook":"global validate.sh","validating":1,"conversion":0`, `"hook":"module a hooks/convert.sh","validating":0,"conversion":1`} {
		if !strings.Contains(out.String(), `"msg":"webhook bindings are served only on a cluster;`) || !strings.Contains(out.String(), want) {
			t.Errorf("no warning with %s in:\n%s", want, out.String())
		}
	}
	if !strings.Contains(strings.Join(e.History(), "\n"), "module a hooks/convert.sh beforeHelm") {
		t.Errorf("the module's other binding did not run:\n%s", strings.Join(e.History(), "\n"))
	}
}
