package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
)

func newCopySelfCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "copy-self DEST",
		Short: "Copy this strata binary to DEST (for an init container)",
		Long: `Copy the running strata binary to DEST, a file path or an existing directory
(the copy is then DEST/strata), executable (0755). The copy is written to
a temporary file beside DEST and renamed into place, so a process that runs
DEST never sees half a binary, and running the command again replaces it.

strata's image has no shell and no cp: an init container copying strata
into a volume shared with a plugin's own tool image (as Argo CD's copyutil
does for argocd-cmp-server) runs this command:

  command: [/usr/local/bin/strata, copy-self, /var/run/strata/strata]`,
		Example: `  strata copy-self /var/run/strata/strata
  strata copy-self /var/run/strata`,
		Args: positional("DEST"),
		RunE: func(cmd *cobra.Command, args []string) error {
			self, err := os.Executable()
			if err != nil {
				return fmt.Errorf("finding this binary: %w", err)
			}
			dest, n, err := copyExecutable(self, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stderr, "copied %s to %s (%d bytes)\n", self, dest, n)
			return nil
		},
	}
}

// copyExecutable copies the file src to dest (dest/strata when dest is a
// directory) with mode 0755, through a temporary file renamed into place. It returns the path written and its size.
func copyExecutable(src, dest string) (string, int64, error) {
	if fi, err := os.Stat(dest); err == nil && fi.IsDir() {
		dest = filepath.Join(dest, "strata")
	}
	dir := filepath.Dir(dest)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return "", 0, fmt.Errorf("copy-self %s: the directory %s does not exist; mount the shared volume there or create it first", dest, dir)
		}
		return "", 0, fmt.Errorf("copy-self %s: %w", dest, err)
	}
	in, err := os.Open(src)
	if err != nil {
		return "", 0, fmt.Errorf("copy-self: reading this binary: %w", err)
	}
	defer in.Close()
	tmp, err := os.CreateTemp(dir, ".strata-copy-*")
	if err != nil {
		return "", 0, fmt.Errorf("copy-self %s: %w (is the volume writable by this user?)", dest, err)
	}
	n, err := io.Copy(tmp, in)
	if err == nil {
		err = tmp.Chmod(0o755)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dest)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", 0, fmt.Errorf("copy-self %s: %w", dest, err)
	}
	return dest, n, nil
}
