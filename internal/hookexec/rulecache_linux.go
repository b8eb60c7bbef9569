//go:build linux

package hookexec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Building a Sandbox's Landlock ruleset from nothing means listing every
// ancestor of the Hidden directories and opening each sibling on the way,
// 4 system calls a sibling (open, fstat, landlock_add_rule, close): some
// 2,300 calls, 2–4 ms, for a store root in a /tmp of 580 entries. So the
// rulesets are cached, in two levels, for the process's lifetime:
//
//   - the read-only part, per set of Hidden directories: an O_PATH file
//     descriptor of each sibling it allows (and of the devices), kept
//     open. Before each use the listed ancestors are checked with a stat
//     each: a directory whose inode, mtime or ctime has changed, or whose
//     timestamps were too recent to be trusted when it was listed (see
//     racyWindow and exactStamps), is listed again, and only the entries
//     that appeared, disappeared or now name another inode are opened or
//     closed. A directory made beside a Hidden one after the cache was
//     built is readable by the next command, as without the cache.
//   - whole rulesets, per read-only part and set of Writable directories
//     (by device and inode: a held rule pins its inode, so the number
//     cannot be reused while the ruleset exists): a recycled workspace, or
//     a request's second command, needs no rule added. Such a ruleset
//     starts its commands from a thread of its own, restricted by it once
//     (sharedRuleset.start): no thread, no Landlock domain per command.
//     It is closed, and its thread ended, when it is neither cached nor in
//     use.
//
// Why this keeps the confinement: a rule only ever names an inode that
// was, when listed, a non-hidden sibling (readable), a Writable directory
// of the same command (by inode identity, checked on every use), or a
// device. A stale read-only part can only lack a new entry (unreadable
// until the next check notices the change) or keep an inode that has
// since been removed or renamed; the Hidden directories are never named
// by a rule. Rules on Landlock are attached to inodes, not to paths: an
// allowed sibling later moved under a Hidden directory stays readable,
// exactly as with a ruleset built at the command's start, which stays in
// force for the command's whole run.
//
// A read-only part that would hold more than maxHeld descriptors is not
// cached: each command builds its ruleset, on a thread of its own, as
// before.

// racyWindow is how old a directory's mtime and ctime must be, when it is
// listed, for unchanged timestamps to prove the listing still holds. A
// change made in the same timestamp tick as the listing leaves them
// unchanged: the tick is a jiffy on most file systems, a second or two on
// some. Not needed where the timestamps are multigrain (see exactStamps).
const racyWindow = 2 * time.Second

// multigrainKernel reports whether the kernel has multigrain timestamps
// (Linux 6.13): on ext4, XFS, Btrfs and tmpfs, a change made after the
// timestamps were read by stat gets a fine-grained timestamp, so it
// always shows.
var multigrainKernel = sync.OnceValue(func() bool {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		return false
	}
	var rel []byte
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		rel = append(rel, byte(c))
	}
	major, rest, _ := strings.Cut(string(rel), ".")
	minor, _, _ := strings.Cut(rest, ".")
	minor = strings.TrimRightFunc(minor, func(r rune) bool { return r < '0' || r > '9' })
	ma, err1 := strconv.Atoi(major)
	mi, err2 := strconv.Atoi(minor)
	return err1 == nil && err2 == nil && (ma > 6 || ma == 6 && mi >= 13)
})

// Magic numbers of the file systems with multigrain timestamps.
const (
	ext4Magic  = 0xEF53
	xfsMagic   = 0x58465342
	btrfsMagic = 0x9123683E
	tmpfsMagic = 0x01021994
)

// exactStamps reports whether dir's timestamps change with every change,
// however soon after they were read: multigrain timestamps, on a file
// system that stores nanoseconds (an ext4 with 128-byte inodes stores
// seconds: a stamp without nanoseconds is not trusted).
func exactStamps(dir string, s dirStamp) bool {
	if !multigrainKernel() || s.mtime.Nsec == 0 || s.ctime.Nsec == 0 {
		return false
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		return false
	}
	switch uint32(fs.Type) {
	case ext4Magic, xfsMagic, btrfsMagic, tmpfsMagic:
		return true
	}
	return false
}

