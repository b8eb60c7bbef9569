package appset

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/strata-dev/strata/internal/limits"
)

// RepoReader reads the repositories git generators name, as Argo CD's
// repo-server serves them to the ApplicationSet controller.
type RepoReader interface {
	// Directories lists every directory of the repository at revision,
	// relative to its root, parents before children and siblings in
	// lexical order, as the repo-server's walk of a checkout does.
	Directories(ctx context.Context, repoURL, revision string) ([]string, error)
	// Files returns the contents of the files pattern selects, by path.
	Files(ctx context.Context, repoURL, revision, pattern string) (map[string][]byte, error)
}

// ErrRepoNotMapped is the error a RepoReader wraps for a repoURL it has no
// local directory for.
var ErrRepoNotMapped = errors.New("repository not mapped to a local directory")

// RepoLimits bound what reading one repository may cost: a repository is
// untrusted input (a pull request can add anything to it). Zero fields
// take the defaults of DefaultRepoLimits.
type RepoLimits struct {
	// MaxEntries bounds the files and directories walked in one tree.
	MaxEntries int
	// MaxDepth bounds how deep directories nest.
	MaxDepth int
	// MaxFiles bounds the files one pattern may select.
	MaxFiles int
	// MaxFileBytes bounds one file a pattern selects.
	MaxFileBytes int64
	// MaxBytes bounds the bytes of the files read from one repository
	// and revision in all.
	MaxBytes int64
}

// DefaultRepoLimits are the limits zero RepoLimits fields take.
func DefaultRepoLimits() RepoLimits {
	return RepoLimits{MaxEntries: 1 << 20, MaxDepth: 64, MaxFiles: 10000, MaxFileBytes: 4 << 20, MaxBytes: 256 << 20}
}

func (l RepoLimits) withDefaults() RepoLimits { return limits.Or(l, DefaultRepoLimits()) }

// LocalRepos is a RepoReader over local directories, each standing for
// one repoURL (`strata appset render --repo URL=DIR`). A directory that
// is a git repository (a checkout, a linked worktree or a bare
// repository) is read at the generator's revision through go-git: a
// branch, a tag, a commit (full or abbreviated), HEAD or empty for the
// checked-out commit; branches are looked up as local branches, then as
// origin's. Only committed content counts, as in Argo CD. Any other
// directory is read as it is on disk, revision ignored. Nothing is
// fetched and no git process runs.
//
// Reading follows the repo-server: directories exclude the root and, with
// IncludeHiddenDirectories false, every directory whose name starts with
// "." and all below it; files are selected as `git ls-files -- PATTERN`
// selects them (pathspecMatch) or, with NewGlobbing, as doublestar globs.
// Symbolic links are followed only inside the repository. A .git
// directory is never listed.
type LocalRepos struct {
	// Worktree reads git checkouts as plain directories: their files as
	// they are on disk, uncommitted changes included, revision ignored.
	Worktree bool
	// NewGlobbing selects files with doublestar globs, as the controller
	// does with --enable-new-git-file-globbing.
	NewGlobbing bool
	// IncludeHiddenDirectories lists hidden directories too, as the
	// repo-server does with --include-hidden-directories.
	IncludeHiddenDirectories bool
	Limits                   RepoLimits
	// Warn receives notes about the reading (a revision ignored); nil
	// drops them.
	Warn func(msg string)

	mu    sync.Mutex
	dirs  map[string]string // normalized repoURL -> directory
	urls  map[string]string // normalized repoURL -> as given
	snaps map[[2]string]*snapshot
}

var _ RepoReader = (*LocalRepos)(nil)

// NormalizeRepoURL is the form repoURLs are compared in: lower case, with
// no trailing slash or .git, as Argo CD compares repository URLs.
func NormalizeRepoURL(u string) string {
	u = strings.ToLower(strings.TrimSpace(u))
	u = strings.TrimSuffix(u, "/")
	return strings.TrimSuffix(u, ".git")
}

