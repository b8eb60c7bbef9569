package release

import (
	"context"
	"errors"
	"time"
)

// Status is a release's state, with Helm's names.
type Status string

// Release statuses.
const (
	StatusDeployed        Status = "deployed"
	StatusFailed          Status = "failed"
	StatusPendingInstall  Status = "pending-install"
	StatusPendingUpgrade  Status = "pending-upgrade"
	StatusUninstalling    Status = "uninstalling"
	StatusSuperseded      Status = "superseded"
	StatusPendingRollback Status = "pending-rollback"
)

// ErrNotFound is returned by Store.Get for a release that does not exist.
var ErrNotFound = errors.New("release not found")

// A Release is one module's release, at its newest revision.
type Release struct {
	// Name is the release name: the module name.
	Name string `json:"name"`
	// Namespace is the operator's namespace.
	Namespace string `json:"namespace"`
	// Revision counts from 1; Store.Put sets it.
	Revision int `json:"revision"`
	// Status is the release's state.
	Status Status `json:"status"`
	// Checksum is the sha256 of the rendered CRDs and manifests, hex.
	Checksum string `json:"checksum"`
	// ValuesChecksum is the sha256 of the values rendered with, hex.
	ValuesChecksum string `json:"valuesChecksum"`
	// Updated is when the revision was stored.
	Updated time.Time `json:"updated"`
	// Description says what the revision was (or why it failed).
	Description string `json:"description,omitempty"`

	// CRDs and Manifests are the rendered YAML streams.
	CRDs      []byte `json:"-"`
	Manifests []byte `json:"-"`
}

// A Store keeps releases: the local directory store, or (part 2) Helm
// releases in a cluster.
type Store interface {
	// Get returns the newest revision of a release, or an error matching
	// ErrNotFound.
	Get(ctx context.Context, name string) (*Release, error)
	// Put stores r as the newest revision of its release, setting
	// r.Revision (and r.Updated when zero).
	Put(ctx context.Context, r *Release) error
	// Delete removes a release and its history; deleting a release that
	// does not exist is no error.
	Delete(ctx context.Context, name string) error
	// List returns the names of the stored releases, sorted.
	List(ctx context.Context) ([]string, error)
}

// NeedsUpgrade tells whether a rendered release must be stored over the
// current one (nil: none), and why: addon-operator's dedup upgrades only
// when the rendered checksum changed or the release is not deployed.
func NeedsUpgrade(cur *Release, r *Rendered) (bool, string) {
	switch {
	case cur == nil:
		return true, "not installed"
	case cur.Status != StatusDeployed:
		return true, "release status is " + string(cur.Status)
	case cur.Checksum != r.Checksum:
		return true, "rendered manifests changed"
	}
	return false, "rendered manifests unchanged"
}
