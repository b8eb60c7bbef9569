package cmpserver

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestMemoryBudget(t *testing.T) {
	b := newMemoryBudget(100, "--memory-budget")
	bg := context.Background()

	t.Run("no budget in the context", func(t *testing.T) {
		if err := reserveMemory(bg, 1<<40, "x"); err != nil {
			t.Errorf("reserveMemory() without a reservation = %v, want nil", err)
		}
	})
	t.Run("larger than the budget", func(t *testing.T) {
		ctx, end := b.begin(bg)
		defer end()
		err := reserveMemory(ctx, 101, "reading the 7 bytes `cat` printed")
		if !errors.Is(err, ErrMemoryBudget) {
			t.Fatalf("reserveMemory(101 of 100) = %v, want ErrMemoryBudget", err)
		}
		for _, want := range []string{"`cat` printed", "--memory-budget", "split the application"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("reserveMemory(101 of 100) = %q, want it to name %q", err, want)
			}
		}
	})
	t.Run("waits for memory released", func(t *testing.T) {
		ctx1, end1 := b.begin(bg)
		if err := reserveMemory(ctx1, 60, "first"); err != nil {
			t.Fatal(err)
		}
		ctx2, end2 := b.begin(bg)
		defer end2()
		got := make(chan error, 1)
		go func() { got <- reserveMemory(ctx2, 60, "second") }()
		select {
		case err := <-got:
			t.Fatalf("second reservation of 60 of 100 with 60 held = %v before the first ended", err)
		case <-time.After(50 * time.Millisecond):
		}
		end1()
		if err := <-got; err != nil {
			t.Fatalf("second reservation after the first ended = %v", err)
		}
		if h := b.held.Load(); h != 60 {
			t.Errorf("held = %d, want 60", h)
		}
	})
	t.Run("deadline while waiting", func(t *testing.T) {
		ctx1, end1 := b.begin(bg)
		defer end1()
		if err := reserveMemory(ctx1, 40, "first"); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(bg, 20*time.Millisecond)
		defer cancel()
		ctx2, end2 := b.begin(ctx)
		defer end2()
		err := reserveMemory(ctx2, 70, "second")
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "waiting for") {
			t.Errorf("reserveMemory() past its deadline = %v, want a wait error with DeadlineExceeded", err)
		}
	})
	t.Run("once per request", func(t *testing.T) {
		ctx, end := b.begin(bg)
		defer end()
		if err := reserveMemory(ctx, 1, "first"); err != nil {
			t.Fatal(err)
		}
		if err := reserveMemory(ctx, 1, "again"); err == nil {
			t.Error("a second reservation of one request = nil, want an error")
		}
	})
	t.Run("output streamed, then its parse", func(t *testing.T) {
		ctx, end := b.begin(bg)
		grow := streamMemory(ctx, "`yes`")
		if err := grow(30); err != nil {
			t.Fatal(err)
		}
		if err := grow(20); err != nil {
			t.Fatal(err)
		}
		if err := reserveMemory(ctx, 40, "parsing"); err != nil {
			t.Fatalf("reserveMemory(40) with 50 streamed of 100 = %v", err)
		}
		if h := b.held.Load(); h != 90 {
			t.Errorf("held = %d, want 90", h)
		}
		end()
	})
	t.Run("stream refused past the budget", func(t *testing.T) {
		ctx, end := b.begin(bg)
		defer end()
		grow := streamMemory(ctx, "`yes`")
		if err := grow(64); err != nil {
			t.Fatal(err)
		}
		err := grow(64)
		if !errors.Is(err, ErrMemoryBudget) || !strings.Contains(err.Error(), "`yes` printed 0.0 MiB and went on") {
			t.Errorf("growing 64+64 of 100 = %v, want ErrMemoryBudget naming the command", err)
		}
	})
	t.Run("stream waits holding nothing when others hold the budget", func(t *testing.T) {
		ctx1, end1 := b.begin(bg)
		if err := reserveMemory(ctx1, 60, "first"); err != nil {
			t.Fatal(err)
		}
		ctx, end := b.begin(bg)
		defer end()
		grow := streamMemory(ctx, "`cat`")
		if err := grow(20); err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 1)
		go func() { got <- grow(30) }()
		// It gave back its 20 while it waits for 50.
		deadline := time.Now().Add(10 * time.Second)
		for b.held.Load() != 60 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if h := b.held.Load(); h != 60 {
			t.Errorf("held while the stream waits = %d, want 60: it must wait holding nothing", h)
		}
		select {
		case err := <-got:
			t.Fatalf("growing 30 with 60+20 of 100 held returned %v before the first request ended", err)
		default:
		}
		end1()
		if err := <-got; err != nil {
			t.Fatalf("growing after the first request ended = %v", err)
		}
		if h := b.held.Load(); h != 50 {
			t.Errorf("held = %d, want 50", h)
		}
	})
	t.Run("stream waiting past its deadline", func(t *testing.T) {
		ctx1, end1 := b.begin(bg)
		defer end1()
		if err := reserveMemory(ctx1, 90, "first"); err != nil {
			t.Fatal(err)
		}
		short, cancel := context.WithTimeout(bg, 50*time.Millisecond)
		defer cancel()
		ctx, end := b.begin(short)
		defer end()
		err := streamMemory(ctx, "`yes`")(30)
		if !errors.Is(err, ErrMemoryBudget) || !strings.Contains(err.Error(), "held by other requests") || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("growing 30 with 90 of 100 held until the deadline = %v, want ErrMemoryBudget saying others hold it", err)
		}
	})
	t.Run("the parse waits holding nothing", func(t *testing.T) {
		ctx1, end1 := b.begin(bg)
		if err := reserveMemory(ctx1, 50, "first"); err != nil {
			t.Fatal(err)
		}
		ctx2, end2 := b.begin(bg)
		defer end2()
		if err := streamMemory(ctx2, "`cat`")(30); err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 1)
		go func() { got <- reserveMemory(ctx2, 40, "second") }()
		// It gave back its 30 while it waits for 70.
		deadline := time.Now().Add(10 * time.Second)
		for b.held.Load() != 50 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if h := b.held.Load(); h != 50 {
			t.Errorf("held while the second waits = %d, want 50: it must wait holding nothing", h)
		}
		end1()
		if err := <-got; err != nil {
			t.Fatalf("second reservation after the first ended = %v", err)
		}
		if h := b.held.Load(); h != 70 {
			t.Errorf("held = %d, want 70", h)
		}
	})
	t.Run("stream and parse larger than the budget", func(t *testing.T) {
		ctx1, end1 := b.begin(bg)
		defer end1()
		if err := reserveMemory(ctx1, 10, "first"); err != nil {
			t.Fatal(err)
		}
		ctx, end := b.begin(bg)
		defer end()
		if err := streamMemory(ctx, "`cat`")(60); err != nil {
			t.Fatal(err)
		}
		err := reserveMemory(ctx, 50, "parsing")
		if !errors.Is(err, ErrMemoryBudget) || !strings.Contains(err.Error(), "besides the") {
			t.Errorf("reserveMemory(50) with 60 streamed of 100 = %v, want ErrMemoryBudget", err)
		}
	})
	if h := b.held.Load(); h != 0 {
		t.Errorf("held after every request ended = %d, want 0", h)
	}
}

func TestNoMemoryBudget(t *testing.T) {
	var b *memoryBudget = newMemoryBudget(0, "")
	ctx, end := b.begin(context.Background())
	defer end()
	if err := reserveMemory(ctx, 1<<40, "x"); err != nil {
		t.Errorf("reserveMemory() with no budget = %v, want nil", err)
	}
}
