package paritytest_test

// Plugin configurations shaped as users write them, each served by both
// sidecars: multi-line `sh -c` scripts, init commands that write into the
// repository, discovery by find commands and ** globs, Application env
// entries, static and dynamic parameters built with jq, the settings of
// the older argocd-cm plugins (allowConcurrency, lockRepo) left in.

// vaultPlugin follows the argocd-vault-plugin sidecar configuration for
// Helm charts: discovery by a find command, helm dependency build as init,
// helm template piped into a filter that replaces <path:...#key>
// placeholders (here a sed standing in for argocd-vault-plugin).
const vaultPlugin = `apiVersion: argoproj.io/v1alpha1
kind: ConfigManagementPlugin
metadata:
  name: argocd-vault-plugin-helm
spec:
  allowConcurrency: true
  discover:
    find:
      command:
        - sh
        - "-c"
        - "find . -name 'Chart.yaml' && find . -name 'values.yaml'"
  init:
    command:
      - sh
      - "-c"
      - "helm dependency build >/dev/null"
  generate:
    command:
      - sh
      - "-c"
      - |
        helm template $ARGOCD_APP_NAME -n $ARGOCD_APP_NAMESPACE ${ARGOCD_ENV_HELM_ARGS} . |
        sed -e "s|<path:secret/data/guestbook#password>|$(printf %s "$ARGOCD_ENV_VAULT_FAKE" | base64)|g"
  lockRepo: false
`

// helmfilePlugin follows the shape of the helmfile sidecars (a wrapper
// script from the image, run with a phase argument, the environment from
// an Application env entry).
const helmfilePlugin = `apiVersion: argoproj.io/v1alpha1
kind: ConfigManagementPlugin
metadata:
  name: helmfile
spec:
  version: v1.0
  init:
    command: [argo-cd-helmfile.sh]
    args: [init]
  generate:
    command: [argo-cd-helmfile.sh]
    args: [generate]
  discover:
    find:
      command: [sh, -c, "find . -maxdepth 1 -name 'helmfile.yaml' -o -maxdepth 1 -name 'helmfile.d'"]
`

// helmfileScript is a small helmfile: helmfile.yaml lists releases
// ("- name:", "chart:", "namespace:" lines); init builds each chart's
// dependencies, generate renders each with the values of the environment
// named by ARGOCD_ENV_HELMFILE_ENVIRONMENT, when there are some.
const helmfileScript = `#!/bin/sh
set -eu
releases() {
  awk '/- name:/ {n=$3} /chart:/ {c=$2} /namespace:/ {print n, c, $2}' helmfile.yaml
}
case "$1" in
init)
  releases | while read -r name chart ns; do
    helm dependency build "$chart" >/dev/null
  done
  ;;
generate)
  env="${ARGOCD_ENV_HELMFILE_ENVIRONMENT:-default}"
  releases | while read -r name chart ns; do
    set -- helm template "$name" "$chart" --namespace "$ns"
    if [ -f "environments/$env/$name.yaml" ]; then
      set -- "$@" --values "environments/$env/$name.yaml"
    fi
    echo "---"
    "$@"
  done
  ;;
*)
  echo "usage: $0 init|generate" >&2
  exit 2
  ;;
esac
`

// kustomizedHelmPlugin is the kustomized-helm plugin of Argo CD's
// example apps: helm template into a file the kustomization lists as a
// resource, then kustomize build.
const kustomizedHelmPlugin = `apiVersion: argoproj.io/v1alpha1
kind: ConfigManagementPlugin
metadata:
  name: kustomized-helm
spec:
  init:
    command: ["/bin/sh", "-c"]
    args: ["helm dependency build ../../charts/web > /dev/null"]
  generate:
    command: ["/bin/sh", "-c"]
    args: ["helm template ../../charts/web --name-template $ARGOCD_APP_NAME --namespace $ARGOCD_APP_NAMESPACE --include-crds > all.yaml && kustomize build"]
  discover:
    fileName: "./kustomization.yaml"
`

// synthPlugin serves manifests synthesized ahead (cdk8s synth, jsonnet
// rendered in CI) and committed: discovery by a ** glob, generate cats
// them, a static announcement and a dynamic one built with jq.
const synthPlugin = `apiVersion: argoproj.io/v1alpha1
kind: ConfigManagementPlugin
metadata:
  name: cdk8s-synth
spec:
  discover:
    find:
      glob: "**/cdk8s.yaml"
  generate:
    command: [sh, -c, 'cat dist/*.k8s.yaml']
  parameters:
    static:
      - name: image-tag
        title: Image tag
        tooltip: The tag every container runs
        required: true
        string: latest
    dynamic:
      command: [sh, -c]
      args:
        - |
          ls dist | jq -R -s '[{name: "synthesized", title: "Synthesized files", collectionType: "array", array: (split("\n") | map(select(. != "")))}]'
`

