package tarball

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"strings"
)

// Limits bound what one repository tarball may hold. A zero field means
// the value from DefaultLimits.
type Limits struct {
	// MaxCompressed bounds the compressed stream, in bytes.
	MaxCompressed int64
	// MaxBytes bounds the content of the extracted files, in bytes; a
	// hard link counts as a copy of its target.
	MaxBytes int64
	// MaxFiles bounds the entries of the repository: files, directories
	// (also those only implied by a path) and links.
	MaxFiles int
	// MaxPathLen bounds the path of an entry and the target of a link,
	// in bytes.
	MaxPathLen int
}

// DefaultLimits returns the limits for a field left zero: 1 GiB
// compressed, 4 GiB extracted, 500,000 files, paths of 4,096 bytes.
func DefaultLimits() Limits {
	return Limits{
		MaxCompressed: 1 << 30,
		MaxBytes:      4 << 30,
		MaxFiles:      500_000,
		MaxPathLen:    4096,
	}
}

func (l Limits) orDefault() Limits {
	d := DefaultLimits()
	if l.MaxCompressed <= 0 {
		l.MaxCompressed = d.MaxCompressed
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = d.MaxBytes
	}
	if l.MaxFiles <= 0 {
		l.MaxFiles = d.MaxFiles
	}
	if l.MaxPathLen <= 0 {
		l.MaxPathLen = d.MaxPathLen
	}
	return l
}

// Options control how a repository is extracted.
type Options struct {
	Limits Limits
	// PreserveFileMode keeps the permission bits written in the archive,
	// as plugin.yaml's spec.preserveFileMode asks, except that setuid,
	// setgid and sticky bits are dropped, files stay readable by their
	// owner, and directories stay readable, writable and searchable by
	// their owner. Otherwise files get 0644 and directories 0755, as in
	// Argo CD.
	PreserveFileMode bool
	// ReadOnly, for Store.Receive: the caller never writes the
	// repository, so the Workspace may be the verified tree in the cache
	// itself instead of a private copy (see Workspace). PreserveFileMode
	// then does not apply: the tree has the archive's permission bits,
	// made safe as above, less the write bits. Extract ignores it.
	ReadOnly bool
}

func fileMode(m int64, preserve bool) fs.FileMode {
	if !preserve {
		return 0o644
	}
	return fs.FileMode(m)&0o777 | 0o400
}

func dirMode(m int64, preserve bool) fs.FileMode {
	if !preserve {
		return 0o755
	}
	return fs.FileMode(m)&0o777 | 0o700
}

// maxNameLen is the longest path element Linux file systems take.
const maxNameLen = 255

// maxLinkHops bounds the symbolic links followed while checking where one
// points, as the kernel does (ELOOP).
const maxLinkHops = 40

// Extract extracts the gzip-compressed tar read from r into dir, which it
// creates with mode 0700; dir's parent must exist and dir must not.
//
// Every entry must stay inside dir: absolute paths, ".." elements, paths
// through a symbolic link, symbolic links that resolve outside dir (also
// by way of other links in the archive) and hard links to anything but an
// earlier regular file are rejected with an error matching ErrUnsafePath;
// devices, FIFOs and other special entries with one matching ErrEntryType;
// and a stream or repository larger than opts.Limits with one matching
// ErrLimit. Entries named twice are rejected, except directories. A hard
// link becomes a copy of its target. An error leaves nothing behind: dir
// is removed.
//
// Extract checks no checksum; Store.Receive does.
func Extract(ctx context.Context, r io.Reader, dir string, opts Options) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("creating the repository directory: %w", err)
	}
	if _, err := extract(ctx, r, dir, opts.PreserveFileMode, false, opts.Limits.orDefault(), nil); err != nil {
		_ = removeAll(dir)
		return err
	}
	return nil
}

// A tree lists what extract wrote, so that copyTree can copy it without
// reading a directory.
type tree struct {
	dirs    []node // parents before their children
	files   []node
	links   []node
	bytes   int64 // sum of the files' sizes
	longest int   // the longest path or link target

	idx *treeIndex // built for recycling; guarded by the Store's mutex
}

