package generator

import (
	"errors"

	"github.com/strata-dev/strata/internal/memlimit"
)

// ErrMemoryBudget is wrapped by the error of a request whose backend's
// output needs more of the server's memory budget than it has
// (Server.SetMemoryBudget): one larger than the whole budget is refused at
// once, one that waited for room until its requestTimeout is refused
// then; both are answered 503 with Retry-After, naming the setting of the
// budget, instead of running the server out of memory.
var ErrMemoryBudget = errors.New("the plugin's output needs more memory than the generator server's budget")

// DefaultMemoryReserve is what a generator server holds besides its
// requests' outputs (the Go runtime, the connections and their buffers,
// the request bodies, the kept answers of the response caches): the
// budget derived from a memory limit is the Go memory limit less this
// (memlimit.Limit.Budget).
const DefaultMemoryReserve = 64 << 20

// encodeCost is what encoding an output into the response body costs, per
// byte of the output, besides the output itself: the compacted body, and
// the decoder's copies of one parameter set at a time (EncodeOutput).
const encodeCost = 2

// prepaidFrom is the expected cost of an answer from which a backend call
// reserves it ahead (memlimit.Prepay): the plugin's last answer's cost. A
// large output then waits for room once, before its command starts,
// holding nothing, rather than at each growth of its buffer while holding
// part of the budget; a small one takes what it needs as it arrives.
const prepaidFrom = 1 << 20

// SetMemoryBudget bounds the memory the requests' backend outputs may hold
// at once to bytes (memlimit.Budget): a command's stdout takes from it as
// it arrives, and the response body built from it before it is built;
// both are held until the answer is written. A request needing more than
// is free waits, in order of arrival, until its requestTimeout; one needing
// more than the whole budget is refused. from names the setting, for the
// error the client gets ("--memory-budget"). bytes <= 0 is no budget.
// Call it before serving.
func (s *Server) SetMemoryBudget(bytes int64, from string) {
	s.memory = memlimit.NewBudget(bytes, memlimit.BudgetOptions{
		Knob:   from,
		Server: "generator server",
		Advice: "return fewer or smaller parameter sets (split the plugin's work across several plugins or ApplicationSets)",
		Err:    ErrMemoryBudget,
	})
	s.memory.OnRefuse(s.metrics.memoryRefusals.Inc)
	s.metrics.memoryBudget.Set(float64(s.memory.Size()))
	s.metrics.budget.Store(s.memory)
}
