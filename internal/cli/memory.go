package cli

import (
	"fmt"
	"log/slog"

	"github.com/strata-dev/strata/internal/cmpserver"
	"github.com/strata-dev/strata/internal/memlimit"
)

// setMemoryLimit finds the memory limit a server runs under (memlimit:
// STRATA_MEMORY_LIMIT, else the cgroup's), sets the Go memory limit from
// it unless GOMEMLIMIT is set, and logs both with the server's budgets.
// Every server command calls it first.
func setMemoryLimit(log *slog.Logger, server string, budgets func(memlimit.Limit) []any) (memlimit.Limit, error) {
	return memlimit.Setup(log, server, budgets)
}

// requestBudget is the request memory budget of cmp serve and where it
// came from.
type requestBudget struct {
	bytes int64 // 0: none
	from  string
}

func (b requestBudget) String() string {
	if b.bytes <= 0 {
		return "none"
	}
	return fmt.Sprintf("%d", b.bytes)
}

// cmpMemoryBudget derives cmp serve's request memory budget from
// --memory-budget (flag) and the memory limit.
func cmpMemoryBudget(flag int64, l memlimit.Limit) requestBudget {
	return memoryBudget(flag, l, cmpserver.DefaultMemoryReserve)
}

// memoryBudget derives a server's request memory budget from its
// --memory-budget (flag) and the memory limit, less reserve.
func memoryBudget(flag int64, l memlimit.Limit, reserve int64) requestBudget {
	switch {
	case flag > 0:
		return requestBudget{flag, "--memory-budget"}
	case flag < 0:
		return requestBudget{0, "--memory-budget"}
	}
	if n := l.Budget(reserve); n > 0 {
		return requestBudget{n, fmt.Sprintf("--memory-budget, by default the Go memory limit of %s less %d MiB; the Go limit is %s",
			formatMiB(l.Go), reserve>>20, l.GoSource)}
	}
	return requestBudget{0, "--memory-budget: no memory limit found"}
}

func formatMiB(n int64) string { return fmt.Sprintf("%d MiB", n>>20) }
