package exepages

import (
	"reflect"
	"strings"
	"testing"
)

// exe is the executable of the smaps samples below.
var exe = file{major: 0xfe, minor: 0, inode: 9995155}

// sample is /proc/PID/smaps of a dynamically linked strata, shortened:
// the executable's read-only data, code, more read-only data, the page
// the dynamic linker relocated and then made read-only (RELRO: a
// copy-on-write page of the process's own), writable data, the heap and a
// shared library.
const sample = `00400000-014b3000 r--p 00000000 fe:00 9995155                            /tmp/strata
Size:              17100 kB
Rss:                8000 kB
Anonymous:             0 kB
VmFlags: rd mr mw me dw sd
014b3000-03747000 r-xp 010b3000 fe:00 9995155                            /tmp/strata
Size:              35408 kB
Rss:               20000 kB
Pss:               20000 kB
Anonymous:             0 kB
Locked:                0 kB
VmFlags: rd ex mr mw me dw sd
03747000-05d8e000 r--p 03347000 fe:00 9995155                            /tmp/strata
Size:              39196 kB
Rss:               18000 kB
Anonymous:             0 kB
VmFlags: rd mr mw me dw sd
05d8e000-05d8f000 r--p 0598e000 fe:00 9995155                            /tmp/strata
Size:                  4 kB
Rss:                   4 kB
Anonymous:             4 kB
VmFlags: rd mr mw me ac sd
05d8f000-05e92000 rw-p 0598f000 fe:00 9995155                            /tmp/strata
Size:               1036 kB
Rss:                 900 kB
Anonymous:           300 kB
VmFlags: rd wr mr mw me ac sd
05e92000-0810f000 rw-p 00000000 00:00 0 
Size:              35316 kB
Rss:                2000 kB
Anonymous:          2000 kB
VmFlags: rd wr mr mw me ac sd
7f0000000000-7f0000020000 r-xp 00000000 fe:00 1234                       /usr/lib/x86_64-linux-gnu/libc.so.6
Size:                128 kB
Rss:                 128 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me sd
`

func TestRegions(t *testing.T) {
	kb := int64(1024)
	for _, tc := range []struct {
		name  string
		smaps string
		f     file
		want  []region
	}{
		{"strata", sample, exe, []region{
			{0x400000, 0x14b3000, 8000 * kb},
			{0x14b3000, 0x3747000, 20000 * kb},
			{0x3747000, 0x5d8e000, 18000 * kb},
		}},
		{"another file's mappings", sample, file{major: 0xfe, inode: 1234}, []region{{0x7f0000000000, 0x7f0000020000, 128 * kb}}},
		{"same inode, other device", sample, file{major: 0xfd, inode: 9995155}, nil},
		{"anonymous mappings are no file's", sample, file{}, nil},
		{"nothing resident", "00400000-00500000 r-xp 00000000 fe:00 7 /x\nRss: 0 kB\nAnonymous: 0 kB\n", file{major: 0xfe, inode: 7}, nil},
		{"no Anonymous line", "00400000-00500000 r-xp 00000000 fe:00 7 /x\nRss: 8 kB\n", file{major: 0xfe, inode: 7}, nil},
		{"no Rss line", "00400000-00500000 r-xp 00000000 fe:00 7 /x\nAnonymous: 0 kB\n", file{major: 0xfe, inode: 7}, nil},
		{"malformed Anonymous", "00400000-00500000 r-xp 00000000 fe:00 7 /x\nRss: 8 kB\nAnonymous: x kB\n", file{major: 0xfe, inode: 7}, nil},
		{"a deleted executable", "00400000-00500000 r-xp 00000000 fe:00 7 /x (deleted)\nRss: 8 kB\nAnonymous: 0 kB\n", file{major: 0xfe, inode: 7}, []region{{0x400000, 0x500000, 8 * kb}}},
		{"a shared mapping", "00400000-00500000 r--s 00000000 fe:00 7 /x\nRss: 8 kB\nAnonymous: 0 kB\n", file{major: 0xfe, inode: 7}, []region{{0x400000, 0x500000, 8 * kb}}},
		{"writable shared", "00400000-00500000 rw-s 00000000 fe:00 7 /x\nRss: 8 kB\nAnonymous: 0 kB\n", file{major: 0xfe, inode: 7}, nil},
		{"empty", "", exe, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := regions([]byte(tc.smaps), tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("regions() = %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestRegionsErrors(t *testing.T) {
	for _, tc := range []struct {
		name, smaps, want string
	}{
		{"short header", "00400000-00500000 r-xp\n", "smaps line 1: a mapping's header has 2 fields"},
		{"no range", "Rss: 1 kB\n00400000 r-xp 0 fe:00 7\n", "smaps line 2: address range \"00400000\" has no '-'"},
		{"bad address", "0040000g-00500000 r-xp 0 fe:00 7\n", "bad address range"},
		{"empty range", "00500000-00500000 r-xp 0 fe:00 7\n", "bad address range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := regions([]byte(tc.smaps), exe)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("regions() = %v, %v; want an error containing %q", got, err, tc.want)
			}
		})
	}
}

// FuzzRegions: any text gives regions or an error, never a panic, and
// every region is a non-empty range with resident bytes.
func FuzzRegions(f *testing.F) {
	f.Add(sample)
	f.Add("00400000-00500000 r-xp 00000000 fe:00 9995155 /x\nRss: 8 kB\nAnonymous: 0 kB\n")
	f.Add("00400000-00500000 r-xp\n")
	f.Fuzz(func(t *testing.T, smaps string) {
		rs, err := regions([]byte(smaps), exe)
		if err != nil {
			return
		}
		for _, r := range rs {
			if r.end <= r.start || r.rss <= 0 {
				t.Errorf("region %#v from %q", r, smaps)
			}
		}
	})
}
