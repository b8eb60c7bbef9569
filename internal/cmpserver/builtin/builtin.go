// Package builtin is the table of the plugins strata carries inside its
// binary, served and run like a plugin.yaml's command plugin but with no
// plugin.yaml: today the Helm plugin (internal/helmplugin).
//
// It sits above both cmpserver (the plugin interface) and the plugins it
// lists, so that neither needs to import the other.
package builtin

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/strata-dev/strata/internal/cmpserver"
	"github.com/strata-dev/strata/internal/helmplugin"
)

// ErrUnknown is the error New wraps for a name that is not in the table.
var ErrUnknown = errors.New("unknown built-in plugin")

// Options configure a built-in plugin. Zero values are the plugin's
// defaults.
type Options struct {
	// Timeout bounds each render, on top of the request's context; 0 is
	// no bound but the context's.
	Timeout time.Duration
	// Logger receives the plugin's log lines; nil discards them.
	Logger *slog.Logger
	// Helm tunes the Helm plugin; its Timeout and Logger are Options'.
	Helm helmplugin.Options
}

// table maps each built-in plugin's name to its constructor.
var table = map[string]func(Options) cmpserver.Plugin{
	helmplugin.Name: func(o Options) cmpserver.Plugin {
		h := o.Helm
		h.Timeout, h.Logger = o.Timeout, o.Logger
		return helm{helmplugin.New(h)}
	},
}

// Names lists the built-in plugins, sorted.
func Names() []string {
	names := make([]string, 0, len(table))
	for n := range table {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// New returns the built-in plugin called name.
func New(name string, o Options) (cmpserver.Plugin, error) {
	mk, ok := table[name]
	if !ok {
		return nil, fmt.Errorf("%q: %w; the built-in plugins are: %s", name, ErrUnknown, strings.Join(Names(), ", "))
	}
	return mk(o), nil
}

// helm serves the built-in Helm plugin: it needs no plugin.yaml,
// matches directories holding a Chart.yaml, and listens on helm.sock.
type helm struct{ *helmplugin.Plugin }

var (
	_ cmpserver.Plugin        = helm{}
	_ cmpserver.YAMLGenerator = helm{}
)

func (helm) Info() cmpserver.Info {
	return cmpserver.Info{Name: helmplugin.Name, DiscoveryConfigured: true, ReadOnlyRepo: true}
}
