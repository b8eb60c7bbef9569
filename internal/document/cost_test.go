package document_test

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/document"
)

// flowList is the userConfig: a 960 KB flow list of 480,000
// one-digit integers.
func flowList(n int) []byte {
	return []byte("flows: [" + strings.Repeat("1,", n-1) + "1]\n")
}

// TestMaxCost: Limits.MaxCost lowers the node budget to what fits, and a
// document over it is refused before the YAML library builds it. Without
// it the flow list parses, at a peak of ~94 MiB.
func TestMaxCost(t *testing.T) {
	data := flowList(480_000)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, err := document.Loader{Limits: document.Limits{MaxCost: 32 << 20}}.Parse(data, "userConfig")
	runtime.ReadMemStats(&after)
	if !errors.Is(err, document.ErrTooLarge) || !strings.Contains(err.Error(), "more than 131072 values") {
		t.Fatalf("Parse(%d bytes) within 32 MiB = %v, want ErrTooLarge at 131072 values", len(data), err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 4<<20 {
		t.Errorf("refusing allocated %d MiB, want it refused before anything is built", n>>20)
	}
	// The same as JSON: counted while it is built.
	_, _, err = document.Loader{Limits: document.Limits{MaxCost: 32 << 20}}.Parse([]byte(`{"flows":[`+strings.Repeat("1,", 479_999)+`1]}`), "userConfig")
	if !errors.Is(err, document.ErrTooLarge) {
		t.Errorf("Parse(JSON) within 32 MiB = %v, want ErrTooLarge", err)
	}
	// Within the budget (the count before parsing takes a flow list's
	// commas for values too), and the budget never raises MaxNodes.
	if _, _, err := (document.Loader{Limits: document.Limits{MaxCost: 32 << 20}}).Parse(flowList(60_000), "small"); err != nil {
		t.Errorf("Parse(60,000 values) within 32 MiB: %v", err)
	}
	if _, _, err := (document.Loader{Limits: document.Limits{MaxCost: 1 << 40, MaxNodes: 10}}).Parse(flowList(100), "nodes"); !errors.Is(err, document.ErrTooLarge) {
		t.Errorf("MaxCost raised MaxNodes: %v", err)
	}
}
