package hookexec

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// A Workspace is a private temporary directory (mode 0700) for the files a
// hook exchanges with its caller: inputs such as VALUES_PATH and outputs
// such as VALUES_JSON_PATCH_PATH. Always Close it:
//
//	ws, err := hookexec.NewWorkspace("")
//	if err != nil { ... }
//	defer ws.Close()
//	err = ws.WriteFile("values.json", values)
//	cmd.Env = append(env,
//		"VALUES_PATH="+ws.Path("values.json"),
//		"VALUES_JSON_PATCH_PATH="+ws.Path("values-patch.json"))
//	res, err := cmd.Run(ctx)
//	patch, err := ws.ReadBounded("values-patch.json", 1<<20)
//
// File names are single path elements chosen by the program, not by users.
// The methods are safe for concurrent use.
type Workspace struct {
	dir string
}

// NewWorkspace creates a workspace in parent, or in os.TempDir() when parent
// is "".
func NewWorkspace(parent string) (*Workspace, error) {
	dir, err := os.MkdirTemp(parent, "hookexec-")
	if err != nil {
		return nil, fmt.Errorf("creating hook workspace: %w", err)
	}
	// MkdirTemp asks for 0700; the umask can only take bits away.
	return &Workspace{dir: dir}, nil
}

// Dir returns the workspace's directory.
func (w *Workspace) Dir() string { return w.dir }

// Path returns the path of the file name in the workspace, for the
// command's environment. It panics if name is not a single path element:
// names are constants of the program, and a bad one is a bug.
func (w *Workspace) Path(name string) string {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		panic(fmt.Sprintf("hookexec: workspace file name %q is not a single path element", name))
	}
	return filepath.Join(w.dir, name)
}

// WriteFile writes an input file with mode 0600, replacing any file of that
// name but never writing through a symbolic link.
func (w *Workspace) WriteFile(name string, data []byte) error {
	p := w.Path(name)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|openOutputFlags, 0o600)
	if err != nil {
		return fmt.Errorf("writing hook input file: %w", err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing hook input file: %w", err)
	}
	return nil
}

// ReadBounded reads a file the hook wrote. A file larger than max bytes is
// an error matching ErrOutputTooLarge; a missing file, one matching
// fs.ErrNotExist (hooks often write no output at all). Only a regular file
// is read: a symbolic link, FIFO or device the hook left there is an error.
func (w *Workspace) ReadBounded(name string, max int64) ([]byte, error) {
	if max < 0 {
		return nil, fmt.Errorf("hookexec: reading %s: negative bound %d", name, max)
	}
	p := w.Path(name)
	f, err := os.OpenFile(p, os.O_RDONLY|openOutputFlags, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("reading hook output file %s: it is a symbolic link; hooks must write regular files", name)
	}
	if err != nil {
		return nil, fmt.Errorf("reading hook output file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading hook output file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("reading hook output file %s: not a regular file (mode %s)", name, fi.Mode())
	}
	tooLarge := fmt.Errorf("hook output file %s is larger than %d bytes: %w", name, max, ErrOutputTooLarge)
	if fi.Size() > max {
		return nil, tooLarge
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("reading hook output file: %w", err)
	}
	if int64(len(data)) > max {
		return nil, tooLarge // it grew while we read
	}
	return data, nil
}

// Close removes the workspace and everything in it, even directories a hook
// left without write permission. Closing twice is harmless.
func (w *Workspace) Close() error {
	if err := os.RemoveAll(w.dir); err == nil {
		return nil
	}
	_ = filepath.WalkDir(w.dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	if err := os.RemoveAll(w.dir); err != nil {
		return fmt.Errorf("removing hook workspace: %w", err)
	}
	return nil
}
