package tarball

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// copyFiles copies files from the tree under src into the one under dst,
// whose directories exist, by copyWorkers workers.
//
// It talks to the kernel directly rather than through os.File: per file,
// openat of the source and of the new file relative to the two roots,
// copy_file_range, and the two closes. os.OpenFile adds, per file opened,
// four fcntl calls and an epoll_ctl that fails (regular files cannot be
// polled), and File.ReadFrom another fstat; closeFile an fchmod that only
// matters when the umask takes bits away. See the package documentation
// for what that was worth.
func copyFiles(ctx context.Context, files []node, src, dst string, preserve bool) error {
	if len(files) == 0 {
		return nil
	}
	srcFD, err := unix.Open(src, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: src, Err: err}
	}
	defer unix.Close(srcFD)
	dstFD, err := unix.Open(dst, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: dst, Err: err}
	}
	defer unix.Close(dstFD)
	mask := umask()
	return copyEach(ctx, files, preserve, func(f node, mode fs.FileMode) error {
		if err := copyFileAt(srcFD, dstFD, f.name, f.size, mode, mask); err != nil {
			return fmt.Errorf("copying %s: %w", f.name, err)
		}
		return nil
	})
}

// copyFileAt copies the file name (relative to both directories) of size
// bytes from the tree at srcFD into a new file of the tree at dstFD.
func copyFileAt(srcFD, dstFD int, name string, size int64, mode fs.FileMode, mask uint32) error {
	out, err := openat(dstFD, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(mode.Perm()))
	if err != nil {
		return err
	}
	if size > 0 {
		err = copyContent(srcFD, out, name, size)
	}
	if err == nil && uint32(mode.Perm())&mask != 0 {
		// The umask took bits away.
		err = fchmod(out, uint32(mode.Perm()))
	}
	if cerr := unix.Close(out); err == nil && cerr != nil {
		err = cerr
	}
	return err
}

func copyContent(srcFD, out int, name string, size int64) error {
	in, err := openat(srcFD, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(in)
	for done := int64(0); done < size; {
		n, err := unix.CopyFileRange(in, nil, out, nil, int(min(size-done, 1<<30)), 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("copy_file_range: %w", err)
		}
		if n == 0 {
			return fmt.Errorf("the cached file ended after %d bytes, want %d", done, size)
		}
		done += int64(n)
	}
	return nil
}

func openat(dirFD int, name string, flags int, mode uint32) (int, error) {
	for {
		fd, err := unix.Openat(dirFD, name, flags, mode)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

func fchmod(fd int, mode uint32) error {
	for {
		err := unix.Fchmod(fd, mode)
		if err != unix.EINTR {
			return err
		}
	}
}

// umask returns the process's umask, read from /proc/self/status (the
// umask system call can only read it by changing it); if that fails, it
// assumes the worst, and every file gets an fchmod.
func umask() uint32 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0o777
	}
	_, rest, ok := bytes.Cut(data, []byte("\nUmask:\t"))
	if !ok {
		return 0o777
	}
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	m, err := strconv.ParseUint(string(line), 8, 32)
	if err != nil {
		return 0o777
	}
	return uint32(m)
}

// createFile creates a new file; it never opens an existing file nor
// follows a symbolic link. The file is not registered with the runtime's
// poller (regular files cannot be polled): that saves os.OpenFile's
// fcntl and epoll_ctl calls.
func createFile(name string, mode fs.FileMode) (*os.File, error) {
	fd, err := openat(unix.AT_FDCWD, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(mode.Perm()))
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}
