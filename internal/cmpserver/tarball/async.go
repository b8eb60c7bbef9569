package tarball

import (
	"fmt"
	"io/fs"
	"sync"
	"sync/atomic"
)

// asyncMax is the largest file extract hands to its asyncWriter; larger
// ones it writes itself, streaming.
const asyncMax = 256 << 10

// writeWorkers is how many files an asyncWriter writes at once.
const writeWorkers = 8

// An asyncWriter writes files on a few goroutines. At most 64 files wait
// in its queue, which bounds its memory to (64+writeWorkers)·asyncMax.
type asyncWriter struct {
	jobs    chan writeJob
	pending sync.WaitGroup // jobs queued or being written
	workers sync.WaitGroup
	failed  atomic.Bool
	mu      sync.Mutex
	first   error
	closed  bool
	bufs    sync.Pool
}

type writeJob struct {
	name string // as in the archive, for errors
	path string
	buf  *buffer
	n    int // bytes of buf to write
	mode fs.FileMode
}

type buffer [asyncMax]byte

func newAsyncWriter() *asyncWriter {
	w := &asyncWriter{jobs: make(chan writeJob, 64)}
	w.bufs.New = func() any { return new(buffer) }
	for range writeWorkers {
		w.workers.Go(w.run)
	}
	return w
}

func (w *asyncWriter) run() {
	for j := range w.jobs {
		if !w.failed.Load() {
			if err := writeFile(j.path, j.buf[:j.n], j.mode); err != nil {
				w.fail(fmt.Errorf("extracting %q: %w", j.name, err))
			}
		}
		w.bufs.Put(j.buf)
		w.pending.Done()
	}
}

func (w *asyncWriter) fail(err error) {
	w.mu.Lock()
	if w.first == nil {
		w.first = err
	}
	w.mu.Unlock()
	w.failed.Store(true)
}

// err returns the first error of a write so far.
func (w *asyncWriter) err() error {
	if !w.failed.Load() {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.first
}

// buffer returns a buffer for write.
func (w *asyncWriter) buffer() *buffer { return w.bufs.Get().(*buffer) }

// write queues the first n bytes of buf, from buffer, to be written into
// a new file at path. It returns the error of an earlier write, if any.
func (w *asyncWriter) write(name, path string, buf *buffer, n int, mode fs.FileMode) error {
	if err := w.err(); err != nil {
		w.bufs.Put(buf)
		return err
	}
	w.pending.Add(1)
	w.jobs <- writeJob{name: name, path: path, buf: buf, n: n, mode: mode}
	return nil
}

// flush waits until every queued file is written.
func (w *asyncWriter) flush() error {
	w.pending.Wait()
	return w.err()
}

// close writes the queued files and stops the goroutines. Only the
// goroutine calling write may call flush and close.
func (w *asyncWriter) close() error {
	if !w.closed {
		w.closed = true
		close(w.jobs)
		w.workers.Wait()
	}
	return w.err()
}
