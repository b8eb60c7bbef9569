package appset

// Cases ported from Argo CD's tests of the clusters generator
// (applicationset/generators/cluster_test.go) and of the
// clusterDecisionResource generator (duck_type_test.go), with the cluster
// Secrets, ConfigMaps and duck-typed resources given as manifests. Sets
// come in strata's documented order (cluster name, in-cluster last), where
// the controller's is a map's.

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// clusterSecrets are the Secrets of Argo CD's TestGenerateParams, one with
// base64 data (as the API server gives it), one with stringData.
const clusterSecretsYAML = `apiVersion: v1
kind: Secret
metadata:
  name: staging-01
  namespace: namespace
  labels: {argocd.argoproj.io/secret-type: cluster, environment: staging, org: foo}
  annotations: {foo.argoproj.io: staging}
data:
  config: e30=
  name: c3RhZ2luZy0wMQ==
  server: aHR0cHM6Ly9zdGFnaW5nLTAxLmV4YW1wbGUuY29t
---
apiVersion: v1
kind: Secret
metadata:
  name: production-01
  namespace: namespace
  labels: {argocd.argoproj.io/secret-type: cluster, environment: production, org: bar}
  annotations: {foo.argoproj.io: production}
stringData:
  config: "{}"
  name: production_01/west
  server: https://production-01.example.com
  project: prod-project
---
apiVersion: v1
kind: Secret
metadata:
  name: not-a-cluster
  namespace: namespace
  labels: {environment: production}
stringData: {name: x, server: https://x.example.com}
---
apiVersion: v1
kind: Secret
metadata:
  name: other-namespace
  namespace: elsewhere
  labels: {argocd.argoproj.io/secret-type: cluster}
stringData: {name: y, server: https://y.example.com}
`

type objCase struct {
	name       string
	objects    string // more manifests
	gen        string // the spec.generators entry
	goTemplate bool
	version    string
	want       string
	wantErr    string
	wantWarn   string
}

func runObjCases(t *testing.T, cases []objCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			objs := &Objects{}
			if err := objs.Load([]byte(clusterSecretsYAML), "secrets.yaml"); err != nil {
				t.Fatal(err)
			}
			if c.objects != "" {
				if err := objs.Load([]byte(c.objects), "objects.yaml"); err != nil {
					t.Fatal(err)
				}
			}
			r := &Renderer{Objects: objs, Namespace: "namespace"}
			if c.version != "" {
				v, _, err := ParseVersion(c.version)
				if err != nil {
					t.Fatal(err)
				}
				r.Version = v
			}
			got, warnings, err := firstParams(t, testAppSet(c.goTemplate, c.gen), r)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.wantWarn != "" && !strings.Contains(strings.Join(warnings, "\n"), c.wantWarn) {
				t.Errorf("warnings = %q, want one containing %q", warnings, c.wantWarn)
			}
			var want any
			if err := json.Unmarshal([]byte(c.want), &want); err != nil {
				t.Fatalf("bad want: %v", err)
			}
			if got == nil {
				got = []map[string]any{}
			}
			if diff := cmp.Diff(want, asJSON(t, got)); diff != "" {
				t.Errorf("params (-want +got):\n%s", diff)
			}
		})
	}
}

