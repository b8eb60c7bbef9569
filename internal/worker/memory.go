package worker

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"time"
)

// limitMemory bounds what the process may add to its memory from now on
// to budget bytes (none when negative), three ways:
//
//   - the Go memory limit is set to what the runtime holds now plus the
//     budget, so that the collector works harder before the request is
//     stopped for garbage it could collect;
//   - a watchdog ends the process as soon as the live heap (measured at
//     each collection, which come often near the limit) has grown by 90%
//     of the budget: from there on the collector would run almost without
//     pause and the request crawl towards the limit;
//   - the address space (RLIMIT_AS, where the platform has it) is capped
//     at what is mapped now plus the budget and a margin for the heap's
//     64 MiB arenas: a single allocation past it (or a stack grown past
//     it) fails at once, and the runtime ends the process.
//
// It returns the function that lifts all three.
func limitMemory(budget int64) (restore func()) {
	if budget < 0 {
		return func() {}
	}
	inUse := goMemory()
	debug.SetMemoryLimit(inUse + budget)
	stop := make(chan struct{})
	go watchHeap(inUse+budget*9/10, budget, stop)
	lift := func() {}
	if as := addressSpace(); as > 0 {
		if l, err := setAddressSpaceLimit(as + budget + addressSpaceMargin); err == nil {
			lift = l
		}
	}
	return func() {
		close(stop)
		lift()
		debug.SetMemoryLimit(math.MaxInt64)
	}
}

// budgetExceeded starts the line the watchdog prints before it ends the
// process; the pool reads it as the Go runtime's out of memory.
const budgetExceeded = "fatal error: worker memory budget exceeded"

// watchHeap ends the process when the live heap passes max.
func watchHeap(max, budget int64, stop <-chan struct{}) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		metrics.Read(s)
		if s[0].Value.Kind() == metrics.KindUint64 && int64(s[0].Value.Uint64()) > max {
			fmt.Fprintf(os.Stderr, "%s: the live heap is %d bytes, past 90%% of the request's budget of %d bytes over what the worker held before\n", budgetExceeded, s[0].Value.Uint64(), budget)
			os.Exit(2)
		}
	}
}

// addressSpaceMargin is added to a request's memory budget in its address
// space limit: the Go heap grows by arenas of 64 MiB, and its metadata and
// new threads' stacks take some more.
const addressSpaceMargin = 128 << 20

// goMemory is the memory the Go runtime holds from the system and has not
// given back.
func goMemory() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}

// A crashLog takes a worker's stdout and stderr: the Go runtime's message
// when it ends (its first lines are kept) and whatever else it prints
// (dropped past a bound).
type crashLog struct {
	mu   sync.Mutex
	line []byte // the line being written
	// first is the runtime's first "fatal error:" or "panic:" line, and
	// the lines after it up to maxCrashLog bytes.
	first bytes.Buffer
}

const maxCrashLog = 8 << 10

func (c *crashLog) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if len(c.line) < 4096 {
				c.line = append(c.line, b[:min(len(b), 4096-len(c.line))]...)
			}
			break
		}
		if len(c.line) < 4096 {
			c.line = append(c.line, b[:min(i, 4096-len(c.line))]...)
		}
		c.addLine(string(c.line))
		c.line = c.line[:0]
		b = b[i+1:]
	}
	return n, nil
}

func (c *crashLog) addLine(l string) {
	if c.first.Len() == 0 {
		// The Go runtime's messages, and the race detector's (==PID==).
		if strings.HasPrefix(l, "fatal error:") || strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "runtime: ") || strings.HasPrefix(l, "==") {
			c.first.WriteString(l + "\n")
		}
		return
	}
	if c.first.Len() < maxCrashLog {
		c.first.WriteString(l + "\n")
	}
}

// fatal is the runtime's first message line, "" if it printed none.
func (c *crashLog) fatal() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range strings.Split(c.first.String(), "\n") {
		if strings.HasPrefix(l, "fatal error:") || strings.HasPrefix(l, "panic:") || strings.Contains(l, "ERROR:") {
			return l
		}
	}
	l, _, _ := strings.Cut(c.first.String(), "\n")
	return l
}

func (c *crashLog) head() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.first.String()
}

// outOfMemory tells whether the runtime said it ran out of memory (an
// allocation past the address space limit) or of stack.
func (c *crashLog) outOfMemory() bool {
	c.mu.Lock()
	s := c.first.String()
	c.mu.Unlock()
	return strings.Contains(s, "out of memory") || strings.Contains(s, budgetExceeded) || strings.Contains(s, "failed to allocate") || strings.Contains(s, "cannot allocate memory") ||
		strings.Contains(s, "stack exceeds") || strings.Contains(s, "stack overflow") || strings.Contains(s, "failed to reserve")
}

var _ io.Writer = (*crashLog)(nil)
