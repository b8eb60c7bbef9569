package exepages_test

import (
	"encoding/binary"
	"os"
	"os/exec"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/strata-dev/strata/internal/exepages"
)

// copiesChildEnv tells the test binary it is TestReleaseKeepsCopies's child.
const copiesChildEnv = "EXEPAGES_TEST_COPIES_CHILD"

// marker's bytes are read-only data of the test binary;
// TestReleaseKeepsCopies changes one in a private copy of their page. (A
// variable, so that the compiler reads the bytes rather than knowing them.)
var marker = "exepages: a page of read-only data with a copy of its own"

// TestRelease: a page of the executable's read-only data that the
// program read is mapped before Release and not after; reading it again
// maps it back with its bytes. Release reports what it dropped.
func TestRelease(t *testing.T) {
	pagemap, err := os.Open("/proc/self/pagemap")
	if err != nil {
		t.Fatal(err)
	}
	defer pagemap.Close()
	p := unsafe.StringData(released)
	if *p != 'e' {
		t.Fatalf("released starts with %q", *p)
	}
	if !mapped(t, pagemap, p) {
		t.Fatal("the page just read is not mapped")
	}
	// Another goroutine (the collector reading type data) may read the
	// page's neighbours, which maps the page again (the kernel maps up to
	// 64 KiB around a fault): a few tries.
	var r exepages.Released
	gone := false
	for try := 0; try < 5 && !gone; try++ {
		if r, err = exepages.Release(); err != nil {
			t.Fatal(err)
		}
		gone = !mapped(t, pagemap, p)
	}
	if r.Mappings == 0 || r.Bytes == 0 {
		t.Errorf("Release() = %+v, want some mappings and bytes released", r)
	}
	if !gone {
		t.Error("the page is still mapped after Release, five times")
	}
	if *p != 'e' || !mapped(t, pagemap, p) {
		t.Error("the page read again is not mapped back with its bytes")
	}
	if _, err := exepages.Release(); err != nil {
		t.Errorf("a second Release: %v", err)
	}
}

// released's bytes are read-only data of the test binary that TestRelease
// reads.
var released = "exepages: a page of read-only data the program read once"

// mapped reports whether the page holding p is in the process's page
// tables (/proc/self/pagemap's bit 63, "present").
func mapped(t *testing.T, pagemap *os.File, p *byte) bool {
	t.Helper()
	var entry [8]byte
	at := int64(uintptr(unsafe.Pointer(p))) / int64(os.Getpagesize()) * 8
	if _, err := pagemap.ReadAt(entry[:], at); err != nil {
		t.Fatal(err)
	}
	return binary.LittleEndian.Uint64(entry[:])&(1<<63) != 0
}

// TestReleaseKeepsCopies: a read-only page of the executable that holds a
// copy of its own (as the dynamic linker leaves relocated data after
// RELRO) keeps it: releasing it would bring back the file's bytes.
//
// The copy stays for the life of the process (and would keep its
// neighbours from being released), so the test runs in a child process.
func TestReleaseKeepsCopies(t *testing.T) {
	if os.Getenv(copiesChildEnv) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestReleaseKeepsCopies$", "-test.count=1")
		cmd.Env = append(os.Environ(), copiesChildEnv+"=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("in a child process: %v\n%s", err, out)
		}
		return
	}
	page := uintptr(os.Getpagesize())
	p := unsafe.StringData(marker)
	off := uintptr(unsafe.Pointer(p)) & (page - 1)
	mem := unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(p), -int(off))), page)
	if err := unix.Mprotect(mem, unix.PROT_READ|unix.PROT_WRITE); err != nil {
		t.Fatal(err)
	}
	*p = 'E' // copy-on-write: the page is the process's own now
	if err := unix.Mprotect(mem, unix.PROT_READ); err != nil {
		t.Fatal(err)
	}
	if _, err := exepages.Release(); err != nil {
		t.Fatal(err)
	}
	if got := *p; got != 'E' {
		t.Errorf("after Release the copied page reads %q, want the changed 'E': the copy was dropped", got)
	}
}
