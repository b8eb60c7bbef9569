//go:build linux

package tarball

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// recyclable checks that the file system under dir dates every change
// of a file with its own clock, which reset relies on.
func recyclable(dir string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("recycling workspaces: %w", err)
	}
	switch uint32(st.Type) {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.TMPFS_MAGIC, unix.OVERLAYFS_SUPER_MAGIC:
		return nil
	}
	return fmt.Errorf("recycling workspaces: %s is on a file system of type %#x; workspaces are recycled only on ext4, XFS, Btrfs, tmpfs and overlayfs, whose change times are the kernel's own",
		dir, st.Type)
}

// errChanged reports a workspace its commands changed in a way reset does
// not repair: one that is removed rather than recycled.
var errChanged = errors.New("changed")

func changed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errChanged, fmt.Sprintf(format, args...))
}

// reset makes the closed workspace w what a new copy of t from the cached
// tree in cache would be, or fails. Nothing may run in w any more (see
// Recycling.Quiet), so nothing changes it while reset looks.
//
// An entry whose change time (ctime: set by the kernel on every write,
// truncation, mode change, link, rename or extended attribute change, and
// which no system call sets back) lies before cutoff is unchanged since
// before the workspace was handed out, and costs a stat. Any other file is
// read and compared with the cached one, and rewritten in place if it
// differs (a write, not a new file); a directory is listed and compared
// with the tree. The temporary directory is emptied. Files added, removed,
// renamed or replaced by another type, extra hard links and extended
// attributes make reset fail: the workspace is removed instead.
func reset(w *Workspace, cache string, t *tree, idx *treeIndex, preserve bool, cutoff time.Time) error {
	if err := emptyTemp(w.tmp); err != nil {
		return err
	}
	root, err := unix.Open(w.repo, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: w.repo, Err: err}
	}
	defer unix.Close(root)
	src, err := unix.Open(cache, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: cache, Err: err}
	}
	defer unix.Close(src)
	c := &checker{root: root, src: src, cutoff: cutoff, idx: idx}
	if err := c.dir("", 0o700); err != nil {
		return err
	}
	for _, d := range t.dirs {
		mode := d.mode
		if !preserve {
			mode = 0o755
		}
		if err := c.dir(d.name, uint32(mode.Perm())); err != nil {
			return err
		}
	}
	if err := copyEach(context.Background(), t.files, preserve, c.file); err != nil {
		return err
	}
	for _, l := range t.links {
		if err := c.link(l); err != nil {
			return err
		}
	}
	return nil
}

// emptyTemp removes what the commands left in the temporary directory.
func emptyTemp(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return changed("the temporary directory is no longer a directory")
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return err
		}
	}
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := removeAll(dir + "/" + n); err != nil {
			return err
		}
	}
	return nil
}

type checker struct {
	root, src int
	cutoff    time.Time
	idx       *treeIndex
}

var compareBufs = sync.Pool{New: func() any { b := make([]byte, 2*64<<10); return &b }}

// fresh reports whether st changed since the workspace was handed out,
// or may have.
func (c *checker) fresh(st *unix.Stat_t) bool {
	return !time.Unix(st.Ctim.Sec, st.Ctim.Nsec).Before(c.cutoff)
}

func (c *checker) stat(name string, st *unix.Stat_t) error {
	flags := unix.AT_SYMLINK_NOFOLLOW
	if name == "" {
		flags |= unix.AT_EMPTY_PATH
	}
	for {
		err := unix.Fstatat(c.root, name, st, flags)
		if err != unix.EINTR {
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
				return changed("%s was removed", name)
			}
			return err
		}
	}
}

func (c *checker) dir(name string, mode uint32) error {
	var st unix.Stat_t
	if err := c.stat(name, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return changed("directory %q is no longer a directory", name)
	}
	if !c.fresh(&st) {
		return nil
	}
	at := name
	if at == "" {
		at = "."
	}
	if st.Mode&0o7777 != mode {
		if err := unix.Fchmodat(c.root, at, mode, 0); err != nil {
			return err
		}
	}
	fd, err := unix.Openat(c.root, at, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), at)
	entries, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return err
	}
	if len(entries) != c.idx.kids[name] {
		return changed("directory %q holds %d entries, not %d", name, len(entries), c.idx.kids[name])
	}
	for _, e := range entries {
		p := e.Name()
		if name != "" {
			p = name + "/" + p
		}
		var want kind
		switch e.Type() & fs.ModeType {
		case 0:
			want = kindFile
		case fs.ModeDir:
			want = kindDir
		case fs.ModeSymlink:
			want = kindLink
		}
		if k, ok := c.idx.kind[p]; !ok || k != want {
			return changed("%q was added or replaced", p)
		}
	}
	return nil
}

