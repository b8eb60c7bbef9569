package paritytest_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"strings"
	"time"
)

func out(text string) map[string]string { return map[string]string{"out.txt": text} }

// outputCases: what a generate command prints, and how it reaches the
// repo-server.
func outputCases() []parityCase {
	two := cmJSON("a") + "\n" + cmJSON("b")
	return []parityCase{
		{name: "yaml stream", plugin: catOut, files: out(fmt.Sprintf(cm+"---\n"+cm, "a", "b")), want: two},
		{name: "yaml stream with a leading separator and comments", plugin: catOut,
			files: out("---\n# Source: chart/templates/a.yaml\n" + fmt.Sprintf(cm, "a") + "---\n# Source: chart/templates/empty.yaml\n---\n" + fmt.Sprintf(cm, "b") + "...\n"), want: two},
		{name: "empty and null documents", plugin: catOut, files: out("---\n---\nnull\n---\n~\n---\n" + fmt.Sprintf(cm, "a")), want: cmJSON("a")},
		{name: "no output", plugin: catOut, files: out(""), want: "no manifests"},
		{name: "only a line break", plugin: catOut, files: out("\n\n"), want: "no manifests"},
		{name: "no final line break", plugin: catOut, files: out(strings.TrimSuffix(fmt.Sprintf(cm, "a"), "\n")), want: cmJSON("a")},
		{name: "CRLF line ends", plugin: catOut, files: out(strings.ReplaceAll(fmt.Sprintf(cm+"---\n"+cm, "a", "b"), "\n", "\r\n")), want: two},
		{name: "json stream", plugin: catOut, files: out(cmJSON("a") + "\n" + cmJSON("b") + "\n"), want: two},
		{name: "json documents separated by ---", plugin: catOut, files: out(cmJSON("a") + "\n---\n" + cmJSON("b") + "\n"), want: two, argo: "error",
			why: "output starting with { or [ that is not a JSON stream is read again as YAML by strata (documented); Argo CD reads it as JSON only"},
		{name: "pretty json", plugin: catOut, files: out("{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"ConfigMap\",\n  \"metadata\": {\"name\": \"a\"}\n}\n"), want: cmJSON("a")},
		{name: "flow yaml", plugin: catOut, files: out("{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n"), want: cmJSON("a"), argo: "error",
			why: "output starting with { or [ that is not a JSON stream is read again as YAML by strata (documented); Argo CD reads it as JSON only"},
		{name: "flow yaml after a comment", plugin: catOut, files: out("# rendered\n{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n"), want: cmJSON("a")},
		{name: "List unpacked", plugin: catOut,
			files: out("apiVersion: v1\nkind: List\nitems:\n- " + cmJSON("a") + "\n- " + cmJSON("b") + "\n"), want: two},
		{name: "typed list unpacked", plugin: catOut,
			files: out("apiVersion: v1\nkind: ConfigMapList\nitems:\n- " + cmJSON("a") + "\n"), want: cmJSON("a")},
		{name: "empty List", plugin: catOut, files: out("apiVersion: v1\nkind: List\nitems: []\n"), want: "no manifests"},
		{name: "List with null items", plugin: catOut, files: out("apiVersion: v1\nkind: ConfigMapList\nitems: null\n---\n" + fmt.Sprintf(cm, "a")), want: cmJSON("a")},
		{name: "object with null items and a spec is kept", plugin: catOut,
			files: out("apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t}\nitems: null\nspec: {}\n"),
			want:  `{"apiVersion":"example.com/v1","items":null,"kind":"Thing","metadata":{"name":"t"},"spec":{}}`},
		{name: "anchors and merge keys", plugin: catOut,
			files: out("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels: &l {app: web}\n  annotations:\n    <<: *l\n    extra: x\n"),
			want:  `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"annotations":{"app":"web","extra":"x"},"labels":{"app":"web"},"name":"a"}}`},
		{name: "values of every YAML type", plugin: catOut,
			files: out("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata:\n  yes: \"yes\"\n  n: \"010\"\n  t: \"true\"\nbinaryData: {}\nimmutable: true\nx: [1, 2.5, -3, true, null, 'on', \"no\"]\n" +
				"flags: [yes, no, on, off, y, n, Yes, OFF, True, ~, Null]\nnumbers: [012, 0x1F, 1_000, 0b101, 1e3, 0o10, 08, 1.5e-3, -0, +7]\n12: twelve\n"),
			want: `{"12":"twelve","apiVersion":"v1","binaryData":{},"data":{"false":"010","t":"true","true":"yes"},"flags":[true,false,true,false,true,false,true,false,true,null,null],"immutable":true,"kind":"ConfigMap","metadata":{"name":"a"},` +
				`"numbers":[10,31,1000,5,1000,8,8,0.0015,0,7],"x":[1,2.5,-3,true,null,"on","no"]}`},
		{name: "unicode and escapes", plugin: catOut,
			files: out("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: \"caf\\u00e9 <b> & \\\"q\\\" \\t\"}\n"),
			want:  `{"apiVersion":"v1","data":{"k":"café \u003cb\u003e \u0026 \"q\" \t"},"kind":"ConfigMap","metadata":{"name":"a"}}`},
		{name: "timestamps", plugin: catOut, files: out("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata:\n  day: 2024-01-31\n  at: 2024-01-31T10:20:30Z\n  spaced: 2001-12-14 21:59:43.10 -5\n  quoted: \"2024-01-31\"\n"),
			want: `{"apiVersion":"v1","data":{"at":"2024-01-31T10:20:30Z","day":"2024-01-31","quoted":"2024-01-31","spaced":"2001-12-14 21:59:43.10 -5"},"kind":"ConfigMap","metadata":{"name":"a"}}`},
		{name: "any object with a list of items is unpacked", plugin: catOut,
			files: out("apiVersion: example.com/v1\nkind: Bundle\nmetadata: {name: b}\nitems:\n- " + cmJSON("a") + "\n"), want: cmJSON("a")},
		{name: "items that are not objects", plugin: catOut, files: out("apiVersion: v1\nkind: List\nitems: [1, 2]\n"), want: "error"},
		{name: "an item without kind", plugin: catOut, files: out("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, metadata: {name: a}}\n"),
			want: "error", argo: `{"apiVersion":"v1","metadata":{"name":"a"}}`,
			why: "strata requires apiVersion and kind on every item; Argo CD passes the item on, and the sync fails later"},
		{name: "a repeated key: the last wins", plugin: catOut, files: out("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: \"1\"}\ndata: {k: \"2\"}\n"),
			want: `{"apiVersion":"v1","data":{"k":"2"},"kind":"ConfigMap","metadata":{"name":"a"}}`},
		{name: "a repeated key in JSON: the last wins", plugin: catOut, files: out(`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "name": "b"}}`),
			want: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}}`},
		{name: "tab indentation", plugin: catOut, files: out("apiVersion: v1\nkind: ConfigMap\nmetadata:\n\tname: a\n"), want: "error"},
		{name: "not yaml", plugin: catOut, files: out("invalid yaml: }\n"), want: "error"},
		{name: "a log line before the manifests", plugin: catOut, files: out("Rendering chart...\n" + fmt.Sprintf(cm, "a")), want: "error"},
		{name: "a scalar document", plugin: catOut, files: out("hello\n"), want: "error"},
		{name: "a document without kind", plugin: catOut, files: out("apiVersion: v1\nmetadata: {name: a}\n"), want: "error"},
		{name: "a document without apiVersion", plugin: catOut, files: out("kind: ConfigMap\nmetadata: {name: a}\n"),
			want: "error", argo: `{"kind":"ConfigMap","metadata":{"name":"a"}}`,
			why: "strata requires apiVersion on every manifest; Argo CD passes the object on, and the sync fails later"},
		{name: "a YAML list of manifests", plugin: catOut, files: out("- " + cmJSON("a") + "\n- " + cmJSON("b") + "\n"),
			want: two, argo: "error",
			why: "strata reads a document that is a list of manifests as those manifests (documented); Argo CD's repo-server refuses it"},
		{name: "a List inside a List", plugin: catOut,
			files: out("apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: List\n  items:\n  - " + cmJSON("a") + "\n"),
			want:  cmJSON("a"), argo: `{"apiVersion":"v1","items":[` + cmJSON("a") + `],"kind":"List"}`,
			why: "strata unpacks nested Lists (up to 8 deep); Argo CD unpacks one level and passes the inner List on as an object of kind List"},
	}
}

// envCases: the environment the commands get.
func envCases() []parityCase {
	many := []appParameter{
		{name: "replicas", str: str("3")},
		{name: "values-files", array: []string{"values.yaml", "values-prod.yaml"}},
		{name: "helm-parameters", mapping: map[string]string{"image.tag": "1.2.3", "ingress.hosts[0]": "a.example.com"}},
		{name: "html", str: str("<a href=\"x\">&</a>")},
		{name: "café", str: str("unicode name")},
		{name: "empty", str: str("")},
		{name: "empty-array", hasArray: true},
		{name: "empty-map", hasMap: true},
	}
	colliding := []appParameter{
		{name: "a-b", str: str("first")},
		{name: "a.b", str: str("second")},
		{name: "p", str: str("s"), mapping: map[string]string{"0": "from the map"}, array: []string{"from the array"}},
	}
	return []parityCase{
		{name: "the build environment, no plugin section", plugin: printEnv, files: map[string]string{"apps/web/x": ""},
			req:  appRequest{path: "apps/web", namespace: "web-prod"},
			want: envCM("apps/web", "web-prod")},
		{name: "variables a later repo-server sends pass through", plugin: printEnv, files: map[string]string{"x": ""},
			req:  appRequest{extra: map[string]string{"ARGOCD_APP_PROJECT_NAME": "team-a", "ARGOCD_ENV_X": "y=z", "KUBE_VERSION": "v1.32.1"}},
			want: strings.Replace(envCM(".", "", "ARGOCD_APP_PROJECT_NAME=team-a", "ARGOCD_ENV_X=y=z"), "KUBE_VERSION=v1.31.0", "KUBE_VERSION=v1.32.1", 1)},
		{name: "the request's PATH reaches the command, not the lookup of its program", plugin: plugin("path", "  generate:\n    command: [sh, -c, 'printf \"apiVersion: v1\\nkind: ConfigMap\\nmetadata: {name: p}\\ndata: {path: %s}\\n\" \"$PATH\"']\n"),
			files: map[string]string{"x": ""}, req: appRequest{extra: map[string]string{"PATH": "/nonexistent"}},
			want: `{"apiVersion":"v1","data":{"path":"/nonexistent"},"kind":"ConfigMap","metadata":{"name":"p"}}`},
		{name: "empty values are not set", plugin: printEnv, files: map[string]string{"x": ""},
			req:  appRequest{pluginEnv: [][2]string{{"EMPTY", ""}, {"SET", "1"}}},
			want: envCM(".", "", "ARGOCD_ENV_SET=1", "ARGOCD_APP_PARAMETERS=null")},
		{name: "plugin env with $VARs expanded by the repo-server", plugin: printEnv, files: map[string]string{"x": ""},
			req:  appRequest{namespace: "ns", pluginEnv: [][2]string{{"RELEASE", "$ARGOCD_APP_NAME-$ARGOCD_APP_NAMESPACE"}, {"PRICE", "$$5 ${UNKNOWN}x"}, {"spaced name", "a b"}}},
			want: envCM(".", "ns", "ARGOCD_ENV_PRICE=$5 x", "ARGOCD_ENV_RELEASE=guestbook-ns", "ARGOCD_APP_PARAMETERS=null")},
		{name: "parameters", plugin: printEnv, files: map[string]string{"x": ""},
			req:  appRequest{parameters: many},
			want: envCM(".", "", sentNonEmpty(many)...)},
		{name: "colliding parameter names", plugin: printEnv, files: map[string]string{"x": ""},
			req: appRequest{parameters: colliding},
			want: envCM(".", "", "ARGOCD_APP_PARAMETERS="+paramEnv(colliding)[0][1],
				"PARAM_A_B=second", "PARAM_P=s", "PARAM_P_0=from the array")},
		{name: "no parameters", plugin: printEnv, files: map[string]string{"x": ""},
			req:  appRequest{pluginEnv: [][2]string{}},
			want: envCM(".", "", "ARGOCD_APP_PARAMETERS=null")},
	}
}

// sentNonEmpty is what the repo-server sends for ps, less the empty values.
func sentNonEmpty(ps []appParameter) []string {
	var out []string
	for _, kv := range paramEnv(ps) {
		if kv[1] != "" {
			out = append(out, kv[0]+"="+kv[1])
		}
	}
	return out
}

// repoCases: the repository as the commands see it.
func repoCases() []parityCase {
	files := map[string]string{
		"apps/web/m.yaml":     fmt.Sprintf(cm, "a"),
		"apps/web/run.sh":     "#!/bin/sh\necho hi\n",
		"apps/web/ro.txt":     "read only",
		"apps/web/empty/":     "",
		"apps/web/link.yaml":  "link:m.yaml",
		"apps/web/up":         "link:../../shared",
		"apps/web/dangling":   "link:missing.yaml",
		"shared/base.yaml":    "base",
		"shared/deep/x/y.txt": "deep",
		".argocd-source.yaml": "plugin: {}\n",
		"README.md":           "readme",
	}
	modes := map[string]fs.FileMode{"apps/web/run.sh": 0o755, "apps/web/ro.txt": 0o400, "shared/deep": 0o750}
	return []parityCase{
		{name: "files, modes and links", plugin: printTree("tree", ""), files: files, modes: modes, req: appRequest{path: "apps/web"}, want: treeWant(treeDefaultModes)},
		{name: "files, modes and links with preserveFileMode", plugin: printTree("tree-modes", "  preserveFileMode: true\n"), files: files, modes: modes, req: appRequest{path: "apps/web"}, want: treeWant(treePreservedModes)},
		{name: "unusual file names", plugin: printTree("tree-names", ""), same: true, files: map[string]string{
			"apps/web/with space.yaml": "a", "apps/web/café ☕.txt": "b", "apps/web/-leading-dash": "c", "apps/web/" + strings.Repeat("n", 200): "d",
			"apps/web/quote\"and'apostrophe": "e", "apps/web/back\\slash": "f", "apps/web/.hidden/x": "g", "deep/" + strings.Repeat("d/", 60) + "leaf": "h",
		}, req: appRequest{path: "apps/web"}},
		{name: "an empty application directory", plugin: printTree("tree-empty", ""), same: true, files: map[string]string{"apps/empty/": "", "other/x": "y"}, req: appRequest{path: "apps/empty"}},
		{name: "the application path through a link", plugin: plugin("cwd", "  generate:\n    command: [sh, -c, 'cat m.yaml']\n"),
			files: map[string]string{"apps/current": "link:v2", "apps/v2/m.yaml": fmt.Sprintf(cm, "v2")}, req: appRequest{path: "apps/current"}, want: cmJSON("v2")},
		// With the manifest-generate-paths annotation the repo-server
		// sends only the paths' common directory: here apps/, holding
		// web and the shared directory the annotation names.
		{name: "a repository cut to the common root of manifest-generate-paths", plugin: plugin("gen-paths", "  generate:\n    command: [sh, -c, 'cat m.yaml ../shared/extra.yaml']\n"),
			files: map[string]string{"web/m.yaml": fmt.Sprintf(cm, "web"), "shared/extra.yaml": "---\n" + fmt.Sprintf(cm, "extra")},
			req:   appRequest{path: "apps/web", rel: "web"}, want: cmJSON("web") + "\n" + cmJSON("extra")},
		{name: "stdin is empty", plugin: plugin("stdin", "  generate:\n    command: [sh, -c, 'cat; cat out.txt']\n"), files: out(fmt.Sprintf(cm, "a")), want: cmJSON("a")},
		{name: "files a command makes, and the umask", plugin: plugin("umask", "  init:\n    command: [sh, -c, 'mkdir made && echo x > made/f && umask > made/umask']\n  generate:\n    command: [sh, -c]\n    args: ['printf \"apiVersion: v1\\nkind: ConfigMap\\nmetadata: {name: m}\\ndata: {modes: \\\"%s %s %s\\\"}\\n\" \"$(stat -c %a made)\" \"$(stat -c %a made/f)\" \"$(cat made/umask)\"']\n"),
			files: map[string]string{"x": ""}, same: true}, // the sidecars' umask is the test's
		{name: "a link out of the repository", plugin: catOut, files: map[string]string{"out.txt": "link:/etc/passwd"}, want: "error"},
		{name: "a link climbing out of the repository", plugin: catOut, files: map[string]string{"a/out.txt": "link:../../../x", "out.txt": fmt.Sprintf(cm, "a")}, want: "error"},
		{name: "an application path climbing out", plugin: catOut, files: out(fmt.Sprintf(cm, "a")), req: appRequest{path: "../x"}, want: "error"},
		{name: "an application path that is not there", plugin: catOut, files: out(fmt.Sprintf(cm, "a")), req: appRequest{path: "nope"}, want: "error"},
		{name: "a script run from the repository needs sh without preserveFileMode", plugin: plugin("run-script", "  generate:\n    command: [./gen.sh]\n"),
			files: map[string]string{"gen.sh": "#!/bin/sh\ncat out.txt\n", "out.txt": fmt.Sprintf(cm, "a")}, modes: map[string]fs.FileMode{"gen.sh": 0o755}, want: "error", errHas: []string{"./gen.sh"}},
		{name: "a script run from the repository with preserveFileMode", plugin: plugin("run-script-modes", "  preserveFileMode: true\n  generate:\n    command: [./gen.sh]\n"),
			files: map[string]string{"gen.sh": "#!/bin/sh\ncat out.txt\n", "out.txt": fmt.Sprintf(cm, "a")}, modes: map[string]fs.FileMode{"gen.sh": 0o755}, want: cmJSON("a")},
		{name: "init writes into the repository, generate reads it", plugin: plugin("init-writes", "  init:\n    command: [sh, -c, 'cp out.txt rendered.yaml && mkdir -p charts && echo x > charts/dep.tgz']\n  generate:\n    command: [sh, -c, 'test -f charts/dep.tgz && cat rendered.yaml']\n"),
			files: out(fmt.Sprintf(cm, "a")), want: cmJSON("a")},
	}
}

// discoveryCases: MatchRepository, as the repo-server reads it (an error
// is taken as no match).
func discoveryCases() []parityCase {
	files := map[string]string{
		"apps/web/kustomization.yaml":        "resources: []\n",
		"apps/web/charts/a/Chart.yaml":       "name: a\n",
		"apps/web/charts/a/deep/b/Chart.yml": "name: b\n",
		"apps/web/.hidden/secret.enc.yaml":   "x",
		"apps/other/values.yaml":             "x",
	}
	web := appRequest{path: "apps/web"}
	d := func(name, discover string) string {
		return plugin(name, "  generate:\n    command: [cat, out.txt]\n  discover:\n"+discover)
	}
	return []parityCase{
		{name: "CheckPluginConfiguration without discovery", plugin: catOut, files: files, rpc: rpcCheck, want: "discovery false, git credentials false"},
		{name: "CheckPluginConfiguration with discovery and git credentials", plugin: plugin("creds", "  provideGitCreds: true\n  generate:\n    command: [cat, out.txt]\n  discover:\n    find:\n      command: [\"true\"]\n"),
			files: files, rpc: rpcCheck, want: "discovery true, git credentials true"},
		{name: "CheckPluginConfiguration with an empty discover", plugin: plugin("empty-discover", "  generate:\n    command: [cat, out.txt]\n  discover: {}\n"),
			files: files, rpc: rpcCheck, want: "discovery false, git credentials false"},
		{name: "no discovery", plugin: catOut, files: files, req: web, rpc: rpcMatch, want: "discovery not configured"},
		{name: "fileName", plugin: d("fn", "    fileName: kustomization.yaml\n"), files: files, req: web, rpc: rpcMatch, want: "supported"},
		{name: "fileName with ./", plugin: d("fn-dot", "    fileName: ./kustomization.yaml\n"), files: files, req: web, rpc: rpcMatch, want: "supported"},
		{name: "fileName absent", plugin: d("fn-absent", "    fileName: Chart.yaml\n"), files: files, req: web, rpc: rpcMatch, want: "not supported"},
		{name: "fileName glob", plugin: d("fn-glob", "    fileName: \"*.yaml\"\n"), files: files, req: web, rpc: rpcMatch, want: "supported"},
		{name: "fileName glob one level down", plugin: d("fn-sub", "    fileName: \"charts/*/Chart.yaml\"\n"), files: files, req: web, rpc: rpcMatch, want: "supported"},
		{name: "fileName ** is *", plugin: d("fn-star2", "    fileName: \"**/Chart.yaml\"\n"), files: files, req: web, rpc: rpcMatch, want: "not supported"},
		{name: "fileName ** is * one level down", plugin: d("fn-star2b", "    fileName: \"**/*/Chart.yaml\"\n"), files: files, req: web, rpc: rpcMatch, want: "supported"},
		{name: "fileName hidden directory", plugin: d("fn-hidden", "    fileName: \"*/*.enc.yaml\"\n"), files: files, req: web, rpc: rpcMatch, want: "supported"},
		{name: "fileName naming a directory", plugin: d("fn-dir", "    fileName: charts\n"), files: files, req: web, rpc: rpcMatch, want: "supported"},
		{name: "find.glob naming a directory", plugin: d("fg-dir", "    find:\n      glob: \"**/deep\"\n"), files: files, req: web, rpc: rpcMatch, want: "supported"},
		// find.glob follows no link; fileName follows those that stay in
		// the repository.
		{name: "find.glob through a link to a directory", plugin: d("fg-link", "    find:\n      glob: \"**/linked.yaml\"\n"),
			files: merge(files, map[string]string{"apps/web/via": "link:../other", "apps/other/linked.yaml": "x"}), req: web, rpc: rpcMatch, want: "not supported"},
		{name: "fileName through a link to a directory", plugin: d("fn-link", "    fileName: via/linked.yaml\n"),
			files: merge(files, map[string]string{"apps/web/via": "link:../other", "apps/other/linked.yaml": "x"}), req: web, rpc: rpcMatch, want: "supported"},
		{name: "find.glob", plugin: d("fg", "    find:\n      glob: \"**/Chart.yaml\"\n"), files: files, req: web, rpc: rpcMatch, want: "supported"},
		{name: "find.glob deep", plugin: d("fg-deep", "    find:\n      glob: \"**/Chart.yml\"\n"), files: files, req: web, rpc: rpcMatch, want: "supported"},
		{name: "find.glob absent", plugin: d("fg-absent", "    find:\n      glob: \"**/values.yaml\"\n"), files: files, req: web, rpc: rpcMatch, want: "not supported"},
		{name: "find.glob literal absent", plugin: d("fg-literal", "    find:\n      glob: does-not-exist\n"), files: files, req: web, rpc: rpcMatch, want: "not supported"},
		{name: "find.glob literal present", plugin: d("fg-literal2", "    find:\n      glob: kustomization.yaml\n"), files: files, req: web, rpc: rpcMatch, want: "supported"},
		{name: "find.glob in a hidden directory", plugin: d("fg-hidden", "    find:\n      glob: \"**/*.enc.yaml\"\n"), files: files, req: web, rpc: rpcMatch, want: "supported"},
		{name: "find.command prints", plugin: d("fc", "    find:\n      command: [sh, -c, \"find . -name Chart.yaml\"]\n"), files: files, req: web, rpc: rpcMatch, want: "supported"},
		{name: "find.command prints nothing", plugin: d("fc-none", "    find:\n      command: [sh, -c, \"find . -name values.yaml\"]\n"), files: files, req: web, rpc: rpcMatch, want: "not supported"},
		{name: "find.command prints a line break", plugin: d("fc-echo", "    find:\n      command: [echo]\n"), files: files, req: web, rpc: rpcMatch, want: "not supported"},
		{name: "find.command prints a space", plugin: d("fc-space", "    find:\n      command: [printf, \" \"]\n"), files: files, req: web, rpc: rpcMatch, want: "supported"},
		{name: "find.command fails", plugin: d("fc-fail", "    find:\n      command: [sh, -c, \"echo found; exit 1\"]\n"), files: files, req: web, rpc: rpcMatch, want: "not supported"},
		{name: "find.command sees the plugin env", plugin: d("fc-env", "    find:\n      command: [sh, -c, 'printf %s \"$ARGOCD_ENV_FLAVOUR\"']\n"), files: files,
			req: appRequest{path: "apps/web", pluginEnv: [][2]string{{"FLAVOUR", "helm"}}}, rpc: rpcMatch, want: "supported"},
		{name: "find.command without the variable", plugin: d("fc-env", "    find:\n      command: [sh, -c, 'printf %s \"$ARGOCD_ENV_FLAVOUR\"']\n"), files: files,
			req: web, rpc: rpcMatch, want: "not supported"},
		{name: "only the first rule counts", plugin: d("first", "    fileName: values.yaml\n    find:\n      glob: \"**/Chart.yaml\"\n      command: [echo, \"yes\"]\n"), files: files, req: web, rpc: rpcMatch, want: "not supported"},
	}
}

// announceCases: GetParametersAnnouncement.
func announceCases() []parityCase {
	static := "  parameters:\n    static:\n    - name: static-a\n      title: Static A\n      string: one\n    - name: static-list\n      collectionType: array\n      array: [x, \"y\"]\n"
	files := map[string]string{"x": ""}
	p := func(name, params string) string {
		return plugin(name, "  generate:\n    command: [cat, out.txt]\n"+params)
	}
	dyn := func(out string) string {
		return "    dynamic:\n      command: [sh, -c]\n      args: ['printf %s \"$0\"', '" + out + "']\n"
	}
	staticWant := `{"collectionType":"string","itemType":"string","name":"static-a","string":"one","title":"Static A"}
{"array":["x","y"],"collectionType":"array","itemType":"string","name":"static-list"}`
	dynWant := `{"collectionType":"map","itemType":"string","map":{"image.tag":"1.0"},"name":"helm-parameters","title":"Helm Parameters"}`
	return []parityCase{
		{name: "none", plugin: catOut, files: files, rpc: rpcAnnounce, want: "no announcements"},
		{name: "static", plugin: p("static", static), files: files, rpc: rpcAnnounce, want: staticWant},
		{name: "dynamic", plugin: p("dynamic", "  parameters:\n"+dyn(`[{"name": "helm-parameters", "title": "Helm Parameters", "collectionType": "map", "map": {"image.tag": "1.0"}}]`)),
			files: files, rpc: rpcAnnounce, want: dynWant},
		{name: "static and dynamic", plugin: p("both", static+dyn(`[{"name": "helm-parameters", "title": "Helm Parameters", "collectionType": "map", "map": {"image.tag": "1.0"}}]`)),
			files: files, rpc: rpcAnnounce, want: staticWant + "\n" + dynWant, argo: dynWant + "\n" + staticWant,
			why: "strata lists the static announcements first, as the parameterized-plugin proposal shows them; Argo CD puts the dynamic ones first"},
		{name: "a name both static and dynamic", plugin: p("dup", static+dyn(`[{"name": "static-a", "string": "dynamic"}]`)),
			files: files, rpc: rpcAnnounce, want: staticWant,
			argo: `{"collectionType":"string","itemType":"string","name":"static-a","string":"dynamic"}` + "\n" + staticWant,
			why:  "strata announces each name once, the static announcement winning (the proposal); Argo CD sends both"},
		{name: "values of another collection type", plugin: p("other-collection", "  parameters:\n    static:\n    - name: images\n      collectionType: map\n      map: {web: nginx}\n      array: [stale]\n      string: stale\n"),
			files: files, rpc: rpcAnnounce, want: `{"collectionType":"map","itemType":"string","map":{"web":"nginx"},"name":"images"}`,
			argo: `{"array":["stale"],"collectionType":"map","itemType":"string","map":{"web":"nginx"},"name":"images","string":"stale"}`,
			why:  "strata drops the values of the other collection types (the proposal: all but the configured collectionType are ignored), with a warning; Argo CD sends them"},
		{name: "dynamic prints []", plugin: p("dyn-empty", "  parameters:\n"+dyn(`[]`)), files: files, rpc: rpcAnnounce, want: "no announcements"},
		{name: "dynamic prints null", plugin: p("dyn-null", "  parameters:\n"+dyn(`null`)), files: files, rpc: rpcAnnounce, want: "no announcements"},
		{name: "dynamic prints nothing", plugin: p("dyn-nothing", "  parameters:\n"+dyn(``)), files: files, rpc: rpcAnnounce, want: "no announcements", argo: "error",
			why: "strata takes empty output of the dynamic command for no announcements; Argo CD fails to read it as JSON"},
		{name: "dynamic prints unknown fields", plugin: p("dyn-unknown", "  parameters:\n"+dyn(`[{"name": "a", "description": "not a field", "default": 1}]`)),
			files: files, rpc: rpcAnnounce, want: `{"collectionType":"string","itemType":"string","name":"a"}`},
		{name: "dynamic prints fields in another case", plugin: p("dyn-case", "  parameters:\n"+dyn(`[{"Name": "a", "TITLE": "A", "collectiontype": "array", "Array": ["x"]}]`)),
			files: files, rpc: rpcAnnounce, want: `{"array":["x"],"collectionType":"array","itemType":"string","name":"a","title":"A"}`},
		{name: "dynamic prints YAML", plugin: p("dyn-yaml", "  parameters:\n"+dyn("[{name: a, string: b}]")),
			files: files, rpc: rpcAnnounce, want: `{"collectionType":"string","itemType":"string","name":"a","string":"b"}`, argo: "error",
			why: "strata reads the dynamic command's output as JSON or YAML; Argo CD as JSON only"},
		{name: "dynamic prints invalid JSON", plugin: p("dyn-bad", "  parameters:\n"+dyn(`[`)), files: files, rpc: rpcAnnounce, want: "error"},
		{name: "dynamic fails", plugin: p("dyn-fail", "  parameters:\n    dynamic:\n      command: [sh, -c, 'echo nope >&2; exit 3']\n"), files: files, rpc: rpcAnnounce, want: "error", errHas: []string{"failed exit status 3: nope"}},
		{name: "dynamic sees the parameters", plugin: p("dyn-env", "  parameters:\n    dynamic:\n      command: [sh, -c, 'printf \"[{\\\"name\\\": \\\"echo\\\", \\\"string\\\": \\\"%s\\\"}]\" \"$PARAM_SEED\"']\n"),
			files: files, req: appRequest{parameters: []appParameter{{name: "seed", str: str("42")}}}, rpc: rpcAnnounce,
			want: `{"collectionType":"string","itemType":"string","name":"echo","string":"42"}`},
	}
}

// failureCases: commands that fail, and the errors the UI shows.
func failureCases() []parityCase {
	return []parityCase{
		{name: "generate exits non-zero", plugin: plugin("fail", "  generate:\n    command: [sh, -c, 'echo partial; echo \"Error: no chart\" >&2; exit 2']\n"),
			files: map[string]string{"x": ""}, want: "error", errHas: []string{"`sh -c \"echo partial; echo \\\"Error: no chart\\\" >&2; exit 2\"` failed exit status 2: Error: no chart"}},
		{name: "init exits non-zero", plugin: plugin("init-fail", "  init:\n    command: [sh, -c, 'echo init broke >&2; exit 5']\n  generate:\n    command: [cat, out.txt]\n"),
			files: out(fmt.Sprintf(cm, "a")), want: "error", errHas: []string{"failed exit status 5: init broke"}},
		{name: "generate not found", plugin: plugin("not-found", "  generate:\n    command: [no-such-tool-here]\n"),
			files: map[string]string{"x": ""}, want: "error", errHas: []string{`"no-such-tool-here"`}},
		// ARGOCD_GRPC_MAX_SIZE_MB, in the sidecar's environment, bounds
		// the answer: 1.5 MB of manifests are too large for 1 MiB, not 2.
		{name: "an answer larger than ARGOCD_GRPC_MAX_SIZE_MB", plugin: bigOutput, sidecarEnv: []string{"ARGOCD_GRPC_MAX_SIZE_MB=1"},
			files: map[string]string{"x": ""}, want: "error"},
		{name: "an answer within ARGOCD_GRPC_MAX_SIZE_MB", plugin: bigOutput, sidecarEnv: []string{"ARGOCD_GRPC_MAX_SIZE_MB=2"},
			files: map[string]string{"x": ""}, want: `{"apiVersion":"v1","data":{"k":"` + strings.Repeat("x", 1500000) + `"},"kind":"ConfigMap","metadata":{"name":"big"}}`},
		// The request's deadline stops the command (Argo CD's own test
		// TestGenerateManifest_deadline_exceeded).
		{name: "the request's deadline passes", plugin: plugin("slow", "  generate:\n    command: [sleep, \"30\"]\n"),
			files: map[string]string{"x": ""}, timeout: 2 * time.Second, want: "error"},
		{name: "stderr of a command that succeeds is not an error", plugin: plugin("stderr-ok", "  generate:\n    command: [sh, -c, 'echo warning >&2; cat out.txt']\n"),
			files: out(fmt.Sprintf(cm, "a")), want: cmJSON("a")},
	}
}

