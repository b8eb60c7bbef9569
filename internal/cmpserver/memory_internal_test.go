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
