package kubebind

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/manifest"
	"github.com/strata-dev/strata/internal/operator/hook"
)

// maxListDepth bounds Lists inside Lists in an object file.
const maxListDepth = 8

type localState struct {
	mu      sync.Mutex
	files   map[string][]string     // file -> keys of the objects it holds
	objects map[string]*localObject // key -> object
	subs    map[int]*subscriber
	nextSub int
	dirs    map[string]bool // directories watched
	// conflicts are the files with an object that another file holds.
	conflicts map[string][]string // file -> keys it could not have
	watcher   *fsnotify.Watcher
}

type localObject struct {
	obj  *Object
	file string
}

type subscriber struct {
	apiVersion, kind string
	fn               func(Change)
}

func (s *subscriber) wants(o *Object) bool {
	return o.Kind == s.kind && (s.apiVersion == "" || s.apiVersion == o.APIVersion)
}

func objectKey(o *Object) string {
	return o.APIVersion + "\x00" + o.Kind + "\x00" + o.Namespace + "\x00" + o.Name
}

func (s *LocalSource) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.Default()
	}
	return s.Logger
}

func (s *LocalSource) report(err error) {
	if s.OnError != nil {
		s.OnError(err)
		return
	}
	s.logger().Error("reading object file", "error", err)
}

func (s *LocalSource) start(ctx context.Context) error {
	if s.st != nil {
		return errors.New("kubebind: LocalSource started twice")
	}
	dir, err := filepath.Abs(s.Dir)
	if err != nil {
		return err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("objects directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("objects directory %s is not a directory", s.Dir)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watching objects directory %s: %w", s.Dir, err)
	}
	st := &localState{files: map[string][]string{}, objects: map[string]*localObject{}, subs: map[int]*subscriber{}, dirs: map[string]bool{}, conflicts: map[string][]string{}, watcher: w}
	s.Dir = dir
	files, err := s.scan(st, dir)
	if err != nil {
		w.Close()
		return err
	}
	for _, f := range files {
		objs, err := s.readFile(f)
		if err != nil {
			w.Close()
			return err
		}
		for _, o := range objs {
			k := objectKey(o)
			if prev, ok := st.objects[k]; ok {
				w.Close()
				return fmt.Errorf("%s: %s %s is also in %s; keep each object in one file", f, o.Kind, o.ID(), prev.file)
			}
			st.objects[k] = &localObject{obj: o, file: f}
			st.files[f] = append(st.files[f], k)
		}
		if _, ok := st.files[f]; !ok {
			st.files[f] = nil
		}
	}
	s.st = st
	go s.loop(ctx, st)
	return nil
}

// objectFile reports whether a file name is one the source reads.
func objectFile(name string) bool {
	if strings.HasPrefix(name, ".") {
		return false
	}
	switch filepath.Ext(name) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// scan watches dir and its subdirectories and returns the object files
// under it, sorted.
func (s *LocalSource) scan(st *localState, dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p != dir && errors.Is(err, fs.ErrNotExist) {
				return nil // removed while we walked
			}
			return err
		}
		if d.IsDir() {
			if p != dir && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			if !st.dirs[p] {
				if err := st.watcher.Add(p); err != nil {
					return fmt.Errorf("watching %s: %w", p, err)
				}
				st.dirs[p] = true
			}
			return nil
		}
		if objectFile(d.Name()) {
			files = append(files, p)
		}
		return nil
	})
	slices.Sort(files)
	return files, err
}

// readFile parses the objects of one file.
func (s *LocalSource) readFile(path string) ([]*Object, error) {
	lim := s.Limits
	max := lim.MaxBytes
	if max <= 0 {
		max = manifest.DefaultLimits().MaxBytes
	}
	data, err := document.ReadFile(path, max)
	if err != nil {
		return nil, err
	}
	return parseObjects(data, path, lim)
}

