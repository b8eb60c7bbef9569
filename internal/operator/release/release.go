package release

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	chart "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/strata-dev/strata/internal/operator/module"
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
	// Checksum is the checksum of the rendered manifests the revision was
	// made from (Rendered.Checksum): in a cluster, the release's
	// moduleChecksum label, as addon-operator records it.
	Checksum string `json:"checksum"`
	// CRDsChecksum is the checksum of the CRDs applied with the revision
	// (locally; in a cluster CRDs are applied apart from the release).
	CRDsChecksum string `json:"crdsChecksum,omitempty"`
	// ValuesChecksum is the sha256 of the values rendered with, hex.
	ValuesChecksum string `json:"valuesChecksum"`
	// Updated is when the revision was stored.
	Updated time.Time `json:"updated"`
	// Description says what the revision was (or why it failed).
	Description string `json:"description,omitempty"`

	// CRDs and Manifests are the rendered YAML streams.
	CRDs      []byte `json:"-"`
	Manifests []byte `json:"-"`

	// src is what a Helm store installs the revision from: the chart and
	// values it was rendered with (set by Rendered.Release).
	src *source
}

// A source is the module and values a release was rendered from.
type source struct {
	module   *module.Module
	values   map[string]any
	maxBytes int64
}

// chart loads the module's chart afresh (Helm's install changes the chart
// it is given).
func (s *source) chart() (*chart.Chart, error) { return loadChart(s.module, s.maxBytes) }

// A Store keeps releases: Local, the local directory store, or Helm,
// Helm releases on the API server.
type Store interface {
	// Get returns the newest revision of a release, or an error matching
	// ErrNotFound.
	Get(ctx context.Context, name string) (*Release, error)
	// Put stores r as the newest revision of its release, setting
	// r.Revision (and r.Updated when zero). r must come from
	// Rendered.Release: a Helm store installs the chart and values it was
	// rendered from (upgrade --install).
	Put(ctx context.Context, r *Release) error
	// Delete removes a release and its history; deleting a release that
	// does not exist is no error.
	Delete(ctx context.Context, name string) error
	// List returns the names of the stored releases, sorted.
	List(ctx context.Context) ([]string, error)
	// Absent returns the resources of a release's newest revision that
	// went missing ("namespace/Kind/name", sorted; nil when none), or an
	// error matching ErrNotFound when the release itself is gone: the
	// auto-healing monitor's check.
	Absent(ctx context.Context, name string) ([]string, error)
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

// A Result is what Converge did with a module's release.
type Result struct {
	// Upgraded is true when a new revision was stored.
	Upgraded bool
	// Why says why it was (or was not) stored.
	Why string
	// Release is the newest revision: the one stored, or the current one
	// (nil when there was none and nothing was stored).
	Release *Release
	// Rendered is the render converged to: the one given, or a new one
	// when applying the module's CRDs changed the cluster's capabilities.
	Rendered *Rendered
}

// Converge makes a module's release match a render, as the operator's Helm
// step does (addon-operator's release dedup): the module's CRDs applied
// first when the store applies them apart (the Helm store), then a new
// revision stored (upgrade --install) only when NeedsUpgrade says so or,
// failing that, resources of the release are absent. A module without a
// chart (r.NoChart) has its CRDs applied and no release.
func Converge(ctx context.Context, s Store, r *Rendered) (Result, error) {
	if ca, ok := s.(interface {
		ApplyCRDs(ctx context.Context, module string, crds []byte, checksum string) (bool, error)
	}); ok && len(r.CRDs) > 0 {
		applied, err := ca.ApplyCRDs(ctx, r.Name, r.CRDs, r.CRDsChecksum)
		if err != nil {
			return Result{}, err
		}
		if applied && r.again != nil {
			// Templates may test the API versions the CRDs brought.
			if r, err = r.again(ctx); err != nil {
				return Result{}, err
			}
		}
	}
	if r.NoChart {
		return Result{Why: "no chart", Rendered: r}, nil
	}
	cur, err := s.Get(ctx, r.Name)
	if errors.Is(err, ErrNotFound) {
		cur, err = nil, nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("reading release %s: %w", r.Name, err)
	}
	upgrade, why := NeedsUpgrade(cur, r)
	if !upgrade {
		// addon-operator's last check: resources of the release missing.
		absent, err := s.Absent(ctx, r.Name)
		switch {
		case errors.Is(err, ErrNotFound):
			upgrade, why = true, "release is missing"
		case err != nil:
			return Result{}, fmt.Errorf("checking the resources of release %s: %w", r.Name, err)
		case len(absent) > 0:
			upgrade, why = true, fmt.Sprintf("%d resources absent (%s)", len(absent), strings.Join(absent, ", "))
		}
	}
	if !upgrade {
		return Result{Why: why, Release: cur, Rendered: r}, nil
	}
	rel := r.Release(StatusDeployed, "Upgrade complete: "+why)
	if err := s.Put(ctx, rel); err != nil {
		return Result{}, fmt.Errorf("storing release %s: %w", r.Name, err)
	}
	return Result{Upgraded: true, Why: why, Release: rel, Rendered: r}, nil
}

// Orphans returns the releases no module owns (isModule false), which the
// operator purges, except ignore (HELM_IGNORE_RELEASE: a release of the
// operator's own, in its namespace).
func Orphans(releases []string, isModule func(name string) bool, ignore string) []string {
	var out []string
	for _, r := range releases {
		if r != ignore && !isModule(r) {
			out = append(out, r)
		}
	}
	return out
}