// Bounds on what the cache holds.
const (
	maxHiddenSets = 8 // sets of Hidden directories
	// maxRulesets bounds the whole rulesets per set of Hidden directories:
	// as many workspaces as a busy sidecar recycles in turn (16 clients
	// keep 16 or more in use). Each holds some 60 KiB of kernel memory
	// for 600 rules, a descriptor and, once used, a parked thread.
	maxRulesets = 64
)

// maxHeld bounds the descriptors one read-only part keeps open: a
// quarter of the process's limit, and never more than 4096. A variable
// for the tests.
var maxHeld = sync.OnceValue(func() int {
	var l syscall.Rlimit
	n := 4096
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err == nil && l.Cur/4 < uint64(n) {
		n = int(l.Cur / 4)
	}
	return n
})

var rulesCache ruleCache

type ruleCache struct {
	mu   sync.Mutex
	sets map[string]*readRules // by the Hidden directories, NUL-joined
}

// readRules is the cached read-only part of the rulesets for one set of
// Hidden directories.
type readRules struct {
	hidden []string
	on     map[string]bool // the Hidden directories and their ancestors
	dirs   []*listedDir    // the directories whose entries are allowed
	static []heldRule      // "/" when nothing is hidden, and the devices
	held   int             // open descriptors, static ones included
	gen    uint64          // bumped whenever the rules change
	// uncached is set when the rules would hold too many descriptors.
	uncached bool
	rulesets map[string]*sharedRuleset // by gen and Writable identity
	clock    uint64                    // for the least recently used
}

// heldRule is an allowed path, opened with O_PATH.
type heldRule struct {
	fd     int
	access uint64 // already cut to what the file type allows
}

type listedDir struct {
	path    string
	stamp   dirStamp
	settled bool   // the stamp proves the entries current
	raw     []byte // the listing as getdents64 gave it
	scratch []byte // for the next listing
	entries map[string]heldEntry
}

type dirStamp struct {
	dev, ino     uint64
	mtime, ctime syscall.Timespec
}

type heldEntry struct {
	ino uint64
	heldRule
	skip bool // a symbolic link, or on the way to a Hidden directory: no rule
}

type sharedRuleset struct {
	fd   int
	refs int // 1 while cached, plus 1 per command starting with it
	used uint64
	// launch feeds the thread that starts the commands with this
	// ruleset: restricted by it once, and ended with it (see start).
	// Made by the first start, closed with fd.
	launch chan launchRequest
}

type launchRequest struct {
	cmd   *exec.Cmd
	fsize int64
	done  chan error
}

// start starts cmd from a thread confined by rs, made by the first
// command and kept for the later ones: the confinement and a thread made
// for each command cost some 0.15 ms of CPU each, for a ruleset of some
// 600 rules. The caller holds a reference to rs. Commands started by one
// thread share its Landlock domain: on ABI 6 and later they may signal
// one another, as processes of one command may; they are commands with
// the same Writable directories (the same request, or a workspace that
// is reused only once the last request's processes are gone).
func (rs *sharedRuleset) start(cmd *exec.Cmd, fsize int64) error {
	rulesCache.mu.Lock()
	if rs.launch == nil {
		rs.launch = make(chan launchRequest)
		go rs.launcher(rs.launch)
	}
	launch := rs.launch
	rulesCache.mu.Unlock()
	done := make(chan error, 1)
	launch <- launchRequest{cmd: cmd, fsize: fsize, done: done}
	return <-done
}

// launcher starts the commands sent on launch from a thread restricted by
// rs, until launch is closed. The thread is locked and never unlocked:
// it runs nothing else, and ends with this goroutine.
func (rs *sharedRuleset) launcher(launch <-chan launchRequest) {
	runtime.LockOSThread()
	// rs.fd is open: the command that made launch holds a reference
	// until its request is answered.
	err := restrictThread(rs.fd)
	for req := range launch {
		if err != nil {
			req.done <- err
			continue
		}
		req.done <- startLimited(req.cmd, req.fsize)
	}
}

