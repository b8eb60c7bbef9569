// Package worker runs requests in worker processes: warm processes of
// this same program, each serving one request at a time, bounded in
// memory, killed when a request runs past its context or its memory
// budget, and replaced. A server uses it for work it cannot interrupt or
// bound in-process (a Go template that never ends, a value built without
// bound): the work then costs a worker, never the server.
//
// It knows nothing of the work. The two sides meet in one binary:
//
//   - The program names its worker programs as Entries and runs the one it
//     was started as (Run) before anything else, before its command line
//     is parsed: a Pool starts the program with the entry's name as its
//     first argument, which also makes the process recognisable in ps.
//     The entry's Main calls Serve with the function that builds its
//     Handler.
//   - The server makes a Pool (New) with the entry's name, the slots (one
//     worker per slot), the memory budget of one request and the
//     configuration its workers start with, and calls Do. Do fails with an
//     *Error when the pool, not the handler, ended the request (the
//     context ended, the worker ran out of its memory budget, crashed or
//     could not start); an error the handler returned comes back as its
//     text.
//
// The protocol is gob over two pipes, the worker's file descriptors 3
// (from the pool) and 4 (to the pool): the pool sends its settings with
// the configuration, the worker answers that it is ready (with its
// address space); then, one at a time, a request and its answers — any
// number of notes (Handler.Serve's note: what the request is about, named
// in the pool's errors) and one final answer carrying the result or the
// handler's error, the log lines the handler made while serving it, and
// the handler's counters. The worker's stdout and stderr are for the Go
// runtime's messages, which the pool reads to tell an out-of-memory end
// from a crash.
//
// Before each request the worker bounds what it may add to its memory to
// the budget three ways: the Go memory limit (so that the collector works
// harder first), a watchdog on the live heap (so that the request does
// not crawl near the limit), and the address space (RLIMIT_AS, on Linux),
// so that a single huge allocation fails at once. Past any of them the
// worker ends; the pool counts the request as out of memory and starts
// another worker.
package worker