// treeWant is the printTree plugin's ConfigMap for the repository of
// repoCases: tree lists each entry's type and mode, contents what each file
// (through links too) holds. Both servers give the same, with and without
// preserveFileMode: directories 0755 and files 0644, or their own modes;
// links kept (a dangling one too); .git sent and unpacked.
func treeWant(tree string) string {
	b, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "tree"},
		"data": map[string]any{"tree": tree, "contents": treeContents}})
	if err != nil {
		panic(err)
	}
	return string(b)
}

const treeContents = "./.argocd-source.yaml: plugin: ???\n./.git/HEAD: ref: refs?heads?main?\n./.git/config: ?core???repositoryformatversion ? 0?\n./.git/objects/ab/cdef0123456789abcdef0123456789abcdef01: x?? compressed object\n./.git/refs/heads/main: 0123456789abcdef0123456789abcdef01234567\n./README.md: readme\n./apps/web/dangling: cat: .?apps?web?dangling: No such file o\n./apps/web/link.yaml: apiVersion: v1?kind: ConfigMap?metadata:\n./apps/web/m.yaml: apiVersion: v1?kind: ConfigMap?metadata:\n./apps/web/ro.txt: read only\n./apps/web/run.sh: ???bin?sh?echo hi?\n./apps/web/up: cat: .?apps?web?up: Is a directory?\n./shared/base.yaml: base\n./shared/deep/x/y.txt: deep\n"