// acquireRuleset returns a ruleset for writable and hidden (clean,
// absolute paths), and a function the caller must call once it has
// started its command with it (or given up). A cached ruleset comes with
// rs, which starts commands; otherwise rs is nil and the caller enforces
// fd itself.
func acquireRuleset(writable, hidden []string) (fd int, rs *sharedRuleset, release func(), err error) {
	abi, err := LandlockABI()
	if err != nil {
		return -1, nil, nil, err
	}
	// The Writable directories, held open for the time it takes: the
	// rules name these inodes, whatever their paths come to name.
	wfds := make([]int, 0, len(writable))
	defer func() {
		for _, fd := range wfds {
			syscall.Close(fd)
		}
	}()
	var ids strings.Builder
	for _, d := range writable {
		fd, err := syscall.Open(d, oPath|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_DIRECTORY, 0)
		if err != nil {
			return -1, nil, nil, fmt.Errorf("sandbox: writable directory %s: %w", d, err)
		}
		wfds = append(wfds, fd)
		var st syscall.Stat_t
		if err := syscall.Fstat(fd, &st); err != nil {
			return -1, nil, nil, fmt.Errorf("sandbox: writable directory %s: %w", d, err)
		}
		fmt.Fprintf(&ids, "%d:%d/", st.Dev, st.Ino)
	}

	hidden = slices.Clone(hidden)
	slices.Sort(hidden)
	hidden = slices.Compact(hidden)
	key := strings.Join(hidden, "\x00")
	c := &rulesCache
	c.mu.Lock()
	rs, err = c.acquire(abi, key, hidden, wfds, writable, ids.String())
	c.mu.Unlock()
	switch {
	case err != nil:
		return -1, nil, nil, err
	case rs != nil:
		return rs.fd, rs, func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			rs.release()
		}, nil
	}
	// Too many entries to hold: built for the one command.
	if fd, err = makeRuleset(writable, hidden); err != nil {
		return -1, nil, nil, err
	}
	return fd, nil, func() { syscall.Close(fd) }, nil
}

// acquire is acquireRuleset's part under the lock; it returns nil and no
// error when the ruleset is not to be cached.
func (c *ruleCache) acquire(abi int, key string, hidden []string, wfds []int, writable []string, ids string) (*sharedRuleset, error) {
	rr := c.sets[key]
	if rr == nil {
		if len(c.sets) >= maxHiddenSets {
			for k, old := range c.sets {
				old.drop()
				delete(c.sets, k)
			}
		}
		if c.sets == nil {
			c.sets = map[string]*readRules{}
		}
		rr = newReadRules(hidden)
		c.sets[key] = rr
	}
	if !rr.uncached {
		if err := rr.refresh(); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
	}
	if rr.uncached {
		return nil, nil
	}

	rkey := strconv.FormatUint(rr.gen, 10) + "/" + ids
	rr.clock++
	if rs := rr.rulesets[rkey]; rs != nil {
		rs.refs++
		rs.used = rr.clock
		return rs, nil
	}
	fd, err := createRuleset(abi)
	if err != nil {
		return nil, err
	}
	handled := handledFS(abi)
	err = rr.addTo(fd, handled)
	for i := 0; err == nil && i < len(wfds); i++ {
		if err = addRule(fd, wfds[i], handled); err != nil {
			err = fmt.Errorf("writable directory %s: %w", writable[i], err)
		}
	}
	if err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	rs := &sharedRuleset{fd: fd, refs: 2, used: rr.clock}
	if len(rr.rulesets) >= maxRulesets {
		rr.evictOldest()
	}
	rr.rulesets[rkey] = rs
	return rs, nil
}

func newReadRules(hidden []string) *readRules {
	rr := &readRules{hidden: hidden, on: map[string]bool{}, rulesets: map[string]*sharedRuleset{}}
	for _, d := range hidden {
		for p := d; ; p = filepath.Dir(p) {
			rr.on[p] = true
			if p == "/" {
				break
			}
		}
	}
	done := map[string]bool{}
	for _, d := range hidden {
		for p := filepath.Dir(d); ; p = filepath.Dir(p) {
			if !done[p] {
				done[p] = true
				if !isHidden(p, hidden) {
					rr.dirs = append(rr.dirs, &listedDir{path: p, entries: map[string]heldEntry{}})
				}
			}
			if p == "/" {
				break
			}
		}
	}
	return rr
}