func (c *checker) file(f node, mode fs.FileMode) error {
	var st unix.Stat_t
	if err := c.stat(f.name, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return changed("%q is no longer a file", f.name)
	}
	if !c.fresh(&st) {
		return nil
	}
	if st.Nlink != 1 {
		return changed("%q has another hard link", f.name)
	}
	perm := uint32(mode.Perm())
	if st.Mode&0o7777 != perm {
		if err := unix.Fchmodat(c.root, f.name, perm, 0); err != nil {
			return err
		}
	}
	out, err := openat(c.root, f.name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(out)
	in, err := openat(c.src, f.name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(in)
	if err := sameXattrs(in, out); err != nil {
		return fmt.Errorf("%q: %w", f.name, err)
	}
	same := st.Size == f.size
	if same {
		if same, err = sameContent(in, out, f.size); err != nil {
			return err
		}
	}
	if same {
		return nil
	}
	// Rewritten in place: the file keeps its inode, nothing is created.
	if err := unix.Fchmodat(c.root, f.name, perm|0o200, 0); err != nil {
		return err
	}
	w, err := openat(c.root, f.name, unix.O_WRONLY|unix.O_TRUNC|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	if f.size > 0 {
		err = copyContent(c.src, w, f.name, f.size)
	}
	if err == nil && perm&0o200 == 0 {
		err = fchmod(w, perm)
	}
	if cerr := unix.Close(w); err == nil {
		err = cerr
	}
	return err
}

func (c *checker) link(l node) error {
	var st unix.Stat_t
	if err := c.stat(l.name, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFLNK {
		return changed("%q is no longer a symbolic link", l.name)
	}
	if !c.fresh(&st) {
		return nil
	}
	buf := make([]byte, len(l.target)+1)
	n, err := unix.Readlinkat(c.root, l.name, buf)
	if err != nil {
		return err
	}
	if n != len(l.target) || string(buf[:n]) != l.target {
		return changed("symbolic link %q was changed", l.name)
	}
	return nil
}

// sameContent compares size bytes of the files a and b.
func sameContent(a, b int, size int64) (bool, error) {
	bp := compareBufs.Get().(*[]byte)
	defer compareBufs.Put(bp)
	half := len(*bp) / 2
	ba, bb := (*bp)[:half], (*bp)[half:]
	for off := int64(0); off < size; {
		n := int(min(int64(half), size-off))
		if err := preadFull(a, ba[:n], off); err != nil {
			return false, err
		}
		if err := preadFull(b, bb[:n], off); err != nil {
			if errors.Is(err, errShort) {
				return false, nil
			}
			return false, err
		}
		if !bytes.Equal(ba[:n], bb[:n]) {
			return false, nil
		}
		off += int64(n)
	}
	// b must end where a does.
	var one [1]byte
	n, err := unix.Pread(b, one[:], size)
	return n == 0 && err == nil, nil
}

var errShort = errors.New("file ended early")

func preadFull(fd int, p []byte, off int64) error {
	for len(p) > 0 {
		n, err := unix.Pread(fd, p, off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return errShort
		}
		p, off = p[n:], off+int64(n)
	}
	return nil
}

// sameXattrs fails unless the workspace's file out has the extended
// attributes of the cached file in (usually none; a security label where
// the system sets one).
func sameXattrs(in, out int) error {
	a, err := xattrs(in)
	if err != nil {
		return err
	}
	b, err := xattrs(out)
	if err != nil {
		return err
	}
	if len(a) != len(b) {
		return changed("extended attributes were added or removed")
	}
	for name, v := range a {
		if w, ok := b[name]; !ok || w != v {
			return changed("extended attribute %s was changed", name)
		}
	}
	return nil
}

func xattrs(fd int) (map[string]string, error) {
	n, err := unix.Flistxattr(fd, nil)
	if err != nil || n == 0 {
		if errors.Is(err, unix.ENOTSUP) {
			err = nil
		}
		return nil, err
	}
	buf := make([]byte, n)
	if n, err = unix.Flistxattr(fd, buf); err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, name := range bytes.Split(bytes.TrimRight(buf[:n], "\x00"), []byte{0}) {
		v := make([]byte, 64<<10)
		k, err := unix.Fgetxattr(fd, string(name), v)
		if err != nil {
			return nil, err
		}
		m[string(name)] = string(v[:k])
	}
	return m, nil
}