type node struct {
	name   string      // slash-separated path relative to the root
	mode   fs.FileMode // permission bits
	size   int64       // of a file
	target string      // of a symbolic link
}

func (t *tree) count() int { return len(t.dirs) + len(t.files) + len(t.links) }

type kind uint8

const (
	kindDir kind = iota + 1
	kindFile
	kindLink
)

func (k kind) String() string {
	switch k {
	case kindDir:
		return "directory"
	case kindFile:
		return "file"
	default:
		return "symlink"
	}
}

// ref locates a path of the tree in the slice of its kind.
type ref struct {
	kind kind
	i    int
}

// extract extracts the archive read from r into dir, which must exist and
// be empty. On error it may leave a partial tree in dir.
//
// With sealed, what extract writes has no write permission: files and
// directories get the modes of the tree less the write bits (the tree
// keeps the modes a copy gets). The Store seals what it caches.
//
// disk, when not nil, takes the bytes of content as they are written.
func extract(ctx context.Context, r io.Reader, dir string, preserve, sealed bool, lim Limits, disk *reservation) (*tree, error) {
	src := &source{ctx: ctx, r: r, max: lim.MaxCompressed}
	x := &extractor{
		disk:     disk,
		src:      src,
		root:     dir,
		preserve: preserve,
		sealed:   sealed,
		lim:      lim,
		seen:     map[string]ref{"": {kind: kindDir, i: -1}},
		buf:      make([]byte, 256<<10),
		umask:    umask(),
	}
	gz, err := gzip.NewReader(bufio.NewReaderSize(src, 64<<10))
	if err != nil {
		return nil, x.readErr(err)
	}
	x.tarSrc = &expansion{r: gz, max: maxExpansion(lim)}
	tr := tar.NewReader(x.tarSrc)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, x.readErr(err)
		}
		if err := x.entry(hdr, tr); err != nil {
			return nil, err
		}
	}
	if err := x.finish(ctx); err != nil {
		return nil, err
	}
	return &x.t, nil
}

// source is the compressed stream as extract reads it. It ends at ctx's
// end and past Limits.MaxCompressed, and keeps its error so that extract
// can tell a failing stream from a malformed archive.
type source struct {
	ctx context.Context
	r   io.Reader
	n   int64
	max int64
	err error
}

func (s *source) Read(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if err := s.ctx.Err(); err != nil {
		s.err = err
		return 0, err
	}
	if room := s.max - s.n; int64(len(p)) > room {
		p = p[:room+1]
	}
	n, err := s.r.Read(p)
	s.n += int64(n)
	if s.n > s.max {
		s.err = fmt.Errorf("%w: the repository tarball is more than %d bytes compressed (cmp serve --max-repo-compressed-bytes)%s",
			ErrLimit, s.max, limitHint)
		return n, s.err
	}
	if err != nil && err != io.EOF {
		s.err = err
	}
	return n, err
}

// expansion is the tar stream as the gzip reader expands it, bounded:
// MaxBytes of content, and for each of MaxFiles entries its headers
// (paths and link targets up to MaxPathLen) and padding. A header or
// padding bomb ends there.
type expansion struct {
	r   io.Reader
	n   int64
	max int64
	err error
}

func maxExpansion(lim Limits) int64 {
	perEntry := 4*512 + 2*int64(lim.MaxPathLen) + 512
	if lim.MaxFiles > 0 && perEntry > (math.MaxInt64-lim.MaxBytes-64<<10)/int64(lim.MaxFiles) {
		return math.MaxInt64
	}
	return lim.MaxBytes + int64(lim.MaxFiles)*perEntry + 64<<10
}

func (e *expansion) Read(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	if room := e.max - e.n; int64(len(p)) > room {
		p = p[:room+1]
	}
	n, err := e.r.Read(p)
	e.n += int64(n)
	if e.n > e.max {
		e.err = fmt.Errorf("%w: the repository tarball expands to more than %d bytes "+
			"(cmp serve --max-repo-bytes of content, and tar headers for --max-repo-files entries)%s", ErrLimit, e.max, limitHint)
		return n, e.err
	}
	return n, err
}

