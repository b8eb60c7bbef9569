package memlimit_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/strata-dev/strata/internal/memlimit"
)

var errSidecar = errors.New("the plugin's output needs more memory than the sidecar's budget")

func TestRequestBudget(t *testing.T) {
	b := memlimit.NewBudget(100, memlimit.BudgetOptions{Knob: "--memory-budget", Server: "sidecar", Advice: "split the application into smaller ones", Err: errSidecar})
	var refusals int
	b.OnRefuse(func() { refusals++ })
	bg := context.Background()

	t.Run("no budget in the context", func(t *testing.T) {
		if err := memlimit.Reserve(bg, 1<<40, "x"); err != nil {
			t.Errorf("memlimit.Reserve() without a reservation = %v, want nil", err)
		}
	})
	t.Run("larger than the budget", func(t *testing.T) {
		ctx, end := b.Begin(bg)
		defer end()
		err := memlimit.Reserve(ctx, 101, "reading the 7 bytes `cat` printed")
		if !errors.Is(err, errSidecar) {
			t.Fatalf("memlimit.Reserve(101 of 100) = %v, want errSidecar", err)
		}
		for _, want := range []string{"`cat` printed", "--memory-budget", "split the application"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("memlimit.Reserve(101 of 100) = %q, want it to name %q", err, want)
			}
		}
	})
	t.Run("waits for memory released", func(t *testing.T) {
		ctx1, end1 := b.Begin(bg)
		if err := memlimit.Reserve(ctx1, 60, "first"); err != nil {
			t.Fatal(err)
		}
		ctx2, end2 := b.Begin(bg)
		defer end2()
		got := make(chan error, 1)
		go func() { got <- memlimit.Reserve(ctx2, 60, "second") }()
		select {
		case err := <-got:
			t.Fatalf("second reservation of 60 of 100 with 60 held = %v before the first ended", err)
		case <-time.After(50 * time.Millisecond):
		}
		end1()
		if err := <-got; err != nil {
			t.Fatalf("second reservation after the first ended = %v", err)
		}
		if h := b.Held(); h != 60 {
			t.Errorf("held = %d, want 60", h)
		}
	})
	t.Run("deadline while waiting", func(t *testing.T) {
		ctx1, end1 := b.Begin(bg)
		defer end1()
		if err := memlimit.Reserve(ctx1, 40, "first"); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(bg, 20*time.Millisecond)
		defer cancel()
		ctx2, end2 := b.Begin(ctx)
		defer end2()
		err := memlimit.Reserve(ctx2, 70, "second")
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "waiting for") {
			t.Errorf("memlimit.Reserve() past its deadline = %v, want a wait error with DeadlineExceeded", err)
		}
	})
	t.Run("output streamed, then its parse", func(t *testing.T) {
		ctx, end := b.Begin(bg)
		grow := memlimit.Stream(ctx, "`yes`")
		if err := grow(30); err != nil {
			t.Fatal(err)
		}
		if err := grow(20); err != nil {
			t.Fatal(err)
		}
		if err := memlimit.Reserve(ctx, 40, "parsing"); err != nil {
			t.Fatalf("memlimit.Reserve(40) with 50 streamed of 100 = %v", err)
		}
		if h := b.Held(); h != 90 {
			t.Errorf("held = %d, want 90", h)
		}
		end()
	})
	t.Run("stream refused past the budget", func(t *testing.T) {
		ctx, end := b.Begin(bg)
		defer end()
		grow := memlimit.Stream(ctx, "`yes`")
		if err := grow(64); err != nil {
			t.Fatal(err)
		}
		err := grow(64)
		if !errors.Is(err, errSidecar) || !strings.Contains(err.Error(), "`yes` printed 0.0 MiB and went on") {
			t.Errorf("growing 64+64 of 100 = %v, want errSidecar naming the command", err)
		}
	})
	t.Run("a holder waits keeping what it holds while another can give back", func(t *testing.T) {
		ctx1, end1 := b.Begin(bg)
		if err := memlimit.Reserve(ctx1, 60, "first"); err != nil {
			t.Fatal(err)
		}
		ctx, end := b.Begin(bg)
		defer end()
		grow := memlimit.Stream(ctx, "`cat`")
		if err := grow(20); err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 1)
		go func() { got <- grow(30) }()
		select {
		case err := <-got:
			t.Fatalf("growing 30 with 60+20 of 100 held returned %v before the first request ended", err)
		case <-time.After(50 * time.Millisecond):
		}
		if h := b.Held(); h != 80 {
			t.Errorf("held while the stream waits = %d, want 80: what a waiting request holds stays counted", h)
		}
		end1()
		if err := <-got; err != nil {
			t.Fatalf("growing after the first request ended = %v", err)
		}
		if h := b.Held(); h != 50 {
			t.Errorf("held = %d, want 50", h)
		}
	})
	t.Run("stream waiting past its deadline", func(t *testing.T) {
		ctx1, end1 := b.Begin(bg)
		defer end1()
		if err := memlimit.Reserve(ctx1, 90, "first"); err != nil {
			t.Fatal(err)
		}
		short, cancel := context.WithTimeout(bg, 50*time.Millisecond)
		defer cancel()
		ctx, end := b.Begin(short)
		defer end()
		err := memlimit.Stream(ctx, "`yes`")(30)
		if !errors.Is(err, errSidecar) || !strings.Contains(err.Error(), "held by other requests") || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("growing 30 with 90 of 100 held until the deadline = %v, want errSidecar saying others hold it", err)
		}
	})
	t.Run("every holder waiting: the smallest is refused", func(t *testing.T) {
		ctx1, end1 := b.Begin(bg)
		if err := memlimit.Stream(ctx1, "`big`")(50); err != nil {
			t.Fatal(err)
		}
		ctx2, end2 := b.Begin(bg)
		defer end2()
		if err := memlimit.Stream(ctx2, "`small`")(40); err != nil {
			t.Fatal(err)
		}
		big := make(chan error, 1)
		go func() { big <- memlimit.Reserve(ctx1, 20, "encoding big") }()
		select {
		case err := <-big:
			t.Fatalf("the larger holder's wait = %v while the smaller one could give back", err)
		case <-time.After(50 * time.Millisecond):
		}
		small := make(chan error, 1)
		go func() { small <- memlimit.Reserve(ctx2, 20, "encoding small") }()
		// Both hold part of the budget and wait: the one holding the
		// least is refused, and its end lets the other go on.
		err := <-small
		if !errors.Is(err, errSidecar) || !strings.Contains(err.Error(), "held the least") {
			t.Errorf("the smaller waiting holder got %v, want the budget's refusal saying it held the least", err)
		}
		end2()
		if err := <-big; err != nil {
			t.Fatalf("the larger waiting holder = %v, want its memory once the smaller ended", err)
		}
		if h := b.Held(); h != 70 {
			t.Errorf("held = %d, want 70", h)
		}
		end1()
	})
	t.Run("stream and parse larger than the budget", func(t *testing.T) {
		ctx1, end1 := b.Begin(bg)
		defer end1()
		if err := memlimit.Reserve(ctx1, 10, "first"); err != nil {
			t.Fatal(err)
		}
		ctx, end := b.Begin(bg)
		defer end()
		if err := memlimit.Stream(ctx, "`cat`")(60); err != nil {
			t.Fatal(err)
		}
		err := memlimit.Reserve(ctx, 50, "parsing")
		if !errors.Is(err, errSidecar) || !strings.Contains(err.Error(), "besides the 0.0 MiB the request holds") {
			t.Errorf("memlimit.Reserve(50) with 60 streamed of 100 = %v, want errSidecar", err)
		}
	})
	if h := b.Held(); h != 0 {
		t.Errorf("held after every request ended = %d, want 0", h)
	}
	// Refused: larger than the budget, the deadline while waiting, the
	// stream past the budget, the stream past its deadline, the largest
	// of the waiting holders, the stream and its parse larger than the
	// budget.
	if refusals != 6 {
		t.Errorf("OnRefuse called %d times, want 6", refusals)
	}
}

