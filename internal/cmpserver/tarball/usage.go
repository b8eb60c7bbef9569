package tarball

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// usageBlock is the unit Usage charges in: a file takes its size rounded
// up to whole blocks, at least one; a directory, link or other entry one.
// An entry costs an inode and a block on most file systems, so a million
// empty files cost 4 GB, as they do a file system's inodes.
const usageBlock = 4096

// Usage is the disk the commands given a Workspace took in it beyond the
// copy of their repository: in its copy and its temporary directory,
// charged in blocks (see Workspace.Usage).
type Usage struct {
	// Bytes is what the workspace holds now less what its copy held when
	// it was handed out, both charged the same way; 0 when it holds less.
	Bytes int64
	// Entries is the number of files, directories and links it holds
	// beyond the copy's.
	Entries int
	// Largest is the largest file when it is larger than every file of
	// the copy (else ""), relative to the workspace: repo/... in the
	// copy, tmp/... in the temporary directory; LargestSize its size.
	Largest     string
	LargestSize int64
}

// charge is what a file of size bytes costs.
func charge(size int64) int64 {
	if size <= usageBlock {
		return usageBlock
	}
	return (size + usageBlock - 1) / usageBlock * usageBlock
}

// baseline is what the copy of t costs, charged as Usage charges, and
// the size of its largest file.
func (t *tree) baseline() (n, largest int64) {
	n = int64(len(t.dirs)+len(t.links)) * usageBlock
	for _, f := range t.files {
		n += charge(f.size)
		largest = max(largest, f.size)
	}
	return n, largest
}

// Usage measures what the commands given w added to it: it walks its copy
// of the repository and its temporary directory, charging each file its
// size (not its blocks: a sparse file counts in full), each other entry a
// block, a file with several links once. It walks by directory
// descriptors (openat), so no depth of directories is out of its reach,
// does not follow links, and makes searchable a directory a command made
// unreadable (the server owns what its commands create). A file removed
// while a process holds it open is not seen: its size is bounded by the
// RLIMIT_FSIZE the commands run with. For a ReadOnly workspace it returns
// zero.
func (w *Workspace) Usage() (Usage, error) {
	if w.dir == "" || w.copyOf == nil {
		return Usage{}, nil
	}
	m := &meter{}
	for _, sub := range []string{"repo", "tmp"} {
		fd, err := unix.Open(filepath.Join(w.dir, sub), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return Usage{}, fmt.Errorf("measuring what the commands wrote: %s: %w", sub, err)
		}
		err = m.walk(fd, []string{sub})
		if err != nil {
			return Usage{}, fmt.Errorf("measuring what the commands wrote: %w", err)
		}
	}
	w.baseOnce.Do(func() { w.base, w.baseLargest = w.copyOf.baseline() })
	u := Usage{Bytes: max(m.total-w.base, 0), Entries: max(m.entries-w.copyOf.count(), 0)}
	if m.largestSize > w.baseLargest {
		u.Largest, u.LargestSize = m.largest, m.largestSize
	}
	return u, nil
}

// maxUsageDepth bounds how deep Usage follows directories (each level
// holds a descriptor open): no plugin needs more, and a command nesting
// deeper is refused.
const maxUsageDepth = 256

// ErrTooDeep is wrapped by Usage's error about directories nested deeper
// than it measures.
var ErrTooDeep = errors.New("directories nested too deep to measure")

// A meter adds up a walk.
type meter struct {
	total       int64
	entries     int
	seen        map[[2]uint64]bool // files with several links, counted
	largest     string
	largestSize int64
}

// walk measures the directory open as fd, at path (its names from the
// workspace), and closes fd.
func (m *meter) walk(fd int, path []string) error {
	dir := os.NewFile(uintptr(fd), strings.Join(path, "/"))
	defer dir.Close()
	entries, err := dir.ReadDir(-1)
	if err != nil {
		return fmt.Errorf("%s: %w", dir.Name(), err)
	}
	for _, e := range entries {
		m.entries++
		name := e.Name()
		switch {
		case e.IsDir():
			m.total += usageBlock
			if len(path) > maxUsageDepth {
				return fmt.Errorf("%w: %s/... is more than %d directories deep", ErrTooDeep, dir.Name()[:min(len(dir.Name()), 200)], maxUsageDepth)
			}
			sub, err := openDirAt(fd, name)
			if errors.Is(err, unix.ENOENT) {
				continue // removed meanwhile
			}
			if err != nil {
				return fmt.Errorf("%s/%s: %w", dir.Name(), name, err)
			}
			if err := m.walk(sub, append(path, name)); err != nil {
				return err
			}
		case e.Type().IsRegular():
			var st unix.Stat_t
			if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				continue // removed meanwhile
			}
			if st.Nlink > 1 {
				key := [2]uint64{uint64(st.Dev), uint64(st.Ino)}
				if m.seen[key] {
					continue
				}
				if m.seen == nil {
					m.seen = map[[2]uint64]bool{}
				}
				m.seen[key] = true
			}
			m.total += charge(st.Size)
			if st.Size > m.largestSize {
				m.largest, m.largestSize = strings.Join(append(path, name), "/"), st.Size
			}
		default:
			m.total += usageBlock
		}
	}
	return nil
}

// openDirAt opens the directory name in the directory fd, making it
// readable and searchable first if a command closed it.
func openDirAt(fd int, name string) (int, error) {
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	sub, err := unix.Openat(fd, name, flags, 0)
	if err == unix.EACCES {
		if cerr := unix.Fchmodat(fd, name, 0o700, 0); cerr == nil {
			sub, err = unix.Openat(fd, name, flags, 0)
		}
	}
	return sub, err
}
