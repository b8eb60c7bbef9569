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
