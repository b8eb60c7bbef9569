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
// [Workspace], a private directory holding the repository, which the
// caller hands to the plugin's commands and then closes. The Store
// guarantees:
//
//   - Nothing unverified is used. A tree is published in the cache only
//     after the whole stream was read and its size and SHA-256 matched the
//     metadata ([ErrSize], [ErrChecksum]) and extraction succeeded. It is
//     extracted into a temporary directory and renamed into the cache, so
//     a rejected tarball, a damaged stream or a client that disconnects
//     mid-stream leaves nothing behind. The cache is keyed by the SHA-256
//     of the verified bytes, so an entry can only ever be served for a
//     stream with exactly those bytes.
//   - Cached trees are immutable and never handed to a command. Every
//     Workspace is a fresh private copy (never hard links into the cache,
//     through which a command writing a file in place would change the
//     cache): no request sees files another request wrote, nor changes a
//     later request's repository. Copies are made from a list of the
//     tree's entries kept in memory, without reading directories or
//     following links, with a few files copied at once by the kernel
//     (copy_file_range; a reflink on file systems that have them).
//   - A repeated request costs no decompression. When the checksum is
//     already in the cache, Receive reads and hashes the stream, then
//     copies the tree. When another Receive is extracting the same
//     checksum, Receive hashes its stream into a spool file and waits for
//     that extraction: the tarball is extracted once and each Receive gets
//     its own copy. Should that extraction fail (its client went away),
//     a waiting Receive extracts from its own spooled, verified copy.
//   - The cache is bounded. Past its size, the least recently used trees
//     are evicted, but never one being copied or about to be.
//   - [Workspace.Close] always removes the workspace, even directories a
//     command made read-only. A cache hit is still checked against the
//     request's own Limits.
//
// Cached trees keep the archive's permission bits (made safe as above);
// each copy applies its request's [Options.PreserveFileMode], so requests
// with and without it share a cache entry.
package tarball
