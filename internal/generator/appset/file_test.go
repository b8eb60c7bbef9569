package appset_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/strata-dev/strata/internal/generator/appset"
)

// listSet is an ApplicationSet called name in namespace ns (argocd when
// empty) whose list generator makes one Application per env, named
// app-<env>; the controller puts them in namespace ns.
func listSet(name, ns string, envs ...string) string {
	if ns == "" {
		ns = "argocd"
	}
	return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: %s, namespace: %s}
spec:
  generators:
    - list:
        elements: [%s]
  template:
    metadata: {name: 'app-{{env}}'}
    spec:
      project: default
      source: {repoURL: https://git.example.com/apps.git, path: %s}
      destination: {server: https://kubernetes.default.svc, namespace: '{{env}}'}
`, name, ns, envList(envs), name)
}

// nestedTemplateSet has a generator template inside a matrix, which the
// controller ignores with a warning.
const nestedTemplateSet = `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: nested, namespace: argocd}
spec:
  generators:
    - matrix:
        generators:
          - list:
              elements: [{env: dev}]
              template: {metadata: {name: ignored}}
          - list:
              elements: [{zone: a}]
  template:
    metadata: {name: 'app-{{env}}'}
    spec:
      project: default
      source: {repoURL: https://git.example.com/apps.git, path: x}
      destination: {server: https://kubernetes.default.svc, namespace: '{{env}}'}
`

func envList(envs []string) string {
	parts := make([]string, len(envs))
	for i, e := range envs {
		parts[i] = "{env: " + e + "}"
	}
	return strings.Join(parts, ", ")
}

const pluginSet = `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: slow, namespace: argocd}
spec:
  generators:
    - plugin:
        configMapRef: {name: slow}
  template:
    metadata: {name: 'x'}
    spec:
      project: default
      source: {repoURL: https://git.example.com/apps.git, path: x}
      destination: {server: https://kubernetes.default.svc, namespace: x}
`

func TestFileRender(t *testing.T) {
	tests := []struct {
		name      string
		docs      []string
		wantNames []string
		wantErr   string
		wantLog   string
	}{
		{name: "one set", docs: []string{listSet("one", "", "dev", "prod")}, wantNames: []string{"app-dev", "app-prod"}},
		{name: "several sets, in order", docs: []string{listSet("one", "", "b"), listSet("two", "", "a")}, wantNames: []string{"app-b", "app-a"}},
		{name: "same name in other namespaces is no conflict",
			docs: []string{listSet("one", "team-x", "dev"), listSet("two", "team-y", "dev")}, wantNames: []string{"app-dev", "app-dev"}},
		{name: "two sets generating one Application",
			docs:    []string{listSet("one", "", "dev"), listSet("two", "", "prod", "dev")},
			wantErr: `both ApplicationSet one and ApplicationSet two generate the Application "app-dev"; in a cluster they would fight over it`},
		{name: "an error names its set when there are several",
			docs:    []string{listSet("one", "", "dev"), pluginSet},
			wantErr: "ApplicationSet slow: "},
		{name: "a single set's error is not prefixed",
			docs:    []string{pluginSet},
			wantErr: "plugin"},
		{name: "warnings are logged with their set",
			docs:      []string{nestedTemplateSet},
			wantNames: []string{"app-dev"},
			wantLog:   "is ignored: Argo CD applies only the template of a top-level generator\" applicationSet=nested"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sets, err := appset.ParseAll([]byte(strings.Join(tc.docs, "---\n")), "sets.yaml")
			if err != nil {
				t.Fatal(err)
			}
			var log bytes.Buffer
			f := appset.File{Logger: slog.New(slog.NewTextHandler(&log, nil))}
			apps, err := f.Render(t.Context(), sets)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				if errors.Is(err, appset.ErrTimeout) {
					t.Errorf("error %v wraps ErrTimeout", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, a := range apps {
				names = append(names, a["metadata"].(map[string]any)["name"].(string))
			}
			if strings.Join(names, " ") != strings.Join(tc.wantNames, " ") {
				t.Errorf("Applications = %v, want %v", names, tc.wantNames)
			}
			if tc.wantLog != "" && !strings.Contains(log.String(), tc.wantLog) {
				t.Errorf("log %q lacks %q", log.String(), tc.wantLog)
			}
		})
	}
}

// blockingPlugin answers GetParams only when release is closed, whatever
// its context says: like a template that cannot be interrupted.
type blockingPlugin struct {
	started chan struct{}
	release chan struct{}
}

func (b *blockingPlugin) GetParams(context.Context, string, map[string]any) ([]map[string]any, error) {
	close(b.started)
	<-b.release
	return nil, nil
}

// TestFileRenderGivesUp: File.Render returns when its timeout or its
// context ends, even though the render it started has not.
func TestFileRenderGivesUp(t *testing.T) {
	tests := []struct {
		name    string
		timeout time.Duration
		cancel  bool // cancel the caller's context once the plugin is called
		want    error
		wantMsg string
	}{
		{name: "timeout", timeout: time.Millisecond, want: context.DeadlineExceeded, wantMsg: "gave up after 1ms: context deadline exceeded"},
		{name: "no timeout, context canceled", timeout: -1, cancel: true, want: context.Canceled, wantMsg: "gave up: context canceled"},
		{name: "default timeout, context canceled", timeout: 0, cancel: true, want: context.Canceled, wantMsg: "gave up after 5m0s: context canceled"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sets, err := appset.ParseAll([]byte(pluginSet), "sets.yaml")
			if err != nil {
				t.Fatal(err)
			}
			p := &blockingPlugin{started: make(chan struct{}), release: make(chan struct{})}
			defer close(p.release)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if tc.cancel {
				go func() {
					<-p.started
					cancel()
				}()
			}
			f := appset.File{
				Renderer: &appset.Renderer{Plugins: func(context.Context, string) (appset.ParamsGetter, error) { return p, nil }},
				Timeout:  tc.timeout,
			}
			_, err = f.Render(ctx, sets)
			if !errors.Is(err, appset.ErrTimeout) || !errors.Is(err, tc.want) || err.Error() != tc.wantMsg {
				t.Fatalf("error = %v, want %q wrapping ErrTimeout and %v", err, tc.wantMsg, tc.want)
			}
		})
	}
}