// guestbookChart is a small chart of the usual shape.
var guestbookChart = map[string]string{
	"Chart.yaml":  "apiVersion: v2\nname: guestbook\nversion: 0.1.0\nappVersion: \"1.16\"\n",
	"values.yaml": "replicas: 1\nimage:\n  repository: registry.example.com/guestbook\n  tag: \"1.16\"\nlabels:\n  team: web\n",
	"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
  namespace: {{ .Release.Namespace }}
  labels:
    app.kubernetes.io/name: {{ .Chart.Name }}
    {{- toYaml .Values.labels | nindent 4 }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {app: {{ .Release.Name }}}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}}
    spec:
      containers:
      - name: web
        image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
`,
	"templates/secret.yaml": `apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-db
data:
  password: <path:secret/data/guestbook#password>
`,
	"templates/NOTES.txt": "Installed {{ .Release.Name }}.\n",
}

func under(dir string, files map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range files {
		out[dir+"/"+k] = v
	}
	return out
}

func merge(maps ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func realWorldCases() []parityCase {
	vaultRepo := merge(under("apps/guestbook", guestbookChart), map[string]string{"apps/plain/cm.yaml": "x"})
	vaultApp := appRequest{path: "apps/guestbook", namespace: "guestbook",
		pluginEnv: [][2]string{{"HELM_ARGS", "--set replicas=3 --set image.tag=$ARGOCD_APP_REVISION_SHORT"}, {"VAULT_FAKE", "s3cr3t"}}}

	helmfileRepo := merge(
		under("platform/charts/guestbook", guestbookChart),
		map[string]string{
			"platform/helmfile.yaml":                "releases:\n- name: front\n  chart: ./charts/guestbook\n  namespace: web\n- name: back\n  chart: ./charts/guestbook\n  namespace: api\n",
			"platform/environments/prod/front.yaml": "replicas: 5\n",
		})

	kustomizedRepo := merge(
		under("charts/web", guestbookChart),
		map[string]string{
			"overlays/prod/kustomization.yaml": "resources:\n- all.yaml\nnamePrefix: prod-\nlabels:\n- pairs: {env: prod}\npatches:\n- target: {kind: Deployment}\n  patch: |-\n    - op: replace\n      path: /spec/replicas\n      value: 4\n",
		})

	synthRepo := map[string]string{
		"services/api/cdk8s.yaml":         "language: typescript\napp: npx ts-node main.ts\n",
		"services/api/main.ts":            "// the chart's source\n",
		"services/api/dist/api.k8s.yaml":  "apiVersion: v1\nkind: Service\nmetadata:\n  name: api-service-c8a1b2c3\nspec:\n  ports:\n  - port: 80\n    targetPort: 8080\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api-deployment-c8d4e5f6\nspec:\n  replicas: 2\n  selector:\n    matchLabels: {app: api}\n  template:\n    metadata:\n      labels: {app: api}\n    spec:\n      containers:\n      - name: app\n        image: api:1.0\n",
		"services/api/dist/crds.k8s.yaml": "",
	}
	synthApp := appRequest{path: "services/api"}

	return []parityCase{
		{name: "argocd-vault-plugin style: discovery", plugin: vaultPlugin, files: vaultRepo, req: vaultApp, rpc: rpcMatch, want: "supported"},
		{name: "argocd-vault-plugin style: no chart", plugin: vaultPlugin, files: vaultRepo, req: appRequest{path: "apps/plain"}, rpc: rpcMatch, want: "not supported"},
		{name: "argocd-vault-plugin style: generate", plugin: vaultPlugin, files: vaultRepo, req: vaultApp,
			want: `{"apiVersion":"v1","data":{"password":"czNjcjN0"},"kind":"Secret","metadata":{"name":"guestbook-db"}}` + "\n" +
				`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"labels":{"app.kubernetes.io/name":"guestbook","team":"web"},"name":"guestbook","namespace":"guestbook"},` +
				`"spec":{"replicas":3,"selector":{"matchLabels":{"app":"guestbook"}},"template":{"metadata":{"labels":{"app":"guestbook"}},"spec":{"containers":[{"image":"registry.example.com/guestbook:0123456","name":"web"}]}}}}`},
		// The pipe hides helm's failure (sh has no pipefail): both answer
		// with no manifests, which Argo CD then syncs as an empty app.
		{name: "argocd-vault-plugin style: a chart that does not render", plugin: vaultPlugin,
			files: merge(vaultRepo, map[string]string{"apps/guestbook/templates/bad.yaml": "{{ .Values.missing.field }}\n"}), req: vaultApp,
			want: "no manifests"},

		{name: "helmfile style: discovery", plugin: helmfilePlugin, files: helmfileRepo, req: appRequest{path: "platform"}, rpc: rpcMatch, want: "supported"},
		{name: "helmfile style: generate, prod environment", plugin: helmfilePlugin, files: helmfileRepo,
			req:  appRequest{path: "platform", namespace: "platform", pluginEnv: [][2]string{{"HELMFILE_ENVIRONMENT", "prod"}}},
			want: helmfileWant(5)},
		{name: "helmfile style: generate, default environment", plugin: helmfilePlugin, files: helmfileRepo,
			req: appRequest{path: "platform", namespace: "platform"}, want: helmfileWant(1)},

		{name: "kustomized helm: discovery", plugin: kustomizedHelmPlugin, files: kustomizedRepo, req: appRequest{path: "overlays/prod"}, rpc: rpcMatch, want: "supported"},
		{name: "kustomized helm: generate", plugin: kustomizedHelmPlugin, files: kustomizedRepo, req: appRequest{path: "overlays/prod", namespace: "shop"},
			want: `{"apiVersion":"v1","data":{"password":"\u003cpath:secret/data/guestbook#password\u003e"},"kind":"Secret","metadata":{"labels":{"env":"prod"},"name":"prod-guestbook-db"}}` + "\n" +
				`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"labels":{"app.kubernetes.io/name":"guestbook","env":"prod","team":"web"},"name":"prod-guestbook","namespace":"shop"},` +
				`"spec":{"replicas":4,"selector":{"matchLabels":{"app":"guestbook"}},"template":{"metadata":{"labels":{"app":"guestbook"}},"spec":{"containers":[{"image":"registry.example.com/guestbook:1.16","name":"web"}]}}}}`},

		{name: "synthesized manifests: discovery", plugin: synthPlugin, files: synthRepo, req: synthApp, rpc: rpcMatch, want: "supported"},
		{name: "synthesized manifests: generate", plugin: synthPlugin, files: synthRepo, req: synthApp,
			want: `{"apiVersion":"v1","kind":"Service","metadata":{"name":"api-service-c8a1b2c3"},"spec":{"ports":[{"port":80,"targetPort":8080}]}}` + "\n" +
				`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"api-deployment-c8d4e5f6"},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"api"}},"template":{"metadata":{"labels":{"app":"api"}},"spec":{"containers":[{"image":"api:1.0","name":"app"}]}}}}`},
		{name: "synthesized manifests: parameters", plugin: synthPlugin, files: synthRepo, req: synthApp, rpc: rpcAnnounce,
			want: `{"collectionType":"string","itemType":"string","name":"image-tag","required":true,"string":"latest","title":"Image tag","tooltip":"The tag every container runs"}` + "\n" +
				`{"array":["api.k8s.yaml","crds.k8s.yaml"],"collectionType":"array","itemType":"string","name":"synthesized","title":"Synthesized files"}`,
			argo: `{"array":["api.k8s.yaml","crds.k8s.yaml"],"collectionType":"array","itemType":"string","name":"synthesized","title":"Synthesized files"}` + "\n" +
				`{"collectionType":"string","itemType":"string","name":"image-tag","required":true,"string":"latest","title":"Image tag","tooltip":"The tag every container runs"}`,
			why: "strata lists the static announcements first (the proposal); Argo CD the dynamic ones"},
	}
}

// helmfileWant is the helmfile plugin's output: release front (with
// frontReplicas) in namespace web, then back in api.
func helmfileWant(frontReplicas int) string {
	release := func(name, ns string, replicas int) string {
		return `{"apiVersion":"v1","data":{"password":"\u003cpath:secret/data/guestbook#password\u003e"},"kind":"Secret","metadata":{"name":"` + name + `-db"}}` + "\n" +
			`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"labels":{"app.kubernetes.io/name":"guestbook","team":"web"},"name":"` + name + `","namespace":"` + ns + `"},` +
			`"spec":{"replicas":` + itoa(replicas) + `,"selector":{"matchLabels":{"app":"` + name + `"}},"template":{"metadata":{"labels":{"app":"` + name + `"}},"spec":{"containers":[{"image":"registry.example.com/guestbook:1.16","name":"web"}]}}}}`
	}
	return release("front", "web", frontReplicas) + "\n" + release("back", "api", 1)
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
