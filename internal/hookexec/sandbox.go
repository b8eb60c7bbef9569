package hookexec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
)

// A Sandbox confines a command's access to files with Landlock, the Linux
// security module that lets an unprivileged process restrict itself and
// everything it starts (Linux 5.13 and later). The command may read and
// run whatever the system lets it, except under the Hidden directories,
// which it cannot reach at all; it may write only beneath the Writable
// directories (which may lie under a Hidden one), and /dev/null.
//
// The confinement is applied by a helper: Run starts this program again
// (/proc/self/exe) with arguments that make SandboxMain, which main must
// call first, set no_new_privs, restrict itself and execve the command —
// no shell in between. Landlock rules are an allow-list: to hide a
// directory, the helper allows reading each sibling of the directory and
// of its ancestors, and not the directory nor its ancestors themselves.
// So a sandboxed command cannot list those ancestors either (ls / fails
// when a Hidden directory is /srv/x), though it can open paths through
// them. Symbolic links among those siblings are not followed (whoever
// can write there could point one into a Hidden directory); what they
// point to is readable if it is readable by its own path.
//
// On a kernel with Landlock ABI 6 or later, the command also cannot
// signal processes outside its sandbox, nor connect to their abstract
// unix sockets.
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
// /sys/kernel/security/lsm), or the program did not call SandboxMain.
var ErrNoSandbox = errors.New("the command cannot be sandboxed")

// helperArg, as the first argument, makes SandboxMain the sandbox helper.
const helperArg = "strata-internal-sandbox-exec"

// helperReady is set by SandboxMain: the program can be its own helper.
var helperReady atomic.Bool

// SandboxMain must be the first thing main (and TestMain, in packages
// whose tests run sandboxed commands) does in a program that runs
// commands with a Sandbox. Called as the sandbox helper, it confines
// itself and execs the command, never returning; otherwise it returns at
// once.
func SandboxMain() {
	if len(os.Args) >= 2 && os.Args[1] == helperArg {
		os.Exit(runHelper(os.Args[2:]))
	}
	helperReady.Store(true)
}

// helperSpec is what the helper is asked to do.
type helperSpec struct {
	writable, hidden []string
	path             string   // the command's executable
	argv             []string // its argv
}

// encode is the helper's argument list, after helperArg.
func (h *helperSpec) encode() []string {
	args := make([]string, 0, 2*(len(h.writable)+len(h.hidden))+2+len(h.argv))
	for _, d := range h.writable {
		args = append(args, "-w", d)
	}
	for _, d := range h.hidden {
		args = append(args, "-h", d)
	}
	args = append(args, "--", h.path)
	return append(args, h.argv...)
}

// parseHelperArgs reads what encode wrote.
func parseHelperArgs(args []string) (*helperSpec, error) {
	h := &helperSpec{}
	for i := 0; ; i += 2 {
		if i >= len(args) {
			return nil, errors.New("sandbox helper: no command after the options")
		}
		switch args[i] {
		case "--":
			rest := args[i+1:]
			if len(rest) < 2 {
				return nil, errors.New("sandbox helper: the command's path and argv[0] are missing")
			}
			if !filepath.IsAbs(rest[0]) {
				return nil, fmt.Errorf("sandbox helper: the command's path %q is not absolute", rest[0])
			}
			h.path, h.argv = rest[0], rest[1:]
			return h, nil
		case "-w", "-h":
			if i+1 >= len(args) {
				return nil, fmt.Errorf("sandbox helper: %s without a directory", args[i])
			}
			d := args[i+1]
			if !filepath.IsAbs(d) || filepath.Clean(d) != d {
				return nil, fmt.Errorf("sandbox helper: directory %q is not a clean absolute path", d)
			}
			if args[i] == "-w" {
				h.writable = append(h.writable, d)
			} else {
				h.hidden = append(h.hidden, d)
			}
		default:
			return nil, fmt.Errorf("sandbox helper: unknown option %q", args[i])
		}
	}
}

// check makes sure the Sandbox can be encoded.
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

// spec is the helper's task for s and a command.
func (s *Sandbox) spec(path string, argv []string) *helperSpec {
	clean := func(ds []string) []string {
		out := make([]string, len(ds))
		for i, d := range ds {
			out[i] = filepath.Clean(d)
		}
		return out
	}
	return &helperSpec{writable: clean(s.Writable), hidden: clean(s.Hidden), path: path, argv: argv}
}