type extractor struct {
	disk     *reservation
	src      *source
	tarSrc   *expansion
	root     string
	preserve bool
	sealed   bool // see extract
	lim      Limits
	seen     map[string]ref // every path of the tree; "" is the root
	t        tree
	buf      []byte
	fw       fileWriter
	lastDir  string // the parent directory last made sure of
	umask    uint32 // the process's, which file modes pass through
}

// readErr reports an error of the gzip or tar reader: the stream's own
// error if it failed, else a malformed archive.
func (x *extractor) readErr(err error) error {
	if x.src.err != nil {
		return x.src.err
	}
	if x.tarSrc != nil && x.tarSrc.err != nil {
		return x.tarSrc.err
	}
	return fmt.Errorf("the repository tarball is %w: %w", ErrFormat, err)
}

func (x *extractor) path(name string) string { return x.root + "/" + name }

func entryErr(name string, rule error, format string, args ...any) error {
	return &EntryError{Name: name, Reason: fmt.Sprintf(format, args...), Err: rule}
}

func (x *extractor) entry(hdr *tar.Header, tr *tar.Reader) error {
	name, reason := cleanPath(hdr.Name)
	if reason != "" {
		return entryErr(hdr.Name, ErrUnsafePath, "%s", reason)
	}
	if name == "" {
		if hdr.Typeflag == tar.TypeDir {
			return nil // the root
		}
		return entryErr(hdr.Name, ErrUnsafePath, "names the repository root but is not a directory")
	}
	if len(name) > x.lim.MaxPathLen {
		return entryErr(hdr.Name, ErrLimit, "path is longer than %d bytes (cmp serve --max-repo-path-length)", x.lim.MaxPathLen)
	}
	if longestElem(name) > maxNameLen {
		return entryErr(hdr.Name, ErrLimit, "path has an element longer than %d bytes", maxNameLen)
	}
	x.t.longest = max(x.t.longest, len(name))
	switch hdr.Typeflag {
	case tar.TypeDir:
		return x.dir(hdr, name)
	case tar.TypeReg:
		return x.file(hdr, name, tr)
	case tar.TypeLink:
		return x.hardlink(hdr, name)
	case tar.TypeSymlink:
		return x.symlink(hdr, name)
	case tar.TypeChar:
		return entryErr(hdr.Name, ErrEntryType, "is a character device; a repository may hold only files, directories and links")
	case tar.TypeBlock:
		return entryErr(hdr.Name, ErrEntryType, "is a block device; a repository may hold only files, directories and links")
	case tar.TypeFifo:
		return entryErr(hdr.Name, ErrEntryType, "is a FIFO; a repository may hold only files, directories and links")
	default:
		return entryErr(hdr.Name, ErrEntryType, "has type %q; a repository may hold only files, directories and links", hdr.Typeflag)
	}
}

// cleanPath turns an archive path into a clean slash-separated path
// relative to the root ("" for the root itself), or says what is wrong
// with it.
func cleanPath(p string) (clean, reason string) {
	switch {
	case p == "":
		return "", "path is empty"
	case strings.IndexByte(p, 0) >= 0:
		return "", "path contains a NUL byte"
	case p[0] == '/':
		return "", "path is absolute; entries must be relative to the repository root"
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", "path escapes the repository"
	}
	if p == ".." || strings.HasPrefix(p, "../") || strings.HasSuffix(p, "/..") || strings.Contains(p, "/../") {
		return "", `path contains a ".." element`
	}
	if c == "." {
		return "", ""
	}
	return c, ""
}

func longestElem(p string) int {
	longest := 0
	for p != "" {
		i := strings.IndexByte(p, '/')
		if i < 0 {
			i = len(p)
		}
		longest = max(longest, i)
		p = p[min(i+1, len(p)):]
	}
	return longest
}

// add makes sure name is new and its parent directories exist (creating
// those the archive only implies), and counts it against MaxFiles.
func (x *extractor) add(raw, name string) error {
	if r, ok := x.seen[name]; ok {
		return entryErr(raw, ErrUnsafePath, "%s was already extracted by an earlier entry", r.kind)
	}
	if err := x.parents(raw, name); err != nil {
		return err
	}
	return x.count(raw)
}

