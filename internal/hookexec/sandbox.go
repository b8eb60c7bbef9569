package hookexec

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// A Sandbox confines a command's access to files with Landlock, the Linux
// security module that lets an unprivileged process restrict itself and
// everything it starts (Linux 5.13 and later). The command may read and
// run whatever the system lets it, except under the Hidden directories,
// which it cannot reach at all; it may write only beneath the Writable
// directories (which may lie under a Hidden one), and /dev/null.
//
// Run applies it on a thread of its own, made for the purpose: it sets
// no_new_privs and the Landlock rules on that thread alone and starts the
// command from it (the child inherits both, and keeps them through
// execve, as does everything it starts). The thread runs nothing else; it
// is kept to start the later commands with the same rules (the same
// Writable directories, by inode) and ends when its rules leave the cache
// (see below). The rest of this process is never restricted, and no
// other program (no shell, no helper) runs before the command. An
// earlier version re-executed this program as a helper; starting the
// strata binary costs 85 ms or more of package initialization per
// command, a thread about a tenth of a millisecond.
//
// Landlock rules are an allow-list: to hide a directory, Run allows
// reading each sibling of the directory and of its ancestors, and not the
// directory nor its ancestors themselves.
// So a sandboxed command cannot list those ancestors either (ls / fails
// when a Hidden directory is /srv/x), though it can open paths through
// them. Symbolic links among those siblings are not followed (whoever
// can write there could point one into a Hidden directory); what they
// point to is readable if it is readable by its own path.
//
// On a kernel with Landlock ABI 6 or later, the command also cannot
// signal processes outside its sandbox, nor connect to their abstract
// unix sockets. Commands started from one thread share its sandbox: a
// command may signal an earlier command of the same Writable directories
// that still runs.
//
// The rules are cached for the process's lifetime, so that a command
// does not pay for listing and opening every sibling again (thousands of
// system calls when the Hidden directory lies in a crowded /tmp): the
// allowed siblings stay open (O_PATH), and before each command the
// directories listed are checked with a stat each and listed again only
// when they have changed (or changed too recently for their timestamps
// to tell), so an entry made beside a Hidden directory is readable by
// the next command. Whole rulesets are kept by the inodes of their
// Writable directories, so a command in a directory that served an
// earlier one (a recycled workspace) starts with no rule to build. See
// rulecache_linux.go for why this confines commands exactly as rules
// built at each start would.
type Sandbox struct {
	// Writable are directories the command may read and change
	// everything beneath: absolute paths.
	Writable []string
	// Hidden are directories the command may not reach, apart from the
	// Writable directories beneath them: absolute paths.
	Hidden []string
}

// ErrNoSandbox reports that a Sandbox cannot be applied: the kernel has no
// Landlock (older than 5.13, or Landlock not enabled at boot: see
// /sys/kernel/security/lsm), or this is not Linux.
var ErrNoSandbox = errors.New("the command cannot be sandboxed")

// check makes sure the Sandbox's directories are absolute paths.
func (s *Sandbox) check() error {
	for _, list := range [][]string{s.Writable, s.Hidden} {
		for _, d := range list {
			if !filepath.IsAbs(d) || strings.IndexByte(d, 0) >= 0 {
				return fmt.Errorf("sandbox directory %q is not an absolute path", d)
			}
		}
	}
	return nil
}
