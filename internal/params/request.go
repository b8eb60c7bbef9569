package params

// A Request is one call of a config management plugin: what the repo-server
// sends (or what `strata cmp generate` builds locally), after the
// repository has been unpacked into a private directory.
type Request struct {
	// AppName is the Application's name (ManifestRequestMetadata.appName).
	AppName string
	// RepoRoot is the private directory holding the repository; AppPath is
	// the application's directory inside it (RepoRoot joined with appRelPath).
	RepoRoot, AppPath string
	// TempDir is a private empty directory for the request's temporary
	// files, removed with RepoRoot; "" when the plugin gets none (a
	// plugin that only reads the repository).
	TempDir string
	// Env is the request's environment as KEY=VALUE entries: the standard
	// ARGOCD_APP_* variables, KUBE_VERSION, KUBE_API_VERSIONS and the
	// ARGOCD_ENV_* entries, as Argo CD sends them. Parameter variables
	// (ARGOCD_APP_PARAMETERS, PARAM_*) are not in it; Parameters holds them.
	Env []string
	// Parameters are the Application's plugin parameters.
	Parameters []Parameter
	// ParametersJSON is ARGOCD_APP_PARAMETERS as the repo-server sent it,
	// or "" when it sent none: a plugin's commands get it verbatim, as
	// from Argo CD's sidecar (Parameters holds it decoded).
	ParametersJSON string
	// NoParametersVar: the repo-server sent no ARGOCD_APP_PARAMETERS (an
	// Application without spec.source.plugin, found by discovery), so the
	// commands get none, as from Argo CD's sidecar. Otherwise they get
	// ParametersJSON, or Parameters encoded (null for none).
	NoParametersVar bool
}

// Lookup returns the value of an Env entry.
func (r *Request) Lookup(name string) (string, bool) {
	for i := len(r.Env) - 1; i >= 0; i-- {
		e := r.Env[i]
		if len(e) > len(name) && e[len(name)] == '=' && e[:len(name)] == name {
			return e[len(name)+1:], true
		}
	}
	return "", false
}
