package hookexec

import (
	"errors"
	"io"
	"sync"
)

// errStdoutFull is what headBuffer.Write returns once its bound is passed;
// os/exec then stops copying and closes the pipe. Run reports
// ErrOutputTooLarge instead.
var errStdoutFull = errors.New("stdout bound exceeded")

// headBuffer keeps the first max bytes written to it. The write that would
// pass max stores what still fits, closes full and fails, as do all later
// writes.
type headBuffer struct {
	mu   sync.Mutex
	max  int
	buf  []byte
	over bool
	full chan struct{}
	// reserve, when set, is asked before buf grows (Command.Reserve);
	// refused is its error, which also closes full.
	reserve func(int64) error
	refused error
}

func newHeadBuffer(max int64) *headBuffer {
	return &headBuffer{max: clampInt(max), full: make(chan struct{})}
}

func (b *headBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.over {
		return 0, errStdoutFull
	}
	n := len(p)
	if room := b.max - len(b.buf); n > room {
		p = p[:room]
		b.over = true
		close(b.full)
	}
	if need := len(b.buf) + len(p); need > cap(b.buf) {
		// Grow as append would, but never past max.
		c := min(max(2*cap(b.buf), need, 512), b.max)
		if b.reserve != nil {
			if err := b.reserve(int64(c - cap(b.buf))); err != nil {
				b.refused = err
				if !b.over {
					b.over = true
					close(b.full)
				}
				return 0, errStdoutFull
			}
		}
		nb := make([]byte, len(b.buf), c)
		copy(nb, b.buf)
		b.buf = nb
	}
	b.buf = append(b.buf, p...)
	if b.over {
		return len(p), errStdoutFull
	}
	return n, nil
}

// Bytes returns what was kept and whether the bound was passed.
func (b *headBuffer) Bytes() ([]byte, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf, b.over
}

// tailBuffer keeps the last max bytes written to it, in a ring that grows
// to max only as output arrives.
type tailBuffer struct {
	mu      sync.Mutex
	max     int
	buf     []byte // len(buf) <= max; once len(buf) == max it is a ring
	start   int    // index of the oldest byte once the ring is full
	dropped int64  // bytes written but no longer kept
	// limit, when positive, bounds the bytes written in all: the write
	// that passes it closes full (the command is then killed), and it
	// and all later writes are taken and dropped, so that the pipe stays
	// open until the kill: a write error would close it, and the command
	// could go on after a failed write before the kill lands.
	limit   int64
	written int64
	full    chan struct{}
}

func newTailBuffer(max int64) *tailBuffer {
	return &tailBuffer{max: clampInt(max), full: make(chan struct{})}
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.limit > 0 {
		if b.written > b.limit {
			return len(p), nil
		}
		b.written += int64(len(p))
		if b.written > b.limit {
			close(b.full)
			// Keep what it wrote, for the error's tail; drop the rest.
			b.writeLocked(p)
			return len(p), nil
		}
	}
	return b.writeLocked(p), nil
}

func (b *tailBuffer) writeLocked(p []byte) int {
	n := len(p)
	if n >= b.max {
		b.dropped += int64(len(b.buf) + n - b.max)
		if cap(b.buf) < b.max {
			b.buf = make([]byte, 0, b.max)
		}
		b.buf = append(b.buf[:0], p[n-b.max:]...)
		b.start = 0
		return n
	}
	if room := b.max - len(b.buf); room > 0 {
		k := min(room, len(p))
		b.buf = append(b.buf, p[:k]...)
		p = p[k:]
	}
	for len(p) > 0 {
		k := copy(b.buf[b.start:], p)
		b.dropped += int64(k)
		p = p[k:]
		b.start = (b.start + k) % b.max
	}
	return n
}

// Bytes returns the kept bytes, oldest first, and whether any were dropped.
func (b *tailBuffer) Bytes() ([]byte, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]byte, 0, len(b.buf))
	out = append(out, b.buf[b.start:]...)
	out = append(out, b.buf[:b.start]...)
	return out, b.dropped > 0
}

// copyBuffers are the buffers readFrom copies a command's output through:
// os/exec copies into a writer that is not a file with io.Copy, which
// would otherwise allocate 32 KiB for each of stdout and stderr of every
// command.
var copyBuffers = sync.Pool{New: func() any { return new([32 << 10]byte) }}

// readFrom copies r into w through a pooled buffer until EOF or an error
// (Write's included), as io.Copy does.
func readFrom(w io.Writer, r io.Reader) (int64, error) {
	buf := copyBuffers.Get().(*[32 << 10]byte)
	defer copyBuffers.Put(buf)
	var total int64
	for {
		n, err := r.Read(buf[:])
		if n > 0 {
			m, werr := w.Write(buf[:n])
			total += int64(m)
			if werr != nil {
				return total, werr
			}
		}
		if errors.Is(err, io.EOF) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// ReadFrom copies r's output in until EOF or the bound (see Write).
func (b *headBuffer) ReadFrom(r io.Reader) (int64, error) { return readFrom(b, r) }

// ReadFrom copies r's output in until EOF.
func (b *tailBuffer) ReadFrom(r io.Reader) (int64, error) { return readFrom(b, r) }

func clampInt(n int64) int {
	return int(min(n, int64(maxInt)))
}

const maxInt = int(^uint(0) >> 1)