// TestBudgetSmallRequests: the first bytes of each request come from a
// part of the budget kept for them, so that a small output does not queue
// behind large ones waiting for the rest.
func TestBudgetSmallRequests(t *testing.T) {
	const size = 16 << 20
	b := memlimit.NewBudget(size, memlimit.BudgetOptions{})
	bg := context.Background()
	ctx1, end1 := b.Begin(bg)
	defer end1()
	if err := memlimit.Reserve(ctx1, size*7/8, "large"); err != nil {
		t.Fatal(err)
	}
	// A large request waits for the rest.
	ctx2, end2 := b.Begin(bg)
	defer end2()
	large := make(chan error, 1)
	go func() { large <- memlimit.Reserve(ctx2, 1<<20, "another large") }()
	short, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	for i := range 8 {
		ctx, end := b.Begin(short)
		grow := memlimit.Stream(ctx, "`small`")
		for _, n := range []int64{512, 512, 1024, 2048, 60 << 10} {
			if err := grow(n); err != nil {
				t.Fatalf("small request %d: growing by %d = %v, want room at once", i, n, err)
			}
		}
		end()
	}
	select {
	case err := <-large:
		t.Fatalf("the large request's wait = %v before memory was released", err)
	default:
	}
	end1()
	if err := <-large; err != nil {
		t.Fatal(err)
	}
}

