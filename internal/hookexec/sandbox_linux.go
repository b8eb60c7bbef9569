//go:build linux

package hookexec

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"unsafe"
)

// LandlockABI returns the kernel's Landlock ABI version, or an error
// matching ErrNoSandbox if it has none.
func LandlockABI() (int, error) {
	abiOnce.Do(func() {
		v, _, e := syscall.Syscall(sysLandlockCreateRuleset, 0, 0, landlockCreateRulesetVersion)
		switch {
		case e == syscall.ENOSYS:
			abiErr = fmt.Errorf("%w: this kernel has no Landlock (Linux 5.13 or later has it)", ErrNoSandbox)
		case e == errnoNotSupported:
			abiErr = fmt.Errorf("%w: Landlock is disabled on this kernel (add landlock to the lsm= boot parameter)", ErrNoSandbox)
		case e != 0:
			abiErr = fmt.Errorf("%w: landlock_create_ruleset: %v", ErrNoSandbox, e)
		default:
			abi = int(v)
		}
	})
	return abi, abiErr
}

// Landlock's system calls and constants, from <linux/landlock.h> (the
// package may use the standard library only, whose syscall lacks them).
// The system call numbers are the same on every architecture since 424.
const (
	sysLandlockCreateRuleset = 444
	sysLandlockAddRule       = 445
	sysLandlockRestrictSelf  = 446

	landlockCreateRulesetVersion = 1 << 0
	landlockRulePathBeneath      = 1

	accessFSExecute   = 1 << 0
	accessFSWriteFile = 1 << 1
	accessFSReadFile  = 1 << 2
	accessFSReadDir   = 1 << 3
	accessFSMakeSym   = 1 << 12 // the last right of ABI 1
	accessFSRefer     = 1 << 13 // ABI 2
	accessFSTruncate  = 1 << 14 // ABI 3
	accessFSIoctlDev  = 1 << 15 // ABI 5
	scopeAbstractUnix = 1 << 0  // ABI 6
	scopeSignal       = 1 << 1  // ABI 6
	prSetNoNewPrivs   = 38
	oPath             = 0o10000000
	errnoNotSupported = syscall.EOPNOTSUPP
)

var (
	abiOnce sync.Once
	abi     int
	abiErr  error
)

// start starts cmd confined by s (see Sandbox), with the RLIMIT_FSIZE
// fsize when positive (startLimited).
func (s *Sandbox) start(cmd *exec.Cmd, fsize int64) error {
	if err := s.check(); err != nil {
		return err
	}
	if _, err := LandlockABI(); err != nil {
		return err
	}
	writable := make([]string, len(s.Writable))
	for i, d := range s.Writable {
		writable[i] = filepath.Clean(d)
	}
	hidden := make([]string, len(s.Hidden))
	for i, d := range s.Hidden {
		hidden[i] = filepath.Clean(d)
	}
	// The rules are made on this thread, unrestricted: making them reads
	// the directories around the Hidden ones.
	ruleset, shared, release, err := acquireRuleset(writable, hidden)
	if err != nil {
		return err
	}
	defer release()
	if shared != nil {
		return shared.start(cmd, fsize)
	}
	done := make(chan error, 1)
	go func() {
		// Never unlocked: the thread ends with this goroutine, and the
		// runtime makes new threads from an unrestricted one.
		runtime.LockOSThread()
		if err := restrictThread(ruleset); err != nil {
			done <- err
			return
		}
		done <- startLimited(cmd, fsize)
	}()
	return <-done
}

// ruleset is landlock_ruleset_attr up to the ABI 6 field.
type rulesetAttr struct {
	handledAccessFS  uint64
	handledAccessNet uint64
	scoped           uint64
}

type pathBeneathAttr struct {
	allowedAccess uint64
	parentFD      int32
}

const (
	accessRead = accessFSExecute | accessFSReadFile | accessFSReadDir
	// accessFileOnly are the rights that apply to a file (not only to a
	// directory): a rule on a file may grant only these.
	accessFileOnly = accessFSExecute | accessFSWriteFile |
		accessFSReadFile | accessFSTruncate | accessFSIoctlDev
)

// handledFS is every file system right the ABI knows.
func handledFS(abi int) uint64 {
	h := uint64(accessFSMakeSym<<1 - 1) // ABI 1: EXECUTE to MAKE_SYM
	if abi >= 2 {
		h |= accessFSRefer
	}
	if abi >= 3 {
		h |= accessFSTruncate
	}
	if abi >= 5 {
		h |= accessFSIoctlDev
	}
	return h
}

// devices may be written by a sandboxed command.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}