func (rs *sharedRuleset) release() {
	if rs.refs--; rs.refs == 0 {
		syscall.Close(rs.fd)
		if rs.launch != nil {
			close(rs.launch)
		}
	}
}

func (rr *readRules) evictOldest() {
	var oldest string
	for k, rs := range rr.rulesets {
		if oldest == "" || rs.used < rr.rulesets[oldest].used {
			oldest = k
		}
	}
	rr.rulesets[oldest].release()
	delete(rr.rulesets, oldest)
}

// changed drops the whole rulesets made from the rules as they were.
func (rr *readRules) changed() {
	rr.gen++
	for k, rs := range rr.rulesets {
		rs.release()
		delete(rr.rulesets, k)
	}
}

// drop closes everything rr holds (rulesets in use are closed by their
// last user).
func (rr *readRules) drop() {
	rr.changed()
	for _, h := range rr.static {
		syscall.Close(h.fd)
	}
	rr.static = nil
	for _, d := range rr.dirs {
		for name, e := range d.entries {
			if !e.skip {
				syscall.Close(e.fd)
			}
			delete(d.entries, name)
		}
		d.stamp, d.settled = dirStamp{}, false
	}
	rr.held = 0
}

// refresh brings rr up to date with the directories it lists.
func (rr *readRules) refresh() error {
	if rr.static == nil {
		if err := rr.openStatic(); err != nil {
			return err
		}
	}
	for _, d := range rr.dirs {
		if err := rr.refreshDir(d); err != nil {
			return err
		}
		if rr.held > maxHeld() {
			rr.drop()
			rr.uncached = true
			return nil
		}
	}
	return nil
}

func (rr *readRules) openStatic() error {
	var paths []string
	if len(rr.hidden) == 0 {
		paths = append(paths, "/")
	}
	paths = append(paths, devices...)
	rr.static = []heldRule{}
	for _, p := range paths {
		access := uint64(accessRead)
		if p != "/" {
			access = accessFSReadFile | accessFSWriteFile | accessFSTruncate | accessFSIoctlDev
		}
		h, ok, err := holdPath(p, access)
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENXIO) {
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if ok {
			rr.static = append(rr.static, h)
			rr.held++
		}
	}
	rr.changed()
	return nil
}

// refreshDir lists d again unless its stamp proves the entries current.
func (rr *readRules) refreshDir(d *listedDir) error {
	now := time.Now()
	var st syscall.Stat_t
	if err := syscall.Stat(d.path, &st); err != nil {
		return fmt.Errorf("listing %s: %w", d.path, err)
	}
	stamp := dirStamp{dev: st.Dev, ino: st.Ino, mtime: st.Mtim, ctime: st.Ctim}
	if d.settled && stamp == d.stamp {
		return nil
	}
	raw, err := readDirRaw(d.path, d.scratch[:0])
	if err != nil {
		d.stamp, d.settled = dirStamp{}, false
		return fmt.Errorf("listing %s: %w", d.path, err)
	}
	if d.entries != nil && len(d.raw) > 0 && bytes.Equal(raw, d.raw) {
		// The same entries, the same inodes (held ones cannot be reused).
		d.scratch = raw
		d.stamp, d.settled = stamp, settled(d.path, stamp, now)
		return nil
	}
	d.raw, d.scratch = raw, d.raw
	list := map[string]uint64{}
	parseDirents(raw, list)
	changed, gone := false, false
	for name, e := range d.entries {
		if ino, ok := list[name]; !ok || ino != e.ino {
			if !e.skip {
				syscall.Close(e.fd)
				rr.held--
			}
			delete(d.entries, name)
			changed = true
		}
	}
	for name, ino := range list {
		if _, ok := d.entries[name]; ok {
			continue
		}
		p := filepath.Join(d.path, name)
		if rr.on[p] {
			d.entries[name] = heldEntry{ino: ino, skip: true}
			continue
		}
		h, st, err := holdEntry(p, accessRead)
		if errors.Is(err, syscall.ENOENT) {
			// Gone: not recorded, and the next check parses the
			// listing again, even if it is the same.
			gone = true
			continue
		}
		if err != nil {
			d.stamp, d.settled, d.raw = dirStamp{}, false, d.raw[:0]
			if changed {
				rr.changed()
			}
			return fmt.Errorf("allowing %s: %w", p, err)
		}
		// The inode opened, which may be newer than the one listed: if
		// so the next listing differs and the entry is opened again.
		e := heldEntry{ino: st.Ino, heldRule: h, skip: st.Mode&syscall.S_IFMT == syscall.S_IFLNK}
		if e.skip {
			syscall.Close(h.fd)
		} else {
			rr.held++
		}
		d.entries[name] = e
		changed = true
	}
	if gone {
		d.raw = d.raw[:0]
	}
	d.stamp, d.settled = stamp, settled(d.path, stamp, now)
	if changed {
		rr.changed()
	}
	return nil
}