const (
	prodPlain    = `"name": "production_01/west", "nameNormalized": "production-01-west", "server": "https://production-01.example.com", "metadata.labels.environment": "production", "metadata.labels.org": "bar", "metadata.labels.argocd.argoproj.io/secret-type": "cluster", "metadata.annotations.foo.argoproj.io": "production", "project": "prod-project"`
	stagingPlain = `"name": "staging-01", "nameNormalized": "staging-01", "server": "https://staging-01.example.com", "metadata.labels.environment": "staging", "metadata.labels.org": "foo", "metadata.labels.argocd.argoproj.io/secret-type": "cluster", "metadata.annotations.foo.argoproj.io": "staging", "project": ""`
	inCluster    = `"name": "in-cluster", "nameNormalized": "in-cluster", "server": "https://kubernetes.default.svc", "project": ""`
	prodGo       = `"name": "production_01/west", "nameNormalized": "production-01-west", "server": "https://production-01.example.com", "project": "prod-project", "metadata": {"labels": {"environment": "production", "org": "bar", "argocd.argoproj.io/secret-type": "cluster"}, "annotations": {"foo.argoproj.io": "production"}}`
	stagingGo    = `"name": "staging-01", "nameNormalized": "staging-01", "server": "https://staging-01.example.com", "project": "", "metadata": {"labels": {"environment": "staging", "org": "foo", "argocd.argoproj.io/secret-type": "cluster"}, "annotations": {"foo.argoproj.io": "staging"}}`
	lolValues    = `values: {lol1: lol, lol2: "{{values.lol1}}{{values.lol1}}", foo: bar, bar: "{{ metadata.annotations.foo.argoproj.io }}", bat: "{{ metadata.labels.environment }}", aaa: "{{ server }}", no-op: "{{ this-does-not-exist }}"}`
)

func lolWant(bar, bat, aaa string) string {
	return `"values.lol1": "lol", "values.lol2": "{{values.lol1}}{{values.lol1}}", "values.foo": "bar", "values.bar": "` + bar + `", "values.no-op": "{{ this-does-not-exist }}", "values.bat": "` + bat + `", "values.aaa": "` + aaa + `"`
}

