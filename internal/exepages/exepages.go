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

// region is one mapping Release may drop.
type region struct {
	start, end uintptr
	rss        int64 // bytes
}

// regions returns the mappings of f in smaps (the text of /proc/PID/smaps)
// that are not writable and have no anonymous page, with a resident page.
// A mapping whose Anonymous or Rss line is missing or malformed is left
// out, so that an unexpected format releases nothing rather than a page a
// mapping owns.
func regions(smaps []byte, f file) ([]region, error) {
	var out []region
	var cur *region   // the mapping being read, when it is f's and read-only
	var anon, rss int // fields seen: -1 unseen, else the value in kB
	flush := func() {
		if cur != nil && anon == 0 && rss > 0 {
			cur.rss = int64(rss) * 1024
			out = append(out, *cur)
		}
		cur, anon, rss = nil, -1, -1
	}
	flush()
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
			if cur == nil || len(fields) != 3 || fields[2] != "kB" {
				continue
			}
			v, err := strconv.Atoi(fields[1])
			if err != nil || v < 0 || v > 1<<40 {
				v = -2 // malformed: the mapping is left out
			}
			switch key {
			case "Anonymous":
				anon = v
			case "Rss":
				rss = v
			}
			continue
		}
		flush()
		r, ok, err := header(fields, f)
		if err != nil {
			return nil, fmt.Errorf("smaps line %d: %w", line, err)
		}
		if ok {
			cur = &r
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	flush()
	return out, nil
}

// header reads a mapping's first line: address range, permissions, offset,
// device, inode and the optional path. ok reports whether the mapping is
// f's and not writable.
func header(fields []string, f file) (r region, ok bool, err error) {
	if len(fields) < 5 {
		return r, false, fmt.Errorf("a mapping's header has %d fields, want at least 5: %q", len(fields), strings.Join(fields, " "))
	}
	lo, hi, found := strings.Cut(fields[0], "-")
	if !found {
		return r, false, fmt.Errorf("address range %q has no '-'", fields[0])
	}
	start, err1 := strconv.ParseUint(lo, 16, 64)
	end, err2 := strconv.ParseUint(hi, 16, 64)
	if err1 != nil || err2 != nil || end <= start {
		return r, false, fmt.Errorf("bad address range %q", fields[0])
	}
	perms := fields[1]
	if len(perms) != 4 || perms[1] == 'w' {
		return r, false, nil
	}
	major, minor, found := strings.Cut(fields[3], ":")
	if !found {
		return r, false, nil
	}
	maj, err1 := strconv.ParseUint(major, 16, 32)
	mnr, err2 := strconv.ParseUint(minor, 16, 32)
	ino, err3 := strconv.ParseUint(fields[4], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return r, false, nil
	}
	if uint32(maj) != f.major || uint32(mnr) != f.minor || ino != f.inode || ino == 0 {
		return r, false, nil
	}
	return region{start: uintptr(start), end: uintptr(end)}, true, nil
}
