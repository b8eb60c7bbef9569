package exepages

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

// Env is the environment variable that turns the release off: "false" (or
// any value strconv.ParseBool reads as false). Unset or empty means on.
const Env = "STRATA_RELEASE_EXE_PAGES"

// Enabled reads Env.
func Enabled() (bool, error) {
	v, set := os.LookupEnv(Env)
	if !set || v == "" {
		return true, nil
	}
	on, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("$%s=%q: use true (the default) or false", Env, v)
	}
	return on, nil
}

// The watch during package initialisation: the pages initialisation
// touches pile up in the resident set until main runs, and their peak
// there is the process's peak. For a long-running command the watch
// releases them every step of growth while the packages initialise, so
// that they never all count at once.
const (
	// watchStep is the growth of the resident file pages that triggers a
	// release; each costs 1–2 ms and the faults of the pages used again.
	watchStep = 8 << 20
	// watchEvery is how often the resident file pages are read (one
	// read of /proc/self/statm).
	watchEvery = time.Millisecond
	// watchFallback stops the watch in a program that never calls
	// StopWatch (one that failed before its command ran).
	watchFallback = 5 * time.Second
)

// longRunning reports whether args (the program's arguments, without its
// name) run a long-running command: `operator run`, global flags before
// or between included.
func longRunning(args []string) bool {
	for i, a := range args {
		if a == "--" {
			return false
		}
		if a == "operator" && i+1 < len(args) && args[i+1] == "run" {
			return true
		}
	}
	return false
}

// watch is the watch started at initialisation, nil when none runs.
var watch *watcher

func init() {
	if on, err := Enabled(); err != nil || !on || len(os.Args) < 2 || !longRunning(os.Args[1:]) {
		return
	}
	watch = startWatch(watchStep, watchEvery, watchFallback)
}

// StopWatch stops the watch started at initialisation and returns what it
// released; it waits for a release under way to end. Called again, or in
// a program that started no watch, it returns zero.
func StopWatch() Watched {
	if watch == nil {
		return Watched{}
	}
	return watch.stop()
}

// Watched is what the watch at initialisation released.
type Watched struct {
	// Releases counts the calls of Release.
	Releases int
	Released
	// Err is the first error of Release, if any (the watch stops at it).
	Err error
}

type watcher struct {
	once sync.Once
	quit chan struct{}
	done chan struct{}

	mu      sync.Mutex
	watched Watched
}

func startWatch(step int64, every, fallback time.Duration) *watcher {
	w := &watcher{quit: make(chan struct{}), done: make(chan struct{})}
	statm, err := os.Open("/proc/self/statm")
	if err != nil {
		close(w.done)
		return w
	}
	go func() {
		defer close(w.done)
		defer statm.Close()
		var buf [128]byte
		page := int64(os.Getpagesize())
		last := fileResident(statm, buf[:], page)
		tick := time.NewTicker(every)
		defer tick.Stop()
		end := time.NewTimer(fallback)
		defer end.Stop()
		for {
			select {
			case <-w.quit:
				return
			case <-end.C:
				return
			case <-tick.C:
			}
			now := fileResident(statm, buf[:], page)
			if now < 0 || now-last < step {
				continue
			}
			r, err := Release()
			w.mu.Lock()
			w.watched.Releases++
			w.watched.Mappings += r.Mappings
			w.watched.Bytes += r.Bytes
			w.watched.Err = err
			w.mu.Unlock()
			if err != nil {
				return
			}
			last = fileResident(statm, buf[:], page)
		}
	}()
	return w
}

func (w *watcher) stop() Watched {
	var out Watched
	w.once.Do(func() {
		close(w.quit)
		<-w.done
		w.mu.Lock()
		out = w.watched
		w.mu.Unlock()
	})
	return out
}

// fileResident reads the resident pages backed by files (and shared
// memory) from /proc/self/statm, in bytes; -1 when it cannot.
func fileResident(statm *os.File, buf []byte, page int64) int64 {
	n, err := statm.ReadAt(buf, 0)
	if n == 0 && err != nil {
		return -1
	}
	// size resident shared text lib data dt
	field, start := 0, 0
	for i := 0; i <= n; i++ {
		if i < n && buf[i] != ' ' {
			continue
		}
		if field == 2 {
			v, err := strconv.ParseInt(string(buf[start:i]), 10, 64)
			if err != nil {
				return -1
			}
			return v * page
		}
		field++
		start = i + 1
	}
	return -1
}