// Map maps repoURL to dir, which must be a directory.
func (r *LocalRepos) Map(repoURL, dir string) error {
	if strings.TrimSpace(repoURL) == "" {
		return errors.New("the repository URL is empty")
	}
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("repository %s: %w", repoURL, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("repository %s: %s is not a directory; give a checkout or a git repository", repoURL, dir)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dirs == nil {
		r.dirs, r.urls = map[string]string{}, map[string]string{}
	}
	key := NormalizeRepoURL(repoURL)
	if prev, dup := r.dirs[key]; dup {
		return fmt.Errorf("repository %s is mapped twice: to %s and to %s", repoURL, prev, dir)
	}
	r.dirs[key], r.urls[key] = dir, repoURL
	return nil
}

// Directories implements RepoReader.
func (r *LocalRepos) Directories(ctx context.Context, repoURL, revision string) ([]string, error) {
	s, err := r.snapshot(ctx, repoURL, revision)
	if err != nil {
		return nil, err
	}
	return append([]string(nil), s.dirs...), nil
}

// Files implements RepoReader.
func (r *LocalRepos) Files(ctx context.Context, repoURL, revision, pattern string) (map[string][]byte, error) {
	s, err := r.snapshot(ctx, repoURL, revision)
	if err != nil {
		return nil, err
	}
	lim := r.Limits.withDefaults()
	out := map[string][]byte{}
	for _, f := range s.files {
		var ok bool
		if r.NewGlobbing {
			if ok, err = doublestarMatch(pattern, f); err != nil {
				return nil, fmt.Errorf("pattern %q: %w", pattern, err)
			}
		} else {
			ok = pathspecMatch(pattern, f)
		}
		if !ok {
			continue
		}
		if len(out) == lim.MaxFiles {
			return nil, fmt.Errorf("%w: pattern %q selects more than %d files of %s; narrow the pattern", ErrTooLarge, pattern, lim.MaxFiles, s.where)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		data, err := s.read(f, lim)
		if err != nil {
			return nil, err
		}
		out[f] = data
	}
	return out, nil
}

// snapshot is one repository at one revision, walked once.
type snapshot struct {
	where string   // for errors: "DIR at revision R (commit C)"
	dirs  []string // in walk order
	files []string // sorted
	open  func(name string, lim RepoLimits) ([]byte, error)

	mu    sync.Mutex
	bytes int64
	cache map[string][]byte
}

func (s *snapshot) read(name string, lim RepoLimits) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if data, ok := s.cache[name]; ok {
		return data, nil
	}
	data, err := s.open(name, lim)
	if err != nil {
		return nil, fmt.Errorf("reading %s of %s: %w", name, s.where, err)
	}
	s.bytes += int64(len(data))
	if s.bytes > lim.MaxBytes {
		return nil, fmt.Errorf("%w: the files read from %s exceed %d bytes in all", ErrTooLarge, s.where, lim.MaxBytes)
	}
	s.cache[name] = data
	return data, nil
}

func (r *LocalRepos) snapshot(ctx context.Context, repoURL, revision string) (*snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	key := NormalizeRepoURL(repoURL)
	r.mu.Lock()
	defer r.mu.Unlock()
	dir, ok := r.dirs[key]
	if !ok {
		known := make([]string, 0, len(r.urls))
		for _, u := range r.urls {
			known = append(known, u)
		}
		sort.Strings(known)
		hint := "none is mapped"
		if len(known) > 0 {
			hint = "mapped: " + strings.Join(known, ", ")
		}
		return nil, fmt.Errorf("%w: %s (%s); map it with --repo %s=DIR, DIR a checkout or a git repository", ErrRepoNotMapped, repoURL, hint, repoURL)
	}
	if r.snaps == nil {
		r.snaps = map[[2]string]*snapshot{}
	}
	skey := [2]string{key, revision}
	if s, ok := r.snaps[skey]; ok {
		return s, nil
	}
	lim := r.Limits.withDefaults()
	var s *snapshot
	var err error
	repo, gerr := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	switch {
	case gerr == nil && !r.Worktree:
		s, err = r.gitSnapshot(ctx, repo, dir, revision, lim)
	case gerr == nil || errors.Is(gerr, git.ErrRepositoryNotExists):
		if gerr != nil && revision != "" && revision != "HEAD" && r.Warn != nil {
			r.Warn(fmt.Sprintf("%s (for %s) is not a git repository: its files are read as they are, revision %q is not checked", dir, repoURL, revision))
		}
		s, err = r.dirSnapshot(ctx, dir, lim)
	default:
		err = fmt.Errorf("opening the git repository %s: %w", dir, gerr)
	}
	if err != nil {
		return nil, fmt.Errorf("repository %s (--repo %s=%s): %w", repoURL, repoURL, dir, err)
	}
	r.snaps[skey] = s
	return s, nil
}

// isHidden reports whether a directory path has a component starting
// with ".", which the repo-server's walk skips.
func isHidden(p string) bool {
	for _, seg := range strings.Split(p, "/") {
		if strings.HasPrefix(seg, ".") {
			return true
		}
	}
	return false
}

// walkOrder sorts paths as a walk visits them: parents first, siblings in
// lexical order of their names.
func walkOrder(paths []string) {
	sort.Slice(paths, func(i, j int) bool {
		a, b := paths[i], paths[j]
		for {
			as, arest, amore := strings.Cut(a, "/")
			bs, brest, bmore := strings.Cut(b, "/")
			if as != bs {
				return as < bs
			}
			if !amore || !bmore {
				return !amore && bmore
			}
			a, b = arest, brest
		}
	})
}

func depthOf(p string) int { return strings.Count(p, "/") + 1 }

func (r *LocalRepos) dirSnapshot(ctx context.Context, dir string, lim RepoLimits) (*snapshot, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	fsys := root.FS()
	s := &snapshot{where: dir, cache: map[string][]byte{}}
	entries := 0
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if entries++; entries > lim.MaxEntries {
			return fmt.Errorf("%w: more than %d files and directories", ErrTooLarge, lim.MaxEntries)
		}
		if depthOf(p) > lim.MaxDepth {
			return fmt.Errorf("%w: %s nests deeper than %d directories", ErrTooLarge, p, lim.MaxDepth)
		}
		if d.Name() == ".git" && !strings.Contains(p, "/") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		switch {
		case d.IsDir():
			if r.IncludeHiddenDirectories || !isHidden(p) {
				s.dirs = append(s.dirs, p)
			}
		case d.Type().IsRegular() || d.Type()&fs.ModeSymlink != 0:
			s.files = append(s.files, p)
		}
		return nil
	})
	if err != nil {
		root.Close()
		return nil, err
	}
	walkOrder(s.dirs)
	sort.Strings(s.files)
	s.open = func(name string, lim RepoLimits) ([]byte, error) {
		f, err := root.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return nil, err
		}
		if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("not a regular file (%s)", st.Mode().Type())
		}
		return readLimited(f, lim.MaxFileBytes)
	}
	return s, nil
}

