package exepages

import (
	"errors"
	"fmt"
	"os"
	"reflect"

	"golang.org/x/sys/unix"
)

// Release drops from the process's resident set the executable's
// read-only mappings that hold no page of their own (see the package
// comment). It is safe at any time: a page used afterwards faults back in
// from the page cache.
func Release() (Released, error) {
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return Released{}, fmt.Errorf("releasing the executable's pages: %w", err)
	}
	rs, err := regions(smaps, reflect.ValueOf(Release).Pointer())
	if err != nil {
		return Released{}, fmt.Errorf("releasing the executable's pages: reading /proc/self/smaps: %w", err)
	}
	var out Released
	var errs []error
	for _, r := range rs {
		// MADV_DONTNEED on a private file mapping with no copy-on-write
		// page only drops page-table entries: the next access maps the
		// page cache's page again.
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, r.start, r.end-r.start, unix.MADV_DONTNEED); e != 0 {
			errs = append(errs, fmt.Errorf("madvise %#x-%#x: %w", r.start, r.end, e))
			continue
		}
		out.Mappings++
		out.Bytes += r.rss
	}
	if err := errors.Join(errs...); err != nil {
		return out, fmt.Errorf("releasing the executable's pages: %w", err)
	}
	return out, nil
}
