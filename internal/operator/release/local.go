package release

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"

	"github.com/strata-dev/strata/internal/document"
)

// DefaultMaxHistory is the number of revisions Local keeps per release,
// as Helm's --history-max default.
const DefaultMaxHistory = 10

// Files of a release directory.
const (
	StatusFile    = "release.json"
	ManifestsFile = "manifests.yaml"
	CRDsFile      = "crds.yaml"
	// HistoryPrefix starts the names of the files holding past
	// revisions' manifests: revision-<N>.yaml.
	HistoryPrefix = "revision-"
)

// Local is the local release store: a directory per release under Dir,
// holding release.json (status, revision, checksums, the history of
// revisions), manifests.yaml and crds.yaml (when there are CRDs) of the
// newest revision, and revision-<N>.yaml with the manifests of each of the
// last MaxHistory revisions (hard links: a revision's manifests are written
// once). Every file is replaced atomically; release.json is written
// last, so a crash leaves the previous revision readable.
type Local struct {
	// Dir holds the releases.
	Dir string
	// MaxHistory bounds the revisions kept; 0 means DefaultMaxHistory.
	MaxHistory int
	// MaxBytes bounds the files read back; 0 means DefaultMaxBytes.
	MaxBytes int64

	mu sync.Mutex
}

var _ Store = (*Local)(nil)

// NewLocal returns the local release store of a directory.
func NewLocal(dir string) *Local { return &Local{Dir: dir} }

// status is release.json.
type status struct {
	Release
	History []Revision `json:"history"`
}

// A Revision is one past revision of a release, as History lists it.
type Revision struct {
	Revision       int       `json:"revision"`
	Status         Status    `json:"status"`
	Checksum       string    `json:"checksum"`
	ValuesChecksum string    `json:"valuesChecksum"`
	Updated        time.Time `json:"updated"`
	Description    string    `json:"description,omitempty"`
}

func (l *Local) maxBytes() int64 {
	if l.MaxBytes <= 0 {
		return DefaultMaxBytes
	}
	return l.MaxBytes
}

func (l *Local) dir(name string) (string, error) {
	if err := chartutil.ValidateReleaseName(name); err != nil {
		return "", fmt.Errorf("release name %q: %w", name, err)
	}
	return filepath.Join(l.Dir, name), nil
}

func (l *Local) readStatus(dir string) (*status, error) {
	data, err := document.ReadFile(filepath.Join(dir, StatusFile), l.maxBytes())
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, ErrNotFound
		}
		return nil, err
	}
	var st status
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("%s: %w; delete the release directory to start over", filepath.Join(dir, StatusFile), err)
	}
	return &st, nil
}

// Get returns the newest revision of a release, with its manifests. A
// release whose manifests.yaml is gone is reported missing (ErrNotFound):
// locally, the manifests are the release's resources.
func (l *Local) Get(ctx context.Context, name string) (*Release, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dir, err := l.dir(name)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	st, err := l.readStatus(dir)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, fmt.Errorf("release %s: %w", name, ErrNotFound)
		}
		return nil, err
	}
	r := st.Release
	for _, f := range []struct {
		name string
		dst  *[]byte
	}{{ManifestsFile, &r.Manifests}, {CRDsFile, &r.CRDs}} {
		data, err := document.ReadFile(filepath.Join(dir, f.name), l.maxBytes())
		switch {
		case errors.Is(err, fs.ErrNotExist) && f.name == ManifestsFile:
			// The release's resources went missing: locally, its
			// manifests. It is reinstalled as a missing release is.
			return nil, fmt.Errorf("release %s: %s is missing: %w", name, filepath.Join(dir, ManifestsFile), ErrNotFound)
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return nil, err
		}
		*f.dst = data
	}
	return &r, nil
}

// Absent tells whether a release's resources went missing: locally, its
// manifests.yaml (then the release is reported gone, ErrNotFound).
func (l *Local) Absent(ctx context.Context, name string) ([]string, error) {
	if _, err := l.Get(ctx, name); err != nil {
		return nil, err
	}
	return nil, nil
}

// History returns the revisions kept of a release, oldest first.
func (l *Local) History(ctx context.Context, name string) ([]Revision, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dir, err := l.dir(name)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	st, err := l.readStatus(dir)
	if err != nil {
		return nil, fmt.Errorf("release %s: %w", name, err)
	}
	return st.History, nil
}

// Put stores r as the release's newest revision.
func (l *Local) Put(ctx context.Context, r *Release) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	dir, err := l.dir(r.Name)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("storing release %s: %w", r.Name, err)
	}
	st, err := l.readStatus(dir)
	switch {
	case errors.Is(err, ErrNotFound):
		st = &status{}
	case err != nil:
		return err
	}
	r.Revision = st.Revision + 1
	if r.Updated.IsZero() {
		r.Updated = time.Now().UTC()
	}
	max := l.MaxHistory
	if max <= 0 {
		max = DefaultMaxHistory
	}
	if st.Status == StatusDeployed && len(st.History) > 0 {
		st.History[len(st.History)-1].Status = StatusSuperseded
	}
	st.History = append(st.History, Revision{
		Revision: r.Revision, Status: r.Status, Checksum: r.Checksum, ValuesChecksum: r.ValuesChecksum,
		Updated: r.Updated, Description: r.Description,
	})
	var drop []Revision
	if n := len(st.History) - max; n > 0 {
		drop = slices.Clone(st.History[:n])
		st.History = slices.Delete(st.History, 0, n)
	}
	// The manifests: one file, linked into the history as well.
	if err := writeAtomic(filepath.Join(dir, ManifestsFile), r.Manifests,
		historyFile(dir, r.Revision)); err != nil {
		return err
	}
	// The CRDs: written when they changed (they seldom do).
	crdsSum := checksum(r.CRDs)
	switch {
	case len(r.CRDs) == 0:
		if err := os.Remove(filepath.Join(dir, CRDsFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("storing release %s: %w", r.Name, err)
		}
	case crdsSum != st.CRDsChecksum || st.Revision == 0:
		if err := writeAtomic(filepath.Join(dir, CRDsFile), r.CRDs); err != nil {
			return err
		}
	}
	r.CRDsChecksum = crdsSum
	st.Release = *r
	st.Release.CRDs, st.Release.Manifests, st.Release.src = nil, nil, nil
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(dir, StatusFile), append(data, '\n')); err != nil {
		return err
	}
	for _, d := range drop {
		_ = os.Remove(historyFile(dir, d.Revision))
	}
	return nil
}

// Delete removes a release's directory.
func (l *Local) Delete(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	dir, err := l.dir(name)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	// Make it unreadable as a release first, then remove the rest.
	if err := os.Remove(filepath.Join(dir, StatusFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("deleting release %s: %w", name, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("deleting release %s: %w", name, err)
	}
	return nil
}

// List returns the names of the releases in Dir.
func (l *Local) List(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	entries, err := os.ReadDir(l.Dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing releases: %w", err)
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(l.Dir, e.Name(), StatusFile)); err == nil {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out, nil
}

func historyFile(dir string, rev int) string {
	return filepath.Join(dir, HistoryPrefix+strconv.Itoa(rev)+".yaml")
}

// writeAtomic writes a file through a temporary file renamed over it,
// hard-linking the new file at each of links first.
func writeAtomic(path string, data []byte, links ...string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	for _, l := range links {
		_ = os.Remove(l)
		if err := os.Link(tmp.Name(), l); err != nil {
			return fmt.Errorf("writing %s: %w", l, err)
		}
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
