package cmpserver

import (
	"context"

	"github.com/strata-dev/strata/internal/params"
)

// A Plugin generates manifests for an application directory. A plugin
// defined by a plugin.yaml runs commands (CommandPlugin); a built-in plugin
// (the Helm plugin) runs in-process. The server serves either.
type Plugin interface {
	// Info describes the plugin for CheckPluginConfiguration and the socket name.
	Info() Info
	// Match reports whether the plugin's discovery rules match the
	// application. A plugin without discovery rules never matches.
	Match(ctx context.Context, req *params.Request) (bool, error)
	// Announce returns the parameters the plugin accepts for the application.
	Announce(ctx context.Context, req *params.Request) ([]params.Announcement, error)
	// Generate returns the application's manifests, one JSON object each.
	Generate(ctx context.Context, req *params.Request) ([]string, error)
}

// A YAMLGenerator is a Plugin that can also give its manifests as the YAML
// text its tool prints: the built-in Helm plugin gives helm template's
// output. The local CLI (cmp generate) prints that text as its YAML output
// instead of writing every manifest again; the server never uses it.
type YAMLGenerator interface {
	// GenerateYAML checks and renders as Generate does, with the same
	// errors, and returns a YAML stream that, read as Argo CD reads a
	// tool's output (one line break dropped from its end, split by
	// Kubernetes' YAML reader, each document converted by
	// sigs.k8s.io/yaml, empty documents dropped, Lists unpacked), gives
	// the manifests Generate returns.
	GenerateYAML(ctx context.Context, req *params.Request) ([]byte, error)
}

// Info describes a plugin.
type Info struct {
	Name, Version       string
	DiscoveryConfigured bool
	ProvideGitCreds     bool
	// PreserveFileMode keeps the modes of the repository's files when it is
	// unpacked; otherwise files are 0644 and directories 0755.
	PreserveFileMode bool
	// ReadOnlyRepo: the plugin never writes the repository, so the server and local
	// runs may hand it the verified tree itself, read-only, instead of a private copy.
	ReadOnlyRepo bool
}

// SocketName is the file name the repo-server looks for: <name>.sock, or
// <name>-<version>.sock when the plugin has a version.
func (i Info) SocketName() string {
	if i.Version != "" {
		return i.Name + "-" + i.Version + ".sock"
	}
	return i.Name + ".sock"
}
