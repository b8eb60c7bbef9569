package kubebind

import (
	"context"
	"log/slog"
	"time"

	"github.com/strata-dev/strata/internal/manifest"
)

// A LocalSource is an ObjectSource over a directory of Kubernetes YAML or
// JSON files (`strata operator run --objects DIR`): every object of every
// *.yaml, *.yml and *.json file under Dir (recursively; hidden files and
// directories skipped; List objects unpacked). After Start it watches the
// directory with fsnotify: a file added, changed or removed becomes
// Added, Modified and Deleted changes of the objects it adds, changes or
// no longer holds. An object is known by apiVersion, kind, namespace and
// name; the same object in two files is an error naming both.
//
// A file that becomes unreadable or invalid while watched is reported to
// OnError and its objects stay as they were, so that a half-saved edit
// deletes nothing.
type LocalSource struct {
	// Dir is the directory of object files.
	Dir string
	// Limits bound each file; zero fields take manifest's defaults.
	Limits manifest.Limits
	// OnError is told of files that could not be read after Start; nil
	// logs them to Logger.
	OnError func(error)
	// Logger logs; nil is slog.Default().
	Logger *slog.Logger
	// Debounce is how long a file must stay unchanged after an edit
	// before it is read again (editors write in several steps); 0 is
	// 100ms.
	Debounce time.Duration

	st *localState
}

var _ ObjectSource = (*LocalSource)(nil)

// Start reads every file under Dir (a bad file is an error naming it and
// its line) and watches Dir until ctx is done.
func (s *LocalSource) Start(ctx context.Context) error {
	return s.start(ctx)
}

// Watch implements ObjectSource. It fails before Start.
func (s *LocalSource) Watch(ctx context.Context, apiVersion, kind string, fn func(Change)) ([]*Object, error) {
	return s.watch(ctx, apiVersion, kind, fn)
}
