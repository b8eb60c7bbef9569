// Package startgc holds Go's garbage collector off while strata's packages
// initialise, unless GOGC is set: the libraries strata links (Helm's JSON
// schema compiler, client-go's and controller-runtime's schemes, Prometheus
// metrics) allocate some 10 MB of long-lived tables at start-up, and the
// collections that run meanwhile at Go's 4 MB starting goal are work for
// nothing. It imports nothing of strata and little of the standard
// library, so that Go initialises it before the large packages (the
// language initialises a package as soon as its imports are, in import
// path order). The program calls Resume before it runs a command; a
// program that never does (a test binary that runs no command) gets the
// collector back a second after start-up.
package startgc

import (
	"os"
	"runtime/debug"
	"sync"
	"time"
)

var (
	// held is the percentage the collector had before init turned it
	// off, or -2 when it was left alone.
	held   = -2
	resume sync.Once
)

// fallback is how long the collector stays off without Resume.
const fallback = time.Second

func init() {
	if _, set := os.LookupEnv("GOGC"); !set {
		held = debug.SetGCPercent(-1)
		time.AfterFunc(fallback, Resume)
	}
}

// Resume gives the collector back its percentage (GOGC's, 100 by
// default), the first time it is called; later calls do nothing, so a
// percentage set after it stays.
func Resume() {
	resume.Do(func() {
		if held != -2 {
			debug.SetGCPercent(held)
		}
	})
}
