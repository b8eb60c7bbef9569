package paritytest_test

import (
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/strata-dev/strata/internal/cmpserver/pluginpb"
)

// An appRequest is what an Application gives the repo-server for a plugin
// source, and what the repo-server adds.
type appRequest struct {
	path       string            // spec.source.path: the appRelPath
	namespace  string            // the Application's destination namespace
	revision   string            // the resolved commit
	pluginEnv  [][2]string       // spec.source.plugin.env, in order
	parameters []appParameter    // spec.source.plugin.parameters
	extra      map[string]string // entries sent besides (as a later Argo CD might)
	// rel is the appRelPath when the repo-server sends less than the
	// whole repository (manifest-generate-paths: the root is the paths'
	// common directory); "" is path.
	rel string
}

// An appParameter is one of spec.source.plugin.parameters; hasArray and
// hasMap say the field is present, even empty.
type appParameter struct {
	name             string
	str              *string
	array            []string
	hasArray, hasMap bool
	mapping          map[string]string
}

func str(s string) *string { return &s }

// metadata builds the request's first message as Argo CD v2.14's
// repo-server does for GenerateManifest (reposerver/repository: newEnv,
// getPluginEnvs, getPluginParamEnvs; util/cmp: the metadata): the build
// environment, KUBE_VERSION and KUBE_API_VERSIONS, each plugin env entry
// as ARGOCD_ENV_<name> with $VARs of the build environment expanded, then
// ARGOCD_APP_PARAMETERS and the PARAM_* variables. appName is the base
// name of the application's directory.
func (r appRequest) metadata() *pluginpb.ManifestRequestMetadata {
	path := r.path
	if path == "" {
		path = "."
	}
	rev := r.revision
	if rev == "" {
		rev = "0123456789abcdef0123456789abcdef01234567"
	}
	short := func(n int) string { return rev[:min(n, len(rev))] }
	build := [][2]string{
		{"ARGOCD_APP_NAME", "guestbook"},
		{"ARGOCD_APP_NAMESPACE", r.namespace},
		{"ARGOCD_APP_REVISION", rev},
		{"ARGOCD_APP_REVISION_SHORT", short(7)},
		{"ARGOCD_APP_REVISION_SHORT_8", short(8)},
		{"ARGOCD_APP_SOURCE_REPO_URL", "https://git.example.com/team/apps.git"},
		{"ARGOCD_APP_SOURCE_PATH", path},
		{"ARGOCD_APP_SOURCE_TARGET_REVISION", "main"},
		{"KUBE_VERSION", "v1.31.0"},
		{"KUBE_API_VERSIONS", "v1,apps/v1,batch/v1,networking.k8s.io/v1"},
	}
	lookup := map[string]string{}
	for _, kv := range build {
		lookup[kv[0]] = kv[1]
	}
	env := build
	for _, e := range r.pluginEnv {
		v := os.Expand(e[1], func(name string) string {
			if name == "$" {
				return "$"
			}
			return lookup[name]
		})
		env = append(env, [2]string{"ARGOCD_ENV_" + e[0], v})
	}
	if r.parameters != nil || r.pluginEnv != nil {
		env = append(env, paramEnv(r.parameters)...)
	}
	keys := make([]string, 0, len(r.extra))
	for k := range r.extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, [2]string{k, r.extra[k]})
	}
	base := path
	if i := strings.LastIndexByte(strings.TrimSuffix(path, "/"), '/'); i >= 0 {
		base = path[i+1:]
	}
	md := &pluginpb.ManifestRequestMetadata{AppName: base, AppRelPath: path}
	if r.rel != "" {
		md.AppRelPath = r.rel
	}
	for _, kv := range env {
		md.Env = append(md.Env, &pluginpb.EnvEntry{Name: kv[0], Value: kv[1]})
	}
	return md
}

var notParamChar = regexp.MustCompile(`[^A-Z0-9_]`)

func escapeParam(name string) string {
	return notParamChar.ReplaceAllString(strings.ToUpper(name), "_")
}

// paramEnv is the repo-server's encoding of parameters: their JSON (each
// an object of sorted keys, <, > and & escaped; null for none), then for
// each parameter its string, its map's entries and its array's items.
// Map entries come in Go's random map order there; here sorted.
func paramEnv(ps []appParameter) [][2]string {
	var list []map[string]any
	for _, p := range ps {
		m := map[string]any{"name": p.name}
		if p.str != nil {
			m["string"] = *p.str
		}
		if p.hasMap || p.mapping != nil {
			mm := p.mapping
			if mm == nil {
				mm = map[string]string{}
			}
			m["map"] = mm
		}
		if p.hasArray || p.array != nil {
			a := p.array
			if a == nil {
				a = []string{}
			}
			m["array"] = a
		}
		list = append(list, m)
	}
	js, err := json.Marshal(list)
	if err != nil {
		panic(err)
	}
	env := [][2]string{{"ARGOCD_APP_PARAMETERS", string(js)}}
	for _, p := range ps {
		base := "PARAM_" + escapeParam(p.name)
		if p.str != nil {
			env = append(env, [2]string{base, *p.str})
		}
		keys := make([]string, 0, len(p.mapping))
		for k := range p.mapping {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			env = append(env, [2]string{base + "_" + escapeParam(k), p.mapping[k]})
		}
		for i, v := range p.array {
			env = append(env, [2]string{base + "_" + strconv.Itoa(i), v})
		}
	}
	return env
}
