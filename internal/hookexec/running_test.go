package hookexec_test

import (
	"context"
	"testing"
	"time"

	"github.com/strata-dev/strata/internal/hookexec"
)

func TestRunning(t *testing.T) {
	var r hookexec.Running
	if n := r.Wait(context.Background()); n != 0 {
		t.Fatalf("Wait() with nothing running = %d, want 0", n)
	}
	r.Add()
	r.Add()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if n := r.Wait(ctx); n != 2 {
		t.Fatalf("Wait() past its deadline with two running = %d, want 2", n)
	}
	r.Done()
	go r.Done()
	if n := r.Wait(context.Background()); n != 0 {
		t.Fatalf("Wait() after both finished = %d, want 0", n)
	}
	r.Add() // counting again after idle works
	r.Done()
	if n := r.Wait(context.Background()); n != 0 {
		t.Fatalf("Wait() after a second round = %d, want 0", n)
	}
}