// settled reports whether a directory's stamp, taken at now, proves that
// its listing is current as long as it is unchanged: the timestamps are
// exact, or old enough.
func settled(dir string, s dirStamp, now time.Time) bool {
	if exactStamps(dir, s) {
		return true
	}
	before := now.Add(-racyWindow)
	return time.Unix(s.mtime.Unix()).Before(before) && time.Unix(s.ctime.Unix()).Before(before)
}

// addTo adds rr's rules to the ruleset fd.
func (rr *readRules) addTo(fd int, handled uint64) error {
	for _, h := range rr.static {
		if err := addRule(fd, h.fd, h.access&handled); err != nil {
			return err
		}
	}
	for _, d := range rr.dirs {
		for name, e := range d.entries {
			if e.skip {
				continue
			}
			if err := addRule(fd, e.fd, e.access&handled); err != nil {
				return fmt.Errorf("allowing %s: %w", filepath.Join(d.path, name), err)
			}
		}
	}
	return nil
}

// holdPath opens p with O_PATH for a rule granting access, cut to what its
// file type allows; ok is false for a symbolic link (no rule).
func holdPath(p string, access uint64) (heldRule, bool, error) {
	h, st, err := holdEntry(p, access)
	if err != nil {
		return h, false, err
	}
	if st.Mode&syscall.S_IFMT == syscall.S_IFLNK {
		syscall.Close(h.fd)
		return h, false, nil
	}
	return h, true, nil
}

func holdEntry(p string, access uint64) (heldRule, syscall.Stat_t, error) {
	var st syscall.Stat_t
	fd, err := syscall.Open(p, oPath|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return heldRule{fd: -1}, st, err
	}
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return heldRule{fd: -1}, st, err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		access &= accessFileOnly
	}
	return heldRule{fd: fd, access: access}, st, nil
}

// readDirRaw appends to buf what getdents64 gives for dir: its entries,
// "." and ".." included.
func readDirRaw(dir string, buf []byte) ([]byte, error) {
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	for {
		if cap(buf)-len(buf) < 8<<10 {
			buf = slices.Grow(buf, max(32<<10, cap(buf)))
		}
		n, err := syscall.Getdents(fd, buf[len(buf):cap(buf)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// parseDirents adds the entries of getdents64 records to out, but for "."
// and "..".
func parseDirents(b []byte, out map[string]uint64) {
	// struct linux_dirent64: u64 d_ino, s64 d_off, u16 d_reclen,
	// u8 d_type, char d_name[] (NUL-terminated).
	const nameOff = 19
	for len(b) >= nameOff {
		reclen := int(binary.NativeEndian.Uint16(b[16:]))
		if reclen < nameOff || reclen > len(b) {
			return
		}
		ino := binary.NativeEndian.Uint64(b)
		name := b[nameOff:reclen]
		if i := slices.Index(name, 0); i >= 0 {
			name = name[:i]
		}
		if s := string(name); ino != 0 && s != "." && s != ".." {
			out[s] = ino
		}
		b = b[reclen:]
	}
}