// parseObjects parses the objects of a file's text.
func parseObjects(data []byte, path string, lim manifest.Limits) ([]*Object, error) {
	docs, err := manifest.Parse(data, path, lim)
	if err != nil {
		return nil, err
	}
	var out []*Object
	for _, d := range docs {
		if err := collect(&out, d.Value, path, d.Line, fmt.Sprintf("document %d", d.Index), 0); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// collect adds the object v (or the items of a List) to out.
func collect(out *[]*Object, v any, file string, line int, where string, depth int) error {
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("%s:%d: %s is %s, not a Kubernetes object", file, line, where, document.Describe(v))
	}
	if items, isList := manifest.ListItems(m); isList {
		if depth >= maxListDepth {
			return fmt.Errorf("%s:%d: %s: Lists nested deeper than %d", file, line, where, maxListDepth)
		}
		for i, it := range items {
			if err := collect(out, it, file, line, fmt.Sprintf("%s items[%d]", where, i), depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	o := &Object{Value: m}
	o.APIVersion, _ = m["apiVersion"].(string)
	o.Kind, _ = m["kind"].(string)
	meta, _ := m["metadata"].(map[string]any)
	o.Name, _ = meta["name"].(string)
	o.Namespace, _ = meta["namespace"].(string)
	switch {
	case o.APIVersion == "":
		return fmt.Errorf("%s:%d: %s has no apiVersion; write apiVersion: v1 (or the object's group/version)", file, line, where)
	case o.Kind == "":
		return fmt.Errorf("%s:%d: %s has no kind", file, line, where)
	case o.Name == "":
		return fmt.Errorf("%s:%d: %s (%s) has no metadata.name", file, line, where, o.Kind)
	}
	data, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("%s:%d: %s: %w", file, line, where, err)
	}
	o.JSON = data
	*out = append(*out, o)
	return nil
}

func (s *LocalSource) watch(ctx context.Context, apiVersion, kind string, fn func(Change)) ([]*Object, error) {
	st := s.st
	if st == nil {
		return nil, errors.New("kubebind: LocalSource.Watch before Start")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sub := &subscriber{apiVersion: apiVersion, kind: kind, fn: fn}
	st.mu.Lock()
	id := st.nextSub
	st.nextSub++
	st.subs[id] = sub
	var objs []*Object
	for _, lo := range st.objects {
		if sub.wants(lo.obj) {
			objs = append(objs, lo.obj)
		}
	}
	st.mu.Unlock()
	slices.SortFunc(objs, func(a, b *Object) int { return strings.Compare(objectKey(a), objectKey(b)) })
	context.AfterFunc(ctx, func() {
		st.mu.Lock()
		delete(st.subs, id)
		st.mu.Unlock()
	})
	return objs, nil
}

// loop collects file events and, once a file has been quiet for the
// debounce time, reads it again and sends the changes.
func (s *LocalSource) loop(ctx context.Context, st *localState) {
	defer st.watcher.Close()
	debounce := s.Debounce
	if debounce <= 0 {
		debounce = 100 * time.Millisecond
	}
	dirty := map[string]bool{}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-st.watcher.Events:
			if !ok {
				return
			}
			dirty[ev.Name] = true
			timer.Reset(debounce)
		case err, ok := <-st.watcher.Errors:
			if !ok {
				return
			}
			s.report(fmt.Errorf("watching objects directory %s: %w", s.Dir, err))
		case <-timer.C:
			paths := make([]string, 0, len(dirty))
			for p := range dirty {
				paths = append(paths, p)
			}
			clear(dirty)
			slices.Sort(paths)
			s.refresh(ctx, st, paths)
		}
	}
}

// refresh reads the paths that changed and sends the resulting changes.
func (s *LocalSource) refresh(ctx context.Context, st *localState, paths []string) {
	// Which files to look at: the paths themselves, the files under a
	// path that is (or was) a directory.
	files := map[string]bool{}
	for _, p := range paths {
		fi, err := os.Stat(p)
		switch {
		case err == nil && fi.IsDir():
			if strings.HasPrefix(filepath.Base(p), ".") {
				continue
			}
			found, err := s.scan(st, p)
			if err != nil {
				s.report(err)
			}
			for _, f := range found {
				files[f] = true
			}
		case err == nil:
			if objectFile(filepath.Base(p)) && !hiddenUnder(s.Dir, p) {
				files[p] = true
			}
		}
		// Known files at or under the path (it may have been removed).
		st.mu.Lock()
		for f := range st.files {
			if f == p || strings.HasPrefix(f, p+string(filepath.Separator)) {
				files[f] = true
			}
		}
		for d := range st.dirs {
			if d != s.Dir && (d == p || strings.HasPrefix(d, p+string(filepath.Separator))) {
				if _, err := os.Stat(d); err != nil {
					delete(st.dirs, d) // fsnotify drops the watch itself
				}
			}
		}
		st.mu.Unlock()
	}
	sorted := make([]string, 0, len(files))
	for f := range files {
		sorted = append(sorted, f)
	}
	slices.Sort(sorted)
	if ctx.Err() != nil {
		return
	}
	s.applyBatch(st, sorted)
}

// hiddenUnder reports whether p lies in a hidden directory under dir.
func hiddenUnder(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	if err != nil {
		return true
	}
	for _, part := range strings.Split(filepath.ToSlash(rel), "/") {
		if strings.HasPrefix(part, ".") {
			return true
		}
	}
	return false
}

// read is a file read again: its objects, or gone.
type read struct {
	objs []*Object
	gone bool
}

// freedFor returns the files outside the batch that could not have an
// object the batch's files no longer hold.
func (s *LocalSource) freedFor(st *localState, reads map[string]read) []string {
	st.mu.Lock()
	defer st.mu.Unlock()
	freed := map[string]bool{}
	for f, r := range reads {
		kept := map[string]bool{}
		for _, o := range r.objs {
			kept[objectKey(o)] = true
		}
		for _, k := range st.files[f] {
			if !kept[k] {
				freed[k] = true
			}
		}
	}
	var extra []string
	for f, ks := range st.conflicts {
		if _, in := reads[f]; in {
			continue
		}
		if slices.ContainsFunc(ks, func(k string) bool { return freed[k] }) {
			extra = append(extra, f)
		}
	}
	slices.Sort(extra)
	return extra
}

// applyBatch reads the files again, all together, and sends what changed:
// an object moved from one file of the batch to another is not deleted
// and added, only modified if it changed. A file that cannot be read keeps
// its objects. An object that is also in a file outside the batch stays
// that file's; the file is tried again whenever an object is deleted.
func (s *LocalSource) applyBatch(st *localState, files []string) {
	reads := map[string]read{}
	for _, f := range files {
		if _, err := os.Stat(f); errors.Is(err, fs.ErrNotExist) {
			reads[f] = read{gone: true}
			continue
		} else if err != nil {
			s.report(err)
			continue
		}
		objs, err := s.readFile(f)
		if err != nil {
			s.report(fmt.Errorf("%w (its objects are kept as they were)", err))
			continue
		}
		reads[f] = read{objs: objs}
	}
	// Files that could not have an object this batch frees join the
	// batch, so that the object passes from one file to the other
	// without being deleted and added.
	if extra := s.freedFor(st, reads); len(extra) > 0 {
		for _, f := range extra {
			objs, err := s.readFile(f)
			if err != nil {
				s.report(fmt.Errorf("%w (its objects are kept as they were)", err))
				continue
			}
			reads[f] = read{objs: objs}
			files = append(files, f)
		}
		slices.Sort(files)
	}
	type send struct {
		fn func(Change)
		c  Change
	}
	var out []send
	st.mu.Lock()
	subs := make([]*subscriber, 0, len(st.subs))
	ids := make([]int, 0, len(st.subs))
	for id := range st.subs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		subs = append(subs, st.subs[id])
	}
	notify := func(c Change) {
		for _, sub := range subs {
			if sub.wants(c.Object) {
				out = append(out, send{sub.fn, c})
			}
		}
	}
	// The objects of the files read leave; then each file's objects come
	// in, unless another file holds them.
	before := map[string]*localObject{}
	for f := range reads {
		for _, k := range st.files[f] {
			if lo, ok := st.objects[k]; ok && lo.file == f {
				before[k] = lo
				delete(st.objects, k)
			}
		}
		delete(st.files, f)
		delete(st.conflicts, f)
	}
	for _, f := range files {
		r, ok := reads[f]
		if !ok || r.gone {
			continue
		}
		keys := []string{}
		for _, o := range r.objs {
			k := objectKey(o)
			if prev, ok := st.objects[k]; ok && prev.file == hookFile {
				// A file now holds an object a hook created: the file's
				// version replaces it.
				before[k] = prev
				delete(st.objects, k)
				st.files[hookFile] = slices.DeleteFunc(st.files[hookFile], func(x string) bool { return x == k })
			}
			if prev, ok := st.objects[k]; ok {
				if prev.file == f {
					s.report(fmt.Errorf("%s: %s %s is in the file twice; the later one is ignored", f, o.Kind, o.ID()))
				} else {
					s.report(fmt.Errorf("%s: %s %s is also in %s; keep each object in one file (this one is ignored)", f, o.Kind, o.ID(), prev.file))
					st.conflicts[f] = append(st.conflicts[f], k)
				}
				continue
			}
			st.objects[k] = &localObject{obj: o, file: f}
			keys = append(keys, k)
		}
		st.files[f] = keys
	}
	// What changed, in a stable order: deletions first, then by file, as
	// written.
	deleted := map[string]bool{}
	gone := make([]string, 0, len(before))
	for k := range before {
		if _, ok := st.objects[k]; !ok {
			gone = append(gone, k)
		}
	}
	slices.Sort(gone)
	for _, k := range gone {
		deleted[k] = true
		notify(Change{Event: hook.Deleted, Object: before[k].obj})
	}
	for _, f := range files {
		for _, k := range st.files[f] {
			o := st.objects[k].obj
			prev, had := before[k]
			switch {
			case !had:
				notify(Change{Event: hook.Added, Object: o})
			case string(prev.obj.JSON) != string(o.JSON):
				notify(Change{Event: hook.Modified, Object: o})
			}
		}
	}
	var retry []string
	for f, ks := range st.conflicts {
		if slices.ContainsFunc(ks, func(k string) bool { return deleted[k] }) {
			retry = append(retry, f)
		}
	}
	slices.Sort(retry)
	st.mu.Unlock()
	for _, x := range out {
		x.fn(x.c)
	}
	if len(retry) > 0 {
		s.applyBatch(st, retry)
	}
}
