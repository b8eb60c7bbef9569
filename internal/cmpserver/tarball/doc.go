// Package tarball receives the repository that Argo CD's repo-server
// streams to a config-management plugin: a gzip-compressed tar, sent in
// small chunks after metadata giving its size and the hex SHA-256 of the
// compressed bytes. It checks the stream, extracts it safely, and caches
// what it extracted so that the same repository sent again (every
// discovery probe and every generate of a monorepo sends it whole) costs a
// hash and a copy instead of a decompression and an extraction.
//
// [Extract] is the safe extractor. Entries must stay inside the
// repository: absolute paths, ".." elements, paths through a symbolic
// link, symbolic links that resolve outside the repository (also by way of
// other links of the archive), hard links to anything but an earlier
// regular file, devices and FIFOs are rejected, as are archives past
// [Limits] on compressed size, content size, file count and path length.
// Symbolic links within the repository are kept; a hard link becomes a
// copy of its target. Files get mode 0644 and directories 0755, or their
// own permission bits with [Options.PreserveFileMode] (plugin.yaml's
// spec.preserveFileMode), never setuid, setgid or sticky. Errors name the
// entry and the rule, and match a sentinel ([ErrUnsafePath],
// [ErrEntryType], [ErrLimit], [ErrFormat]) with errors.Is:
//
//	tar entry "../x": path escapes the repository
//	tar entry "a/link": is a symlink to "/etc/passwd" outside the repository
//
// A [Store] serves requests: [Store.Receive] reads a stream and returns a
// [Workspace], the request's view of the repository, which the caller
// hands to the plugin and then closes. The Store guarantees:
//
//   - Nothing unverified is used. A tree is published in the cache only
//     after the whole stream was read and its size and SHA-256 matched the
//     metadata ([ErrSize], [ErrChecksum]) and extraction succeeded. It is
//     extracted into a temporary directory and renamed into the cache, so
//     a rejected tarball, a damaged stream or a client that disconnects
//     mid-stream leaves nothing behind. The cache is keyed by the SHA-256
//     of the verified bytes, so an entry can only ever be served for a
//     stream with exactly those bytes.
//   - Cached trees are never changed, and never handed to a command.
//     They are sealed: no write permission on any file or directory. A
//     caller that only reads ([Options.ReadOnly]: the built-in plugins,
//     which read through os.Root) gets the cached tree itself, kept from
//     eviction until it closes the Workspace: no copy at all. Every other
//     Workspace is a fresh private copy (never hard links into the cache,
//     through which a command writing a file in place would change the
//     cache) with an empty private temporary directory beside it
//     ([Workspace.TempDir]): no request sees files another request wrote,
//     nor changes a later request's repository — provided the command
//     cannot reach the cache or other workspaces by path, which the
//     server ensures by confining it with Landlock to its own two
//     directories (hookexec.Sandbox, hiding [Store.Root]).
//   - A repeated request costs no decompression. When the checksum is
//     already in the cache, Receive reads and hashes the stream, then
//     copies the tree (or not, for ReadOnly). When another Receive is
//     extracting the same checksum, Receive hashes its stream into a spool
//     file and waits for that extraction: the tarball is extracted once
//     and each Receive gets its own view. Should that extraction fail
//     (its client went away), a waiting Receive extracts from its own
//     spooled, verified copy.
//   - The cache is bounded. Past its size, the least recently used trees
//     are evicted, but never one being copied, read or about to be.
//   - [Workspace.Close] removes a private copy, even directories a command
//     made read-only, or, with [Store.SetRecycling], checks it and keeps
//     it for the next request of the same repository (below). A cache hit
//     is still checked against the request's own Limits. [Store.Stats]
//     counts hits, misses, extractions and evictions, recycled workspaces,
//     and the cache's size.
//
// Cached trees keep the archive's permission bits (made safe as above,
// less the write bits on disk); each copy applies its request's
// [Options.PreserveFileMode], so requests with and without it share a
// cache entry.
//
// # Speed on disk
//
// A sidecar's work directory is usually a disk-backed emptyDir. What makes
// creating files slow there was found with perf, not guessed: on the
// disk of issue 11 (an ext4 file system without a journal: no jbd2 task,
// /proc/fs/jbd2 empty), 26% of a file-creating loop's time is in
// recently_deleted and another 26% in find_get_block_common under
// find_inode_bit, in __ext4_new_inode. Without a journal, ext4 will not
// reuse an inode freed in the last 60 seconds (6 minutes while its inode
// table block is dirty), and checks every free inode it passes over, so
// each file created costs in proportion to the files deleted lately in
// its block group — by anyone on the disk, and by the sidecar itself,
// which removes each request's workspace. Measured on two 2 GiB loop file
// systems on that disk, system time per file created (Python's
// os.open(O_CREAT|O_EXCL), 3,000 files at a time):
//
//	                     fresh   after deleting 3,000   after 6,000
//	ext4 with journal    23 µs   26 µs                  26 µs
//	ext4 without         20 µs   157 µs                 244 µs
//
// On the root file system, shared with other work, an empty file cost
// 300–560 µs of system time and 2.4–3.4 ms of wall time; on tmpfs 10 µs
// and 95 µs. Argo CD's sidecar, which extracts every request, pays this
// too; a journalled ext4 (mkfs.ext4's default, and what node disks have)
// or a memory-backed emptyDir with a size limit does not.
//
// strata added its own overhead on top. Per file, the copy made about 16
// system calls from 8 goroutines on 2 CPUs: os.OpenFile of the source and
// of the copy, each with four fcntl calls and an epoll_ctl that fails
// (regular files cannot be polled), copy_file_range, an fchmod against the
// umask, two closes. And the workspace's removal, an unlink per file
// costing as much as the copy, ran before the reply: the gRPC status of a
// request follows its handler's return. Now a copy is 5 system calls per
// file: openat relative to the two trees' roots, copy_file_range, two
// closes, with an fchmod only when the umask took bits away (read from
// /proc/self/status), from 4 workers. strace -c of
// BenchmarkReceive/220files/warm, 10 requests: 6,319 openat, 24,718 fcntl,
// 6,179 epoll_ctl, 3,300 fchmod, 6,317 close before; 6,385 openat, 578
// fcntl, no epoll_ctl, no fchmod, 6,383 close after. Extraction creates
// its files without the poller and the fchmod too. The server removes a
// private workspace after answering, at most 4 at once in the background.
// On that disk the wall time of one copy swings tenfold with the disk's
// load (72–690 ms for 220 files, old and new code alike), so compare by
// system calls and cpu-ns/op, which BenchmarkReceive reports, not ns/op.
//
// Removing nothing and creating nothing is what helps, so the built-in
// plugins, which only read, get no copy at all (below).
//
// # Memory
//
// Memory does not grow with the repository's content: a stream is
// hashed and extracted through fixed buffers (64 KiB read-ahead, 256 KiB
// copy buffer), a Receive waiting for another's extraction spools its
// stream to disk, and a cached tree is kept as a list of names, modes and
// sizes, never its contents. BenchmarkReceiveConcurrent, 16 warm Receives
// of the 20,000-file repository at once: 5.2 MB allocated per Receive,
// short-lived, about 5 allocations per file (the names handed to the
// kernel among them); a peak resident set of 162 MiB for the whole test
// process, including the benchmark's own copy of the ~80 MB tarball the
// 16 streams read from.
//
// # Keeping command workspaces private, cheaply
//
// Options measured (BenchmarkReceive, STRATA_BENCH_DIR on the ext4 disk;
// the figures in docs/cmp.md):
//
//   - No copy, for plugins that only read (ReadOnly): costs what hashing
//     the stream costs, whatever the repository's size — the floor.
//   - A full copy (the default for command plugins): one file created per
//     file of the repository, plus its removal. Linear in files: cheap for
//     10 files, a few ms to a few hundred ms for 220, seconds for 20,000
//     on this disk.
//   - Reflinks (FICLONE): ext4 has none (EOPNOTSUPP). On XFS (reflink=1)
//     or Btrfs, copy_file_range already shares the blocks instead of
//     copying them; the file creations remain.
//   - Hard links into the cache: not acceptable. A command that opens a
//     linked file for writing writes the cache's inode; permission bits
//     do not stop the owner (it can chmod), and immutable files (chattr
//     +i) need CAP_LINUX_IMMUTABLE, which a sidecar does not have.
//   - Copy on first access: needs FUSE or overlayfs; nothing in plain
//     system calls does it.
//   - overlayfs in an unprivileged user namespace (lowerdir the cached
//     tree, upperdir the workspace): works on this kernel for an ordinary
//     user (unshare -Urm; mount -t overlay), but costs about 100 ms per
//     request here, constant (namespace setup and teardown, the mount):
//     more than copying 220 files, far less than copying 20,000. It needs
//     user namespaces, which Kubernetes' RuntimeDefault seccomp profile
//     and several distributions deny to unprivileged containers, so it
//     cannot be the default; it is not implemented.
//   - A read-only bind mount: needs a mount namespace too, and gives the
//     command nothing to write to.
//
// So: built-in plugins read the cache itself; command plugins get a full
// copy made with as few system calls as the kernel allows, confined with
// Landlock so that the copy, not permissions, is what keeps requests
// apart. And the copies are recycled (below), so that a repeated
// repository creates no file at all.
//
// # Recycling workspaces
//
// Creating files is what costs on disk, and removing a workspace makes the
// next creations slower still (above). With [Store.SetRecycling] a closed
// private copy is not removed: it is checked, and kept for the next
// request of the same checksum and file modes, which then gets it instead
// of a new copy. A repeated request of a command plugin costs what hashing
// the stream costs, plus a stat per entry after the reply. What makes
// handing a used copy to another request safe:
//
//   - Nothing of the earlier request still runs. A command could leave a
//     task behind (a daemon out of its process group, a process whose
//     main thread exited while another thread lives, a clone that sends
//     no SIGCHLD) that writes the copy after it was checked. So the Store
//     keeps a workspace only after [Workspace.Settle](nil): the caller's
//     word that nothing it gave the workspace to can still run. The
//     server gives it once the hookexec.Tracker of the request closed
//     without error: the Tracker (by default) killed and reaped every
//     child of the server (its subreaper, so every orphan is one) started
//     since the request began, until a reading of the server's children
//     found none, and found none it could not attribute; or, with
//     namespaces (cmp serve --command-namespaces), every command ran as
//     the init of its own PID namespace, which the kernel empties before
//     the init can be reaped and no task can leave. Any doubt, or no Settle, removes the workspace
//     ([Stats] RecycleBusy, RecycleUnsettled). What this trusts is the
//     kernel's re-parenting to a subreaper and its process start times, or
//     its PID namespaces; not the commands.
//   - Every change is found. The kernel sets a file's change time (ctime)
//     on every write, truncation, mode change, link, rename or extended
//     attribute change, and no system call sets it back. An entry whose
//     change time lies before the copy was last known to match its tree
//     (the start of its last check, or the end of its copy) less a margin
//     (2 s: file systems date with a clock one tick behind, some in whole
//     seconds) is untouched and costs a stat. By induction it matches the
//     tree: it did when that check began or it was read then. So even a
//     write after a check, had anything survived to make one, is found by
//     the next check, not trusted for having come before a hand-out. Any other file is read and compared
//     with the cached one, and rewritten in place when it differs (a
//     write, not a new file); its mode is reset; any other directory is
//     listed and compared with the tree. Only ext4, XFS, Btrfs, tmpfs and
//     overlayfs are trusted for this (SetRecycling refuses others:
//     network file systems date changes with the server's clock).
//   - What cannot be repaired in place is not repaired. An entry added,
//     removed, renamed or replaced by another type, a file with another
//     hard link or new extended attributes: the workspace is removed, and
//     the next request gets a new copy. The temporary directory is
//     emptied.
//
// Kept workspaces are bounded ([Recycling.MaxBytes]; those kept longest
// go first) and leave with their tree when the cache evicts it. A Receive
// that finds none kept but one being checked waits for it (checking is a
// read of what changed, far cheaper than a copy). Timestamps are not
// reset: a file a command rewrote keeps the time of its repair.
package tarball
