package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// An Entry is a worker program inside this binary: a process a Pool
// started with Name as its first argument runs Main instead of the
// program's own main (see Run). Main serves the pool, calling Serve, and
// returns when the pool closes the pipes.
type Entry struct {
	// Name is the process's first argument: it names the entry, and
	// shows in ps beside the program's path.
	Name string
	Main func(ctx context.Context) error
}

// Run runs the entry of entries that args (the process's os.Args) start:
// the one named by args[1]. It returns the process's exit code and true
// when there was one, 0 and false when args start none, and the program
// goes on with its own main. A program whose pool starts it as a worker
// calls Run first thing in main, before it parses its command line, and a
// test binary standing in for it does so in TestMain.
//
// An entry's error is printed on stderr, as "NAME: ERROR", and exits 1.
func Run(ctx context.Context, args []string, stderr io.Writer, entries ...Entry) (code int, ran bool) {
	if len(args) < 2 {
		return 0, false
	}
	for _, e := range entries {
		if e.Name != "" && e.Name == args[1] {
			if err := e.Main(ctx); err != nil {
				fmt.Fprintf(stderr, "%s: %v\n", e.Name, err)
				return 1, true
			}
			return 0, true
		}
	}
	return 0, false
}

// ErrNotStarted is Serve's error in a process that was not started by a
// Pool: its file descriptors 3 and 4 are not pipes (someone ran the entry
// by hand).
var ErrNotStarted = errors.New("not started by a worker pool: there are no pipes on file descriptors 3 and 4")
