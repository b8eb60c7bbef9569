package tarball

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
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
// block, a file with several links once. It does not follow links, and
// makes readable a directory a command made unreadable. A file removed
// while a process holds it open is not seen: its size is bounded by the
// RLIMIT_FSIZE the commands run with. For a ReadOnly workspace it returns
// zero.
func (w *Workspace) Usage() (Usage, error) {
	if w.dir == "" || w.copyOf == nil {
		return Usage{}, nil
	}
	var (
		u     Usage
		total int64
		n     int
		seen  map[[2]uint64]bool
	)
	var walk func(dir, rel string) error
	walk = func(dir, rel string) error {
		entries, err := readDir(dir)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && rel != "repo" && rel != "tmp" {
				return nil // removed meanwhile
			}
			return err
		}
		for _, e := range entries {
			n++
			p, r := dir+"/"+e.Name(), rel+"/"+e.Name()
			switch {
			case e.IsDir():
				total += usageBlock
				if err := walk(p, r); err != nil {
					return err
				}
			case e.Type().IsRegular():
				fi, err := e.Info()
				if err != nil {
					continue // removed meanwhile
				}
				if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
					key := [2]uint64{uint64(st.Dev), uint64(st.Ino)}
					if seen[key] {
						continue
					}
					if seen == nil {
						seen = map[[2]uint64]bool{}
					}
					seen[key] = true
				}
				total += charge(fi.Size())
				if fi.Size() > u.LargestSize {
					u.Largest, u.LargestSize = r, fi.Size()
				}
			default:
				total += usageBlock
			}
		}
		return nil
	}
	for _, sub := range []string{"repo", "tmp"} {
		if err := walk(filepath.Join(w.dir, sub), sub); err != nil {
			return u, fmt.Errorf("measuring what the commands wrote: %w", err)
		}
	}
	w.baseOnce.Do(func() { w.base, w.baseLargest = w.copyOf.baseline() })
	if u.LargestSize <= w.baseLargest {
		u.Largest, u.LargestSize = "", 0
	}
	u.Bytes = max(total-w.base, 0)
	u.Entries = max(n-w.copyOf.count(), 0)
	return u, nil
}

// readDir reads dir's entries, unsorted; a directory a command made
// unreadable is made readable first, as the server owns what its commands
// create.
func readDir(dir string) ([]os.DirEntry, error) {
	f, err := os.Open(dir)
	if errors.Is(err, fs.ErrPermission) {
		if cerr := os.Chmod(dir, 0o700); cerr == nil {
			f, err = os.Open(dir)
		}
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}
