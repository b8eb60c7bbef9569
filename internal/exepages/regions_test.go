package exepages

import (
	"reflect"
	"strings"
	"testing"
)

// code is an address in the executable's code in sample.
const code = 0x2000000

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

// one is a mapping of a file /x (device fe:00, inode 7) holding code.
func one(perms, lines string) string {
	return "00400000-00500000 " + perms + " 00000000 fe:00 7 /x\n" + lines
}

func TestRegions(t *testing.T) {
	kb := int64(1024)
	for _, tc := range []struct {
		name  string
		smaps string
		pc    uintptr
		want  []region
	}{
		{"strata", sample, code, []region{
			{0x400000, 0x14b3000, 8000 * kb},
			{0x14b3000, 0x3747000, 20000 * kb},
			{0x3747000, 0x5d8e000, 18000 * kb},
		}},
		{"the code in a shared library", sample, 0x7f0000000100, []region{{0x7f0000000000, 0x7f0000020000, 128 * kb}}},
		{"nothing resident", one("r-xp", "Rss: 0 kB\nAnonymous: 0 kB\n"), 0x400000, nil},
		{"no Anonymous line", one("r-xp", "Rss: 8 kB\n"), 0x400000, nil},
		{"no Rss line", one("r-xp", "Anonymous: 0 kB\n"), 0x400000, nil},
		{"malformed Anonymous", one("r-xp", "Rss: 8 kB\nAnonymous: x kB\n"), 0x400000, nil},
		{"huge Rss", one("r-xp", "Rss: 99999999999999999 kB\nAnonymous: 0 kB\n"), 0x400000, nil},
		{"a deleted executable", "00400000-00500000 r-xp 00000000 fe:00 7 /x (deleted)\nRss: 8 kB\nAnonymous: 0 kB\n", 0x4fffff, []region{{0x400000, 0x500000, 8 * kb}}},
		{"a shared mapping", one("r--s", "Rss: 8 kB\nAnonymous: 0 kB\n"), 0x400000, []region{{0x400000, 0x500000, 8 * kb}}},
		{"writable", one("rw-p", "Rss: 8 kB\nAnonymous: 0 kB\n"), 0x400000, nil},
		{"same inode, other device", one("r-xp", "Rss: 8 kB\nAnonymous: 0 kB\n") +
			"00500000-00600000 r--p 00000000 fd:00 7 /y\nRss: 8 kB\nAnonymous: 0 kB\n", 0x400000, []region{{0x400000, 0x500000, 8 * kb}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := regions([]byte(tc.smaps), tc.pc)
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
		name, smaps string
		pc          uintptr
		want        string
	}{
		{"short header", "00400000-00500000 r-xp\n", code, "smaps line 1: a mapping's header has 2 fields"},
		{"no range", "Rss: 1 kB\n00400000 r-xp 0 fe:00 7\n", code, "smaps line 2: address range \"00400000\" has no '-'"},
		{"bad address", "0040000g-00500000 r-xp 0 fe:00 7\n", code, "bad address range"},
		{"empty range", "00500000-00500000 r-xp 0 fe:00 7\n", code, "bad address range"},
		{"bad permissions", "00400000-00500000 rx 0 fe:00 7\n", code, "permissions \"rx\""},
		{"bad device", "00400000-00500000 r-xp 0 fe00 7\n", code, "device \"fe00\""},
		{"code in an anonymous mapping", sample, 0x6000000, "no file maps the program's code at 0x6000000"},
		{"code in no mapping", sample, 0x100, "no file maps the program's code at 0x100"},
		{"empty", "", code, "no file maps"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := regions([]byte(tc.smaps), tc.pc)
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
		rs, err := regions([]byte(smaps), 0x400000)
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