// makeRuleset returns a Landlock ruleset that lets a command read what is
// not hidden and write the writable directories.
func makeRuleset(writable, hidden []string) (int, error) {
	abi, err := LandlockABI()
	if err != nil {
		return -1, err
	}
	handled := handledFS(abi)
	ruleset, err := createRuleset(abi)
	if err != nil {
		return -1, err
	}

	add := func(path string, access uint64, dirOnly bool) error {
		flags := oPath | syscall.O_CLOEXEC | syscall.O_NOFOLLOW
		if dirOnly {
			flags |= syscall.O_DIRECTORY
		}
		pfd, err := syscall.Open(path, flags, 0)
		if err != nil {
			return err
		}
		defer syscall.Close(pfd)
		var st syscall.Stat_t
		if err := syscall.Fstat(pfd, &st); err != nil {
			return err
		}
		switch st.Mode & syscall.S_IFMT {
		case syscall.S_IFDIR:
		case syscall.S_IFLNK:
			return nil // see Sandbox
		default:
			access &= accessFileOnly
		}
		return addRule(ruleset, pfd, access&handled)
	}
	err = allowReading(hidden, func(p string) error { return add(p, accessRead, false) })
	for _, d := range writable {
		if err != nil {
			break
		}
		if err = add(d, handled, true); err != nil {
			err = fmt.Errorf("writable directory %s: %w", d, err)
		}
	}
	for _, d := range devices {
		if err != nil {
			break
		}
		err = add(d, accessFSReadFile|accessFSWriteFile|accessFSTruncate|accessFSIoctlDev, false)
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENXIO) {
			err = nil
		} else if err != nil {
			err = fmt.Errorf("%s: %w", d, err)
		}
	}
	if err != nil {
		syscall.Close(ruleset)
		return -1, fmt.Errorf("sandbox: %w", err)
	}
	return ruleset, nil
}

// createRuleset returns a new Landlock ruleset handling every file system
// right of the ABI (and, from ABI 6, scoping signals and abstract unix
// sockets), with no rule yet.
func createRuleset(abi int) (int, error) {
	attr := rulesetAttr{handledAccessFS: handledFS(abi)}
	size := unsafe.Sizeof(attr)
	if abi >= 6 {
		attr.scoped = scopeAbstractUnix | scopeSignal
	} else {
		size = unsafe.Offsetof(attr.scoped)
	}
	fd, _, e := syscall.Syscall(sysLandlockCreateRuleset, uintptr(unsafe.Pointer(&attr)), size, 0)
	if e != 0 {
		return -1, fmt.Errorf("sandbox: landlock_create_ruleset: %w", e)
	}
	return int(fd), nil
}

// addRule adds to ruleset a rule granting access beneath the file open
// as fd (with O_PATH).
func addRule(ruleset, fd int, access uint64) error {
	rule := pathBeneathAttr{allowedAccess: access, parentFD: int32(fd)}
	_, _, e := syscall.Syscall6(sysLandlockAddRule, uintptr(ruleset), landlockRulePathBeneath,
		uintptr(unsafe.Pointer(&rule)), 0, 0, 0)
	if e != 0 {
		return fmt.Errorf("landlock_add_rule: %w", e)
	}
	return nil
}

// restrictThread sets no_new_privs and enforces ruleset on the calling
// thread, which the caller has locked and will not unlock.
func restrictThread(ruleset int) error {
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0, 0, 0, 0); e != 0 {
		return fmt.Errorf("sandbox: setting no_new_privs: %w", e)
	}
	if _, _, e := syscall.RawSyscall(sysLandlockRestrictSelf, uintptr(ruleset), 0, 0); e != 0 {
		return fmt.Errorf("sandbox: landlock_restrict_self: %w", e)
	}
	return nil
}

// allowReading calls allow for every path that must be readable so that
// all but the hidden directories are: "/" when there are none, else the
// siblings of the hidden directories and of their ancestors.
func allowReading(hidden []string, allow func(string) error) error {
	if len(hidden) == 0 {
		return allow("/")
	}
	// on holds the hidden directories and their ancestors.
	on := map[string]bool{}
	for _, d := range hidden {
		for p := d; ; p = filepath.Dir(p) {
			on[p] = true
			if p == "/" {
				break
			}
		}
	}
	for _, d := range hidden {
		on[d] = true
	}
	done := map[string]bool{}
	for _, d := range hidden {
		for p := filepath.Dir(d); ; p = filepath.Dir(p) {
			if !done[p] {
				done[p] = true
				if err := allowSiblings(p, on, hidden, allow); err != nil {
					return err
				}
			}
			if p == "/" {
				break
			}
		}
	}
	return nil
}

// allowSiblings allows the entries of dir that are not on the way to a
// hidden directory.
func allowSiblings(dir string, on map[string]bool, hidden []string, allow func(string) error) error {
	if isHidden(dir, hidden) {
		return nil // inside another hidden directory
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("listing %s: %w", dir, err)
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if on[p] || e.Type()&os.ModeSymlink != 0 {
			continue
		}
		if err := allow(p); err != nil && !errors.Is(err, syscall.ENOENT) {
			return fmt.Errorf("allowing %s: %w", p, err)
		}
	}
	return nil
}

// isHidden reports whether p is a hidden directory or beneath one.
func isHidden(p string, hidden []string) bool {
	for _, d := range hidden {
		if p == d || strings.HasPrefix(p, d+"/") || d == "/" {
			return true
		}
	}
	return false
}
