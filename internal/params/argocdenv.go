package params

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// AppEnvPrefix starts the variables an Application's plugin env entries
// become: Argo CD passes env entry NAME as ARGOCD_ENV_NAME.
const AppEnvPrefix = "ARGOCD_ENV_"

// AppEnv turns an Application's plugin env entry, NAME=VALUE, into the
// variable Argo CD gives the plugin's commands: ARGOCD_ENV_NAME=VALUE.
func AppEnv(entry string) (string, error) {
	name, value, ok := strings.Cut(entry, "=")
	if !ok || name == "" {
		return "", fmt.Errorf("%q: write NAME=VALUE", entry)
	}
	return AppEnvPrefix + name + "=" + value, nil
}

// SourcePathVar is the variable holding the application's path inside its
// repository (the Application's spec.source.path).
const SourcePathVar = "ARGOCD_APP_SOURCE_PATH"

// BuildEnv reads a request from the environment Argo CD gives a plugin's
// commands (environ: KEY=VALUE entries, as os.Environ returns them), for a
// plugin that runs inside another plugin's command, in place:
//
//   - the application's directory is dir (the command's working directory,
//     usually ".");
//   - the repository root is repoRoot, or when it is empty dir less
//     ARGOCD_APP_SOURCE_PATH (dir itself when that is empty or ".");
//   - the parameters are those of ARGOCD_APP_PARAMETERS;
//   - Env holds the ARGOCD_APP_*, ARGOCD_ENV_*, KUBE_VERSION and
//     KUBE_API_VERSIONS entries, in environ's order, without the parameter
//     variables (ARGOCD_APP_PARAMETERS, PARAM_*).
//
// A dir that is not a directory, a source path leading outside dir or not
// ending it, and parameters that do not parse are errors.
func BuildEnv(dir, repoRoot string, environ []string) (*Request, error) {
	app, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(app); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	getenv := func(name string) string {
		for _, kv := range environ {
			if k, v, _ := strings.Cut(kv, "="); k == name {
				return v // the first entry wins, as in os.Getenv
			}
		}
		return ""
	}
	root := repoRoot
	if root == "" {
		root = app
		if src := filepath.Clean(filepath.FromSlash(getenv(SourcePathVar))); src != "." && src != "" {
			suffix := string(filepath.Separator) + src
			if !filepath.IsLocal(src) || !strings.HasSuffix(app, suffix) {
				return nil, fmt.Errorf("the directory %s does not end in %s %q; run in the application's directory, or give the repository root", app, SourcePathVar, src)
			}
			root = strings.TrimSuffix(app, suffix)
		}
	}
	var ps []Parameter
	if raw := getenv(ParametersVar); raw != "" {
		if ps, err = ParseParameters([]byte(raw), ParametersVar); err != nil {
			return nil, err
		}
	}
	req := &Request{AppName: getenv("ARGOCD_APP_NAME"), RepoRoot: root, AppPath: app, Parameters: ps}
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if name == ParametersVar || strings.HasPrefix(name, paramPrefix) {
			continue
		}
		if strings.HasPrefix(name, "ARGOCD_APP_") || strings.HasPrefix(name, AppEnvPrefix) || name == "KUBE_VERSION" || name == "KUBE_API_VERSIONS" {
			req.Env = append(req.Env, kv)
		}
	}
	return req, nil
}
