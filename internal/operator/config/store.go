package config

import (
	"context"

	"github.com/strata-dev/strata/internal/values"
)

// A Store is a config store backend: the local File, or (part 2) the
// ConfigMap.
type Store interface {
	// Load reads the config as it is now.
	Load(ctx context.Context) (*Config, error)
	// Watch reports every change of the config after the last Load or
	// Patch, until ctx is done (then the channel is closed). Changes the
	// store made itself (Patch) are not reported. A config that cannot be
	// read is reported as an Event with Err set; the next good one is
	// diffed against the last good one.
	Watch(ctx context.Context) (<-chan Event, error)
	// Patch applies a hook's config patch to the config as it is in the
	// store now (not as last loaded), checks the result with check (nil:
	// no check; the engine validates against the OpenAPI schemas), and
	// stores it. Nothing is stored when applying or check fails. An edit
	// made to the store while the patch was prepared is never lost: the
	// patch is applied to it. It returns the config stored.
	Patch(ctx context.Context, patch *values.JSONPatch, check func(*Config) error) (*Config, error)
}

// An Event is a change of the config store.
type Event struct {
	// Config is the new config; nil when Err is set.
	Config *Config
	// Change is how it differs from the previous good config.
	Change Change
	// Err is why the store's new content could not be read (a syntax
	// error, a "false" module section); the last good config stays.
	Err error
}