func (x *extractor) count(raw string) error {
	if x.t.count() >= x.lim.MaxFiles {
		return entryErr(raw, ErrLimit, "the repository has more than %d files (cmp serve --max-repo-files, counting directories and links)%s",
			x.lim.MaxFiles, limitHint)
	}
	return nil
}

func (x *extractor) parents(raw, name string) error {
	dir := path.Dir(name)
	if dir == "." || dir == x.lastDir {
		return nil
	}
	for i := 0; i <= len(dir); i++ {
		if i < len(dir) && dir[i] != '/' {
			continue
		}
		p := dir[:i]
		r, ok := x.seen[p]
		switch {
		case !ok:
			if err := x.count(raw); err != nil {
				return err
			}
			if err := x.mkdir(p, dirMode(0o755, false)); err != nil {
				return err
			}
		case r.kind == kindLink:
			return entryErr(raw, ErrUnsafePath, "path passes through symlink %q", p)
		case r.kind == kindFile:
			return entryErr(raw, ErrUnsafePath, "path passes through file %q", p)
		}
	}
	x.lastDir = dir
	return nil
}

func (x *extractor) mkdir(name string, mode fs.FileMode) error {
	// Owner-only until finish sets the final mode.
	if err := os.Mkdir(x.path(name), 0o700); err != nil {
		return fmt.Errorf("extracting the repository: %w", err)
	}
	x.seen[name] = ref{kind: kindDir, i: len(x.t.dirs)}
	x.t.dirs = append(x.t.dirs, node{name: name, mode: mode})
	return nil
}

func (x *extractor) dir(hdr *tar.Header, name string) error {
	mode := dirMode(hdr.Mode, x.preserve)
	if r, ok := x.seen[name]; ok && r.kind == kindDir {
		x.t.dirs[r.i].mode = mode
		return nil
	}
	if err := x.add(hdr.Name, name); err != nil {
		return err
	}
	return x.mkdir(name, mode)
}

// addBytes counts n more bytes of content against MaxBytes.
func (x *extractor) addBytes(raw string, n int64) error {
	if n > x.lim.MaxBytes-x.t.bytes {
		return entryErr(raw, ErrLimit, "takes the repository past %d bytes of content (cmp serve --max-repo-bytes)%s",
			x.lim.MaxBytes, limitHint)
	}
	if err := x.disk.take(n); err != nil {
		return &EntryError{Name: raw, Reason: err.Error(), Err: ErrLimit}
	}
	x.t.bytes += n
	return nil
}

func (x *extractor) file(hdr *tar.Header, name string, tr *tar.Reader) error {
	if err := x.add(hdr.Name, name); err != nil {
		return err
	}
	if err := x.addBytes(hdr.Name, hdr.Size); err != nil {
		return err
	}
	mode := fileMode(hdr.Mode, x.preserve)
	x.seen[name] = ref{kind: kindFile, i: len(x.t.files)}
	x.t.files = append(x.t.files, node{name: name, mode: mode, size: hdr.Size})
	mode = x.diskMode(mode)
	f, err := createFile(x.path(name), mode)
	if err != nil {
		return fmt.Errorf("extracting %q: %w", hdr.Name, err)
	}
	w := &x.fw
	*w = fileWriter{f: f}
	if _, err := io.CopyBuffer(w, tr, x.buf); err != nil {
		f.Close()
		if w.err != nil {
			return fmt.Errorf("extracting %q: %w", hdr.Name, err)
		}
		return x.readErr(err)
	}
	return closeFile(f, mode, x.umask)
}

// fileWriter writes to a file and keeps its error. It hides
// File.ReadFrom, which cannot beat extract's buffer when reading from a
// tar reader and would allocate its own.
type fileWriter struct {
	f   *os.File
	err error
}

func (w *fileWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil {
		w.err = err
	}
	return n, err
}

