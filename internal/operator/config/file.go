package config

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/values"
)

// Defaults of File.
const (
	DefaultDebounce     = 50 * time.Millisecond
	DefaultPatchRetries = 10
)

// File is the local config store: a YAML file shaped like the ConfigMap's
// data (`--config FILE`). A missing file is an empty config. Set the
// fields before the first call; the methods are safe for concurrent use.
type File struct {
	// Path is the file.
	Path string
	// Name, when set, names the file in errors and sources instead of
	// Path: the user's file when Path is a private copy of it.
	Name string
	// Limits bound the document.
	Limits Limits
	// Debounce is how long Watch waits for a burst of writes to settle;
	// 0 means DefaultDebounce.
	Debounce time.Duration

	mu       sync.Mutex
	last     *Config // the last good config loaded, patched or watched
	lastData []byte
}

var _ Store = (*File)(nil)

// NewFile returns the local config store of a file.
func NewFile(path string) *File { return &File{Path: path} }

func (f *File) name() string {
	if f.Name != "" {
		return f.Name
	}
	return f.Path
}

// read reads and parses the file as it is now.
func (f *File) read() (*Config, []byte, error) {
	data, err := document.ReadFile(f.Path, f.Limits.maxBytes())
	if errors.Is(err, fs.ErrNotExist) {
		return Empty(f.name()), nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading the config store: %w", err)
	}
	c, err := Parse(data, f.name(), f.Limits)
	if err != nil {
		return nil, data, err
	}
	return c, data, nil
}

// Load reads the file.
func (f *File) Load(ctx context.Context) (*Config, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c, data, err := f.read()
	if err != nil {
		return nil, err
	}
	f.last, f.lastData = c, data
	return c, nil
}

// Patch applies a config patch to the file as it is on disk, checks the
// result and replaces the file atomically (a new file renamed over it,
// keeping its mode). If the file changed while the patch was prepared, the
// patch is prepared again on the new content, up to DefaultPatchRetries
// times.
func (f *File) Patch(ctx context.Context, patch *values.JSONPatch, check func(*Config) error) (*Config, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range DefaultPatchRetries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cur, data, err := f.read()
		if err != nil {
			return nil, fmt.Errorf("cannot apply the config patch: %w", err)
		}
		next, err := cur.Apply(patch)
		if err != nil {
			return nil, err
		}
		if check != nil {
			if err := check(next); err != nil {
				return nil, err
			}
		}
		var b bytes.Buffer
		if err := encodeTo(&b, data, next); err != nil {
			return nil, err
		}
		// What we wrote must read back as what we meant.
		back, err := Parse(b.Bytes(), f.name(), f.Limits)
		if err != nil || !Equal(back, next) {
			return nil, fmt.Errorf("updating %s: the rewritten file does not read back as the patched config (%v); the file was left as it was", f.Path, err)
		}
		ok, err := f.replace(data, b.Bytes())
		if err != nil {
			return nil, err
		}
		if !ok {
			continue // edited meanwhile: apply the patch to the edit
		}
		f.last, f.lastData = back, b.Bytes()
		return back, nil
	}
	return nil, fmt.Errorf("updating %s: the file kept changing while the config patch was applied; try again", f.Path)
}

// replace writes data to the file atomically if its content is still
// prev; it returns false, writing nothing, when it is not.
func (f *File) replace(prev, data []byte) (bool, error) {
	// A link is kept: its target is replaced.
	target := f.Path
	if t, err := filepath.EvalSymlinks(f.Path); err == nil {
		target = t
	}
	dir := filepath.Dir(target)
	mode := fs.FileMode(0o644)
	if fi, err := os.Stat(target); err == nil {
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(f.Path)+".tmp-*")
	if err != nil {
		return false, fmt.Errorf("updating %s: %w", f.Path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return false, fmt.Errorf("updating %s: %w", f.Path, err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return false, fmt.Errorf("updating %s: %w", f.Path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return false, fmt.Errorf("updating %s: %w", f.Path, err)
	}
	if err := tmp.Close(); err != nil {
		return false, fmt.Errorf("updating %s: %w", f.Path, err)
	}
	// The last look before the rename: an edit made since we read the
	// file makes us start over rather than overwrite it.
	now, err := document.ReadFile(f.Path, f.Limits.maxBytes())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		if errors.Is(err, document.ErrTooLarge) {
			return false, nil // edited meanwhile into something too large: read it again
		}
		return false, fmt.Errorf("updating %s: %w", f.Path, err)
	}
	if !bytes.Equal(now, prev) {
		return false, nil
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		return false, fmt.Errorf("updating %s: %w", f.Path, err)
	}
	return true, nil
}

// Watch watches the file's directory (so that editors that replace the
// file are seen) and reports changes of the config.
func (f *File) Watch(ctx context.Context) (<-chan Event, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watching %s: %w", f.Path, err)
	}
	dir := filepath.Dir(f.Path)
	if err := w.Add(dir); err != nil {
		w.Close()
		return nil, fmt.Errorf("watching %s: %w", f.Path, err)
	}
	debounce := f.Debounce
	if debounce <= 0 {
		debounce = DefaultDebounce
	}
	out := make(chan Event, 1)
	go func() {
		defer close(out)
		defer w.Close()
		var timer *time.Timer
		var fire <-chan time.Time
		base := filepath.Base(f.Path)
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if filepath.Base(ev.Name) != base {
					continue
				}
				if timer == nil {
					timer = time.NewTimer(debounce)
				} else {
					timer.Reset(debounce)
				}
				fire = timer.C
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				select {
				case out <- Event{Err: fmt.Errorf("watching %s: %w", f.Path, err)}:
				case <-ctx.Done():
					return
				}
			case <-fire:
				fire = nil
				ev, ok := f.reload()
				if !ok {
					continue
				}
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out, nil
}

// reload reads the file after a change and tells whether there is an
// event to report.
func (f *File) reload() (Event, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, data, err := f.read()
	if err != nil {
		if data != nil && bytes.Equal(data, f.lastData) {
			return Event{}, false
		}
		f.lastData = data
		return Event{Err: err}, true
	}
	if f.last != nil && bytes.Equal(data, f.lastData) {
		return Event{}, false
	}
	ch := Diff(f.last, c)
	f.last, f.lastData = c, data
	if ch.Empty() {
		return Event{}, false
	}
	return Event{Config: c, Change: ch}, true
}