// readLimited reads r, refusing more than max bytes.
func readLimited(r io.Reader, max int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrTooLarge, max)
	}
	return data, nil
}

// resolveRevision finds the commit revision names, as the repo-server
// resolves a generator's revision: HEAD (or nothing), a branch, a tag, a
// commit; a branch missing locally is looked for among origin's.
func resolveRevision(repo *git.Repository, revision string) (plumbing.Hash, error) {
	rev := strings.TrimSpace(revision)
	if rev == "" {
		rev = "HEAD"
	}
	candidates := []string{rev}
	if !strings.HasPrefix(rev, "refs/") && rev != "HEAD" {
		candidates = []string{"refs/heads/" + rev, "refs/tags/" + rev, "refs/remotes/origin/" + rev, rev}
	}
	for _, c := range candidates {
		if h, err := repo.ResolveRevision(plumbing.Revision(c)); err == nil {
			return *h, nil
		}
	}
	return plumbing.ZeroHash, fmt.Errorf("revision %q is neither a branch (local or origin's), a tag nor a commit of the repository; fetch it, or check the generator's revision", revision)
}

func (r *LocalRepos) gitSnapshot(ctx context.Context, repo *git.Repository, dir, revision string, lim RepoLimits) (*snapshot, error) {
	hash, err := resolveRevision(repo, revision)
	if err != nil {
		return nil, err
	}
	commit, err := repo.CommitObject(hash)
	if err != nil {
		return nil, fmt.Errorf("reading commit %s: %w", hash, err)
	}
	tree, err := commit.Tree()
	if err != nil {
		return nil, fmt.Errorf("reading the tree of commit %s: %w", hash, err)
	}
	s := &snapshot{where: fmt.Sprintf("%s at %q (commit %s)", dir, revision, hash.String()[:12]), cache: map[string][]byte{}}
	entries := map[string]object.TreeEntry{}
	w := object.NewTreeWalker(tree, true, nil)
	defer w.Close()
	for {
		name, e, err := w.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("walking commit %s: %w", hash, err)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if len(entries) >= lim.MaxEntries {
			return nil, fmt.Errorf("%w: commit %s has more than %d files and directories", ErrTooLarge, hash, lim.MaxEntries)
		}
		if depthOf(name) > lim.MaxDepth {
			return nil, fmt.Errorf("%w: %s nests deeper than %d directories", ErrTooLarge, name, lim.MaxDepth)
		}
		entries[name] = e
		switch e.Mode {
		case filemode.Dir, filemode.Submodule:
			// A submodule is a directory in a checkout; its own files are
			// not in this repository.
			if r.IncludeHiddenDirectories || !isHidden(name) {
				s.dirs = append(s.dirs, name)
			}
		case filemode.Regular, filemode.Executable, filemode.Deprecated, filemode.Symlink:
			s.files = append(s.files, name)
		}
	}
	walkOrder(s.dirs)
	sort.Strings(s.files)
	s.open = func(name string, lim RepoLimits) ([]byte, error) {
		for hops := 0; ; hops++ {
			e, ok := entries[name]
			if !ok {
				return nil, fmt.Errorf("not in commit %s", hash)
			}
			if e.Mode == filemode.Dir || e.Mode == filemode.Submodule {
				return nil, errors.New("a directory, not a file")
			}
			blob, err := repo.BlobObject(e.Hash)
			if err != nil {
				return nil, err
			}
			if blob.Size > lim.MaxFileBytes {
				return nil, fmt.Errorf("%w: %d bytes, more than the limit of %d", ErrTooLarge, blob.Size, lim.MaxFileBytes)
			}
			rd, err := blob.Reader()
			if err != nil {
				return nil, err
			}
			data, err := readLimited(rd, lim.MaxFileBytes)
			rd.Close()
			if err != nil || e.Mode != filemode.Symlink {
				return data, err
			}
			if hops == 8 {
				return nil, errors.New("too many levels of symbolic links")
			}
			target := string(data)
			if path.IsAbs(target) {
				return nil, fmt.Errorf("a symbolic link to %s, outside the repository", target)
			}
			next := path.Join(path.Dir(name), target)
			if next == ".." || strings.HasPrefix(next, "../") {
				return nil, fmt.Errorf("a symbolic link to %s, outside the repository", target)
			}
			name = next
		}
	}
	return s, nil
}