func (x *extractor) hardlink(hdr *tar.Header, name string) error {
	target, reason := cleanPath(hdr.Linkname)
	if reason != "" {
		return entryErr(hdr.Name, ErrUnsafePath, "hard link to %q: %s", hdr.Linkname, reason)
	}
	r, ok := x.seen[target]
	if !ok || r.kind != kindFile {
		return entryErr(hdr.Name, ErrUnsafePath, "is a hard link to %q, which is not an earlier regular file of the archive", hdr.Linkname)
	}
	if err := x.add(hdr.Name, name); err != nil {
		return err
	}
	src := x.t.files[r.i]
	if err := x.addBytes(hdr.Name, src.size); err != nil {
		return err
	}
	if err := copyFile(x.path(target), x.path(name), src.size, x.diskMode(src.mode)); err != nil {
		return fmt.Errorf("extracting %q: %w", hdr.Name, err)
	}
	x.seen[name] = ref{kind: kindFile, i: len(x.t.files)}
	x.t.files = append(x.t.files, node{name: name, mode: src.mode, size: src.size})
	return nil
}

func (x *extractor) symlink(hdr *tar.Header, name string) error {
	target := hdr.Linkname
	switch {
	case target == "":
		return entryErr(hdr.Name, ErrUnsafePath, "is a symlink with an empty target")
	case len(target) > x.lim.MaxPathLen:
		return entryErr(hdr.Name, ErrLimit, "is a symlink whose target is longer than %d bytes (cmp serve --max-repo-path-length)", x.lim.MaxPathLen)
	case strings.IndexByte(target, 0) >= 0:
		return entryErr(hdr.Name, ErrUnsafePath, "is a symlink whose target contains a NUL byte")
	case target[0] == '/':
		return entryErr(hdr.Name, ErrUnsafePath, "is a symlink to %q outside the repository", target)
	}
	if err := x.add(hdr.Name, name); err != nil {
		return err
	}
	x.t.longest = max(x.t.longest, len(target))
	// Created by finish, once every link is known: whether one escapes
	// can depend on links that come after it.
	x.seen[name] = ref{kind: kindLink, i: len(x.t.links)}
	x.t.links = append(x.t.links, node{name: name, mode: 0o777, target: target})
	return nil
}

// finish checks and creates the symbolic links, then gives directories
// their final modes.
func (x *extractor) finish(ctx context.Context) error {
	if len(x.t.links) > 0 {
		r := newResolver(x)
		for i, l := range x.t.links {
			if err := ctx.Err(); err != nil {
				return err
			}
			if reason := r.check(i); reason != "" {
				return entryErr(l.name, ErrUnsafePath, "%s", reason)
			}
		}
	}
	for _, l := range x.t.links {
		if err := os.Symlink(l.target, x.path(l.name)); err != nil {
			return fmt.Errorf("extracting the repository: %w", err)
		}
	}
	for i := len(x.t.dirs) - 1; i >= 0; i-- {
		d := x.t.dirs[i]
		if err := os.Chmod(x.path(d.name), x.diskMode(d.mode)); err != nil {
			return fmt.Errorf("extracting the repository: %w", err)
		}
	}
	return nil
}

// diskMode is the mode a file or directory of the tree gets on disk.
func (x *extractor) diskMode(m fs.FileMode) fs.FileMode {
	if x.sealed {
		return m &^ 0o222
	}
	return m
}

// closeFile gives f its mode, if the umask (mask) took bits away, and
// closes it.
func closeFile(f *os.File, mode fs.FileMode, mask uint32) error {
	var err error
	if uint32(mode.Perm())&mask != 0 {
		err = f.Chmod(mode)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// copyFile copies size bytes from src into a new file dst; between files
// of one file system the kernel copies (copy_file_range).
func copyFile(src, dst string, size int64, mode fs.FileMode) error {
	out, err := createFile(dst, mode)
	if err != nil {
		return err
	}
	if size > 0 {
		in, err := os.Open(src)
		if err != nil {
			out.Close()
			return err
		}
		n, err := out.ReadFrom(&io.LimitedReader{R: in, N: size})
		in.Close()
		if err == nil && n != size {
			err = fmt.Errorf("copying %s: got %d bytes, want %d", src, n, size)
		}
		if err != nil {
			out.Close()
			return err
		}
	}
	return closeFile(out, mode, 0o777)
}
