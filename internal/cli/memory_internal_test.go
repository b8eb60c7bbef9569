package cli

import (
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/cmpserver"
	"github.com/strata-dev/strata/internal/generator"
	"github.com/strata-dev/strata/internal/memlimit"
)

func TestMemoryBudget(t *testing.T) {
	limit := memlimit.Limit{Bytes: 256 << 20, Source: memlimit.Env, Go: 200 << 20, GoSource: "85% of STRATA_MEMORY_LIMIT"}
	for _, tc := range []struct {
		name      string
		flag      int64
		l         memlimit.Limit
		reserve   int64
		wantBytes int64
		wantFrom  string
	}{
		{"flag", 100 << 20, limit, generator.DefaultMemoryReserve, 100 << 20, "--memory-budget"},
		{"negative flag: none", -1, limit, generator.DefaultMemoryReserve, 0, "--memory-budget"},
		{"generator default", 0, limit, generator.DefaultMemoryReserve, 136 << 20, "--memory-budget, by default the Go memory limit of 200 MiB less 64 MiB; the Go limit is 85% of STRATA_MEMORY_LIMIT"},
		{"sidecar default", 0, limit, cmpserver.DefaultMemoryReserve, 72 << 20, "less 128 MiB"},
		{"no limit", 0, memlimit.Limit{}, generator.DefaultMemoryReserve, 0, "no memory limit found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := memoryBudget(tc.flag, tc.l, tc.reserve)
			if got.bytes != tc.wantBytes || !strings.Contains(got.from, tc.wantFrom) {
				t.Errorf("memoryBudget(%d, %+v, %d) = %+v, want %d bytes from %q", tc.flag, tc.l, tc.reserve, got, tc.wantBytes, tc.wantFrom)
			}
		})
	}
}