func TestClustersGenerator(t *testing.T) {
	runObjCases(t, []objCase{
		{
			name: "no label selector",
			gen:  "  - clusters:\n      " + lolValues + "\n",
			want: `[{` + prodPlain + `, ` + lolWant("production", "production", "https://production-01.example.com") + `},
 {` + stagingPlain + `, ` + lolWant("staging", "staging", "https://staging-01.example.com") + `},
 {` + inCluster + `, ` + lolWant("{{ metadata.annotations.foo.argoproj.io }}", "{{ metadata.labels.environment }}", "https://kubernetes.default.svc") + `}]`,
		},
		{
			name: "secret type label selector",
			gen:  "  - clusters:\n      selector: {matchLabels: {argocd.argoproj.io/secret-type: cluster}}\n",
			want: `[{` + prodPlain + `}, {` + stagingPlain + `}]`,
		},
		{
			name: "production-only",
			gen:  "  - clusters:\n      selector: {matchLabels: {environment: production}}\n      values: {foo: bar}\n",
			want: `[{` + prodPlain + `, "values.foo": "bar"}]`,
		},
		{
			name: "production or staging",
			gen:  "  - clusters:\n      selector: {matchExpressions: [{key: environment, operator: In, values: [production, staging]}]}\n      values: {foo: bar}\n",
			want: `[{` + prodPlain + `, "values.foo": "bar"}, {` + stagingPlain + `, "values.foo": "bar"}]`,
		},
		{
			name: "production or staging with match labels",
			gen:  "  - clusters:\n      selector: {matchLabels: {org: foo}, matchExpressions: [{key: environment, operator: In, values: [production, staging]}]}\n      values: {name: baz}\n",
			want: `[{` + stagingPlain + `, "values.name": "baz"}]`,
		},
		{
			name: "flat mode without selectors",
			gen:  "  - clusters:\n      flatList: true\n",
			want: `[{"clusters": [{` + prodPlain + `}, {` + stagingPlain + `}, {` + inCluster + `}]}]`,
		},
		{
			name: "production or staging with flat mode",
			gen:  "  - clusters:\n      flatList: true\n      selector: {matchExpressions: [{key: environment, operator: In, values: [production, staging]}]}\n      values: {foo: bar}\n",
			want: `[{"clusters": [{` + prodPlain + `, "values.foo": "bar"}, {` + stagingPlain + `, "values.foo": "bar"}]}]`,
		},
		{
			name:       "goTemplate: no label selector",
			gen:        "  - clusters:\n      values: {bat: \"{{ .metadata.labels.environment }}\"}\n",
			goTemplate: true,
			want: `[{` + prodGo + `, "values": {"bat": "production"}}, {` + stagingGo + `, "values": {"bat": "staging"}},
 {` + inCluster + `, "values": {"bat": "<no value>"}}]`,
		},
		{
			name:       "goTemplate: production or staging with flat mode",
			gen:        "  - clusters:\n      flatList: true\n      selector: {matchExpressions: [{key: environment, operator: In, values: [production, staging]}]}\n",
			goTemplate: true,
			want:       `[{"clusters": [{` + prodGo + `}, {` + stagingGo + `}]}]`,
		},
		{
			name: "a Secret for the in-cluster server replaces the in-cluster entry",
			objects: `apiVersion: v1
kind: Secret
metadata: {name: local, namespace: namespace, labels: {argocd.argoproj.io/secret-type: cluster}}
stringData: {name: local, server: "https://kubernetes.default.svc"}
`,
			gen:  "  - clusters: {selector: {matchExpressions: [{key: environment, operator: DoesNotExist}]}}\n  - clusters: {}\n",
			want: `[{"name": "local", "nameNormalized": "local", "server": "https://kubernetes.default.svc", "project": "", "metadata.labels.argocd.argoproj.io/secret-type": "cluster"}]`,
		},
		{
			name:    "an invalid selector is an error",
			gen:     "  - clusters: {selector: {matchExpressions: [{key: environment, operator: In, values: [\"not valid!\"]}]}}\n",
			wantErr: "selector",
		},
		{
			name: "post-selector over nested labels: Argo CD 3.4 and later see metadata.labels.<key>",
			gen:  "  - clusters: {}\n    selector: {matchLabels: {metadata.labels.environment: staging}}\n", goTemplate: true,
			want: `[{` + stagingGo + `}]`,
		},
		{
			name: "post-selector over nested labels: before 3.4 the labels are one value",
			gen:  "  - clusters: {}\n    selector: {matchLabels: {metadata.labels.environment: staging}}\n", goTemplate: true, version: "3.3",
			want: `[]`,
		},
		{
			name: "two Secrets naming one cluster: the last listed wins",
			objects: `apiVersion: v1
kind: Secret
metadata: {name: zz-staging-copy, namespace: namespace, labels: {argocd.argoproj.io/secret-type: cluster, copy: "yes"}}
stringData: {name: staging-01, server: "https://copy.example.com"}
`,
			gen:      "  - clusters: {selector: {matchLabels: {argocd.argoproj.io/secret-type: cluster}}}\n",
			want:     `[{` + prodPlain + `}, {"name": "staging-01", "nameNormalized": "staging-01", "server": "https://copy.example.com", "project": "", "metadata.labels.argocd.argoproj.io/secret-type": "cluster", "metadata.labels.copy": "yes"}]`,
			wantWarn: `cluster Secrets "staging-01" and "zz-staging-copy" both name the cluster "staging-01"`,
		},
	})
}

func TestClustersNoObjects(t *testing.T) {
	_, _, err := firstParams(t, testAppSet(false, "  - clusters: {}\n"), &Renderer{})
	if err == nil || !strings.Contains(err.Error(), "spec.generators[0].clusters: no cluster objects given") || !strings.Contains(err.Error(), "--secret FILE") {
		t.Errorf("error = %v", err)
	}
}

const duckObjects = `apiVersion: v1
kind: ConfigMap
metadata: {name: my-configmap, namespace: namespace}
data: {apiVersion: mallard.io/v1, kind: ducks, statusListKey: clusters, matchKey: clusterName}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: no-match-key, namespace: namespace}
data: {apiVersion: mallard.io/v1, kind: ducks}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: core-group, namespace: namespace}
data: {apiVersion: v1, kind: pods, matchKey: clusterName}
---
apiVersion: mallard.io/v1
kind: Duck
metadata: {name: resource, namespace: namespace, labels: {duck: all-species}}
status:
  clusters:
    - {clusterName: staging-01}
    - {clusterName: production_01/west, extra: 3}
    - {clusterName: unknown-cluster}
    - {clusterName: ""}
---
apiVersion: mallard.io/v1
kind: Duck
metadata: {name: other, namespace: namespace, labels: {duck: spotted}}
status:
  clusters:
    - {clusterName: in-cluster}
---
apiVersion: mallard.io/v1
kind: Duck
metadata: {name: empty, namespace: namespace, labels: {duck: none}}
status: {}
`