func TestBudgetDefaults(t *testing.T) {
	b := memlimit.NewBudget(10, memlimit.BudgetOptions{Knob: "--memory-budget", Server: "generator server", Advice: "return fewer parameter sets"})
	ctx, end := b.Begin(context.Background())
	defer end()
	err := memlimit.Reserve(ctx, 11, "the output")
	if !errors.Is(err, memlimit.ErrBudget) {
		t.Fatalf("Reserve(11 of 10) = %v, want ErrBudget", err)
	}
	for _, want := range []string{"generator server may hold", "--memory-budget", "return fewer parameter sets, or raise the generator server's memory limit"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Reserve(11 of 10) = %q, want it to say %q", err, want)
		}
	}
	if b.Size() != 10 {
		t.Errorf("Size() = %d, want 10", b.Size())
	}
}

func TestWithReservationOf(t *testing.T) {
	b := memlimit.NewBudget(100, memlimit.BudgetOptions{})
	req, end := b.Begin(context.Background())
	// Work for the request under a context of its own takes from the
	// request's reservation, and the request's end releases it.
	work := memlimit.WithReservationOf(context.Background(), req)
	if err := memlimit.Reserve(work, 30, "x"); err != nil {
		t.Fatal(err)
	}
	if h := b.Held(); h != 30 {
		t.Errorf("held = %d, want 30", h)
	}
	end()
	if h := b.Held(); h != 0 {
		t.Errorf("held after the request ended = %d, want 0", h)
	}
	if ctx := memlimit.WithReservationOf(context.Background(), context.Background()); memlimit.Stream(ctx, "x") != nil {
		t.Error("WithReservationOf(a context without a reservation) carries one")
	}
}

func TestNoBudget(t *testing.T) {
	b := memlimit.NewBudget(0, memlimit.BudgetOptions{})
	if b != nil || b.Size() != 0 || b.Held() != 0 {
		t.Errorf("NewBudget(0) = %v (size %d, held %d), want nil, no budget", b, b.Size(), b.Held())
	}
	ctx, end := b.Begin(context.Background())
	defer end()
	if err := memlimit.Reserve(ctx, 1<<40, "x"); err != nil {
		t.Errorf("memlimit.Reserve() with no budget = %v, want nil", err)
	}
}
