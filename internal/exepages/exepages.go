// Package exepages releases from the resident set the pages of the running
// executable that hold only what its file holds: code and read-only data.
//
// Initialising strata's packages touches pages of code and read-only data
// spread over most of the 130 MB binary (the kernel maps 64 KiB around
// each fault), some 45 MB of which nothing reads again once the program
// runs. They stay counted in the process's resident set until the memory
// runs short. Release drops them from the process's page tables; pages read
// later come back from the page cache (a minor fault), not from disk, as
// long as the kernel keeps the file cached. The file's contents cannot
// change under a running executable (writing it fails with ETXTBSY), so
// what comes back is what was there.
//
// Only mappings of the executable that are not writable and hold no page of
// their own (no copy-on-write copy, such as the dynamic linker's relocated
// read-only data after RELRO) are released: for those, the page tables are
// all that is dropped.
package exepages

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// Released is what Release dropped.
type Released struct {
	// Mappings is the number of mappings released.
	Mappings int
	// Bytes is their resident size before Release.
	Bytes int64
}

// file identifies a file as /proc/PID/smaps names it: its device as
// "major:minor" in hexadecimal and its inode.
type file struct {
	major, minor uint32
	inode        uint64
}

// mapping is one mapping of /proc/PID/smaps.
type mapping struct {
	start, end uintptr
	perms      string
	file       file // zero for an anonymous mapping
	// anonKB and rssKB are its Anonymous and Rss lines: -1 when missing
	// or malformed.
	anonKB, rssKB int64
}

// region is one mapping Release may drop.
type region struct {
	start, end uintptr
	rss        int64 // bytes
}

// regions returns, from smaps (the text of /proc/PID/smaps), the mappings
// of the file that maps the code at pc — the executable — that are not
// writable, have a resident page and no anonymous one. The file is found
// by the mapping holding pc rather than by stat of /proc/self/exe: on
// overlayfs (a container's root) the mappings may name the underlying
// file's device and inode, depending on the kernel, while stat names the
// overlay's. A mapping whose Anonymous or Rss line is missing or
// malformed is left out, so that an unexpected format releases nothing
// rather than a page a mapping owns.
func regions(smaps []byte, pc uintptr) ([]region, error) {
	maps, err := parseSmaps(smaps)
	if err != nil {
		return nil, err
	}
	var exe file
	for _, m := range maps {
		if m.start <= pc && pc < m.end {
			exe = m.file
			break
		}
	}
	if exe.inode == 0 {
		return nil, fmt.Errorf("no file maps the program's code at %#x", pc)
	}
	var out []region
	for _, m := range maps {
		if m.file != exe || m.perms[1] == 'w' || m.anonKB != 0 || m.rssKB <= 0 {
			continue
		}
		out = append(out, region{start: m.start, end: m.end, rss: m.rssKB * 1024})
	}
	return out, nil
}

// parseSmaps reads the mappings of /proc/PID/smaps.
func parseSmaps(smaps []byte) ([]mapping, error) {
	var out []mapping
	sc := bufio.NewScanner(bytes.NewReader(smaps))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if key, ok := strings.CutSuffix(fields[0], ":"); ok {
			if len(out) == 0 || len(fields) != 3 || fields[2] != "kB" {
				continue
			}
			v, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil || v < 0 || v > 1<<40 {
				v = -1 // malformed: the mapping is left out
			}
			m := &out[len(out)-1]
			switch key {
			case "Anonymous":
				m.anonKB = v
			case "Rss":
				m.rssKB = v
			}
			continue
		}
		m, err := header(fields)
		if err != nil {
			return nil, fmt.Errorf("smaps line %d: %w", line, err)
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// header reads a mapping's first line: address range, permissions, offset,
// device, inode and the optional path.
func header(fields []string) (mapping, error) {
	m := mapping{anonKB: -1, rssKB: -1}
	if len(fields) < 5 {
		return m, fmt.Errorf("a mapping's header has %d fields, want at least 5: %q", len(fields), strings.Join(fields, " "))
	}
	lo, hi, found := strings.Cut(fields[0], "-")
	if !found {
		return m, fmt.Errorf("address range %q has no '-'", fields[0])
	}
	start, err1 := strconv.ParseUint(lo, 16, 64)
	end, err2 := strconv.ParseUint(hi, 16, 64)
	if err1 != nil || err2 != nil || end <= start {
		return m, fmt.Errorf("bad address range %q", fields[0])
	}
	m.start, m.end = uintptr(start), uintptr(end)
	if m.perms = fields[1]; len(m.perms) != 4 {
		return m, fmt.Errorf("permissions %q: want 4 letters", m.perms)
	}
	major, minor, found := strings.Cut(fields[3], ":")
	maj, err1 := strconv.ParseUint(major, 16, 32)
	mnr, err2 := strconv.ParseUint(minor, 16, 32)
	ino, err3 := strconv.ParseUint(fields[4], 10, 64)
	if !found || err1 != nil || err2 != nil || err3 != nil {
		return m, fmt.Errorf("device %q and inode %q", fields[3], fields[4])
	}
	m.file = file{major: uint32(maj), minor: uint32(mnr), inode: ino}
	return m, nil
}
