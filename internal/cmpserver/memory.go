package cmpserver

import (
	"errors"
	"fmt"

	"github.com/strata-dev/strata/internal/memlimit"
)

// ErrMemoryBudget is wrapped by the error of a request that needs more of
// the server's memory than its whole budget (Server.MemoryBudget): it is
// refused at once, with gRPC's ResourceExhausted, instead of running the
// server out of memory.
var ErrMemoryBudget = errors.New("the plugin's output needs more memory than the sidecar's budget")

// DefaultMemoryReserve is what a sidecar holds besides its requests' work
// (the Go runtime, the gRPC connections, the repository cache's index,
// the requests' file chunks): the budget derived from a memory limit is
// the Go memory limit less this (memlimit.Limit.Budget).
const DefaultMemoryReserve = 128 << 20

// newMemoryBudget returns the sidecar's memory budget of size bytes
// (memlimit.Budget: each request acquires what its output is estimated to
// cost, manifest.EstimateMemory, or what it takes as it streams), or nil
// (no budget) for size <= 0. knob names what sets it, for the error of a
// refused request.
func newMemoryBudget(size int64, knob string) *memlimit.Budget {
	return memlimit.NewBudget(size, memlimit.BudgetOptions{
		Knob: knob, Server: "sidecar", Advice: "split the application into smaller ones", Err: ErrMemoryBudget,
	})
}

// mib formats n bytes in MiB.
func mib(n int64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