const treeDefaultModes = "./.argocd-source.yaml f 644\n./.git d 755\n./.git/HEAD f 644\n./.git/config f 644\n./.git/objects d 755\n./.git/objects/ab d 755\n./.git/objects/ab/cdef0123456789abcdef0123456789abcdef01 f 644\n./.git/refs d 755\n./.git/refs/heads d 755\n./.git/refs/heads/main f 644\n./README.md f 644\n./apps d 755\n./apps/web d 755\n./apps/web/dangling l 777\n./apps/web/empty d 755\n./apps/web/link.yaml l 777\n./apps/web/m.yaml f 644\n./apps/web/ro.txt f 644\n./apps/web/run.sh f 644\n./apps/web/up l 777\n./shared d 755\n./shared/base.yaml f 644\n./shared/deep d 755\n./shared/deep/x d 755\n./shared/deep/x/y.txt f 644\n"

const treePreservedModes = "./.argocd-source.yaml f 644\n./.git d 755\n./.git/HEAD f 644\n./.git/config f 644\n./.git/objects d 755\n./.git/objects/ab d 755\n./.git/objects/ab/cdef0123456789abcdef0123456789abcdef01 f 444\n./.git/refs d 755\n./.git/refs/heads d 755\n./.git/refs/heads/main f 644\n./README.md f 644\n./apps d 755\n./apps/web d 755\n./apps/web/dangling l 777\n./apps/web/empty d 755\n./apps/web/link.yaml l 777\n./apps/web/m.yaml f 644\n./apps/web/ro.txt f 400\n./apps/web/run.sh f 755\n./apps/web/up l 777\n./shared d 755\n./shared/base.yaml f 644\n./shared/deep d 750\n./shared/deep/x d 755\n./shared/deep/x/y.txt f 644\n"

// bigOutput prints a ConfigMap of 1.5 MB.
var bigOutput = plugin("big", `  generate:
    command: [sh, -c]
    args: ['printf "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata:\n  k: "; head -c 1500000 /dev/zero | tr "\\0" x; echo']
`)
