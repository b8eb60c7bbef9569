package tarball

import (
	"errors"
	"strconv"
)

// Sentinel errors, checked with errors.Is. Every error Receive and Extract
// return for a bad stream or archive matches exactly one of them; other
// errors come from the stream itself (a client that went away), the
// context, or the local file system.
var (
	// ErrSize: the stream did not carry exactly the number of bytes its
	// metadata announced.
	ErrSize = errors.New("size mismatch")
	// ErrChecksum: the SHA-256 of the stream differs from its metadata.
	ErrChecksum = errors.New("checksum mismatch")
	// ErrFormat: the stream is not a gzip-compressed tar.
	ErrFormat = errors.New("not a gzip-compressed tar")
	// ErrUnsafePath: an entry's path, or the target of a symbolic or hard
	// link, leaves the repository, passes through a symbolic link, or
	// clashes with an earlier entry.
	ErrUnsafePath = errors.New("unsafe path")
	// ErrEntryType: an entry is a device, a FIFO or another type that a
	// repository cannot hold.
	ErrEntryType = errors.New("unsupported entry type")
	// ErrLimit: the stream or the repository is larger than Limits allow.
	ErrLimit = errors.New("limit exceeded")
)

// An EntryError reports a tar entry that breaks one of the rules of
// Extract. Its message names the entry and the rule:
//
//	tar entry "../x": path escapes the repository
//	tar entry "a/link": is a symlink to "/etc/passwd" outside the repository
type EntryError struct {
	Name   string // the entry's name as written in the archive
	Reason string // what is wrong with it
	Err    error  // ErrUnsafePath, ErrEntryType, ErrLimit or ErrFormat
}

func (e *EntryError) Error() string {
	return "tar entry " + strconv.Quote(e.Name) + ": " + e.Reason
}

func (e *EntryError) Unwrap() error { return e.Err }

// limitHint ends every limit error: what the user can do about it.
const limitHint = "; exclude files from the tarball with the repo-server's " +
	"reposerver.plugin.tar.exclusions setting, or raise that limit of the plugin server"