func TestClusterDecisionResource(t *testing.T) {
	runObjCases(t, []objCase{
		{
			name:    "by name",
			objects: duckObjects,
			gen:     "  - clusterDecisionResource: {configMapRef: my-configmap, name: resource, values: {foo: \"{{ name }}\"}}\n",
			want: `[{"name": "staging-01", "server": "https://staging-01.example.com", "clusterName": "staging-01", "values.foo": "{{ name }}"},
 {"name": "production_01/west", "server": "https://production-01.example.com", "clusterName": "production_01/west", "extra": "3", "values.foo": "{{ name }}"}]`,
		},
		{
			name:    "by label selector, the in-cluster entry matched",
			objects: duckObjects,
			gen:     "  - clusterDecisionResource: {configMapRef: my-configmap, labelSelector: {matchLabels: {duck: spotted}}}\n",
			want:    `[{"name": "in-cluster", "server": "https://kubernetes.default.svc", "clusterName": "in-cluster"}]`,
		},
		{
			name:       "goTemplate: values are a map of strings, not templated",
			objects:    duckObjects,
			goTemplate: true,
			gen:        "  - clusterDecisionResource: {configMapRef: my-configmap, labelSelector: {matchExpressions: [{key: duck, operator: In, values: [spotted]}]}, values: {a: \"{{ .name }}\"}}\n",
			want:       `[{"name": "in-cluster", "server": "https://kubernetes.default.svc", "clusterName": "in-cluster", "values": {"a": "{{ .name }}"}}]`,
		},
		{
			name:    "a resource with an empty status generates nothing",
			objects: duckObjects,
			gen:     "  - clusterDecisionResource: {configMapRef: my-configmap, name: empty}\n",
			want:    `[]`,
		},
		{
			name:     "no matchKey: nothing, with a warning",
			objects:  duckObjects,
			gen:      "  - clusterDecisionResource: {configMapRef: no-match-key, name: resource}\n",
			want:     `[]`,
			wantWarn: `has no data.matchKey`,
		},
		{
			name:    "before 3.5 a decision value that is not a string fails",
			objects: duckObjects,
			version: "3.4",
			gen:     "  - clusterDecisionResource: {configMapRef: my-configmap, name: resource}\n",
			wantErr: "status.clusters[1].extra is",
		},
		{name: "no resource found", objects: duckObjects, gen: "  - clusterDecisionResource: {configMapRef: my-configmap, name: missing}\n", wantErr: "no ducks (mallard.io/v1) found in namespace namespace by name missing"},
		{name: "missing ConfigMap", objects: duckObjects, gen: "  - clusterDecisionResource: {configMapRef: nope, name: resource}\n", wantErr: `ConfigMap "nope" not found in namespace namespace; pass it with --objects FILE`},
		{name: "a core-group apiVersion", objects: duckObjects, gen: "  - clusterDecisionResource: {configMapRef: core-group, name: resource}\n", wantErr: "data.apiVersion GROUP/VERSION"},
		{name: "name and labelSelector", objects: duckObjects, gen: "  - clusterDecisionResource: {configMapRef: my-configmap, name: resource, labelSelector: {matchLabels: {duck: spotted}}}\n", wantErr: "give either name or labelSelector"},
		{name: "neither name nor labelSelector", objects: duckObjects, gen: "  - clusterDecisionResource: {configMapRef: my-configmap}\n", wantErr: "give either name or labelSelector"},
		{name: "no configMapRef", objects: duckObjects, gen: "  - clusterDecisionResource: {name: resource}\n", wantErr: "configMapRef is empty"},
	})
}
