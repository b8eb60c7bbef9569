package tarball

import (
	"context"
	"fmt"
	"sync"
)

// DefaultDiskBudget is the disk budget of a Store whose SetDiskBudget was
// given 0: 16 GiB of repository content in flight.
const DefaultDiskBudget = 16 << 30

// A diskBudget bounds the repository bytes on disk that requests hold at
// once: trees being extracted and private workspace copies (the cache of
// published trees has its own bound). A nil *diskBudget bounds nothing.
type diskBudget struct {
	max int64

	mu         sync.Mutex
	used       int64
	extracting int64         // the part of used that extractions hold
	freed      chan struct{} // closed, and replaced, when bytes are given back
}

func newDiskBudget(max int64) *diskBudget {
	return &diskBudget{max: max, freed: make(chan struct{})}
}

// errDisk is the error of a request the budget cannot take.
func (b *diskBudget) errDisk(n int64, what string) error {
	return fmt.Errorf("%w: %s needs %d bytes on disk, and the plugin server's disk budget of %d bytes for repositories in flight "+
		"(cmp serve --max-disk-bytes) %s; retry later, exclude files from the tarball with the repo-server's reposerver.plugin.tar.exclusions setting, or raise the budget",
		ErrLimit, what, n, b.max, b.state(n))
}

func (b *diskBudget) state(n int64) string {
	if n > b.max {
		return "is smaller"
	}
	return "is taken by other requests"
}

// wait takes n bytes, waiting for other requests to give theirs back
// until ctx is done; n larger than the whole budget fails at once.
func (b *diskBudget) wait(ctx context.Context, n int64, what string) error {
	if b == nil {
		return nil
	}
	if n > b.max {
		return b.errDisk(n, what)
	}
	for {
		b.mu.Lock()
		if b.used+n <= b.max {
			b.used += n
			b.mu.Unlock()
			return nil
		}
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return fmt.Errorf("%w (waited for the disk budget: %v)", b.errDisk(n, what), ctx.Err())
		}
	}
}

// give gives n bytes back.
func (b *diskBudget) give(n int64) {
	if b == nil || n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	close(b.freed)
	b.freed = make(chan struct{})
}

// inUse returns the bytes taken.
func (b *diskBudget) inUse() int64 {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// A reservation is what one extraction took from a budget.
type reservation struct {
	ctx   context.Context
	b     *diskBudget
	taken int64
}

// take takes n more bytes for the extraction. It waits for workspaces to
// give bytes back, until the extraction's context is done, but not for
// other extractions, which may be waiting too: when extractions alone
// would hold more than the budget, it fails at once.
func (r *reservation) take(n int64) error {
	if r == nil || r.b == nil {
		return nil
	}
	b := r.b
	for {
		b.mu.Lock()
		switch {
		case b.used+n <= b.max:
			b.used += n
			b.extracting += n
			b.mu.Unlock()
			r.taken += n
			return nil
		case b.extracting+n > b.max:
			b.mu.Unlock()
			return b.errDisk(r.taken+n, "extracting the repository")
		}
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-freed:
		case <-r.ctx.Done():
			return fmt.Errorf("%w (waited for the disk budget: %v)", b.errDisk(r.taken+n, "extracting the repository"), r.ctx.Err())
		}
	}
}

// release gives back what the extraction took: its tree is now the
// cache's, or removed.
func (r *reservation) release() {
	if r == nil || r.b == nil || r.taken == 0 {
		return
	}
	r.b.mu.Lock()
	r.b.extracting -= r.taken
	r.b.mu.Unlock()
	r.b.give(r.taken)
	r.taken = 0
}
