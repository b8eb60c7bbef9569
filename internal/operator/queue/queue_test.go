package queue_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-dev/strata/internal/operator/queue"
)

// recorder is a handler that logs the tasks it runs and fails those
// listed in failures as many times as given.
type recorder struct {
	mu       sync.Mutex
	log      []string
	failures map[string]int
	next     map[string][]*queue.Task
}

func (r *recorder) handle(_ context.Context, t *queue.Task) ([]*queue.Task, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, t.Description)
	if r.failures[t.Description] > 0 {
		r.failures[t.Description]--
		return nil, fmt.Errorf("%s failed", t.Description)
	}
	return r.next[t.Description], nil
}

func (r *recorder) got() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.log, " ")
}

func run(t *testing.T, r *recorder, opts queue.Options, tasks ...*queue.Task) *queue.Set {
	t.Helper()
	if opts.Backoff == nil {
		opts.Backoff = func(int) time.Duration { return time.Millisecond }
	}
	s := queue.New(r.handle, opts)
	if err := s.Add(tasks...); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := s.WaitIdle(wctx); err != nil {
		t.Fatalf("queues never became idle: %v; log: %s", err, r.got())
	}
	return s
}

func task(desc string) *queue.Task { return &queue.Task{Description: desc, Kind: "Test"} }

func TestQueue(t *testing.T) {
	tests := []struct {
		name     string
		failures map[string]int
		next     map[string][]*queue.Task
		tasks    []*queue.Task
		want     string
	}{
		{"fifo", nil, nil, []*queue.Task{task("a"), task("b"), task("c")}, "a b c"},
		{"failed task stays at the head", map[string]int{"b": 2}, nil, []*queue.Task{task("a"), task("b"), task("c")}, "a b b b c"},
		{"follow-ups go to the head in order", nil, map[string][]*queue.Task{"a": {task("a1"), task("a2")}}, []*queue.Task{task("a"), task("b")}, "a a1 a2 b"},
		{"follow-ups of a failed run are dropped", map[string]int{"a": 1}, map[string][]*queue.Task{"a": {task("a1")}}, []*queue.Task{task("a"), task("b")}, "a a a1 b"},
		{"allowFailure forgives", map[string]int{"a": 5}, nil, []*queue.Task{{Description: "a", AllowFailure: true}, task("b")}, "a b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{failures: tc.failures, next: tc.next}
			run(t, r, queue.Options{}, tc.tasks...)
			if got := r.got(); got != tc.want {
				t.Errorf("ran %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAllowFailureReported(t *testing.T) {
	r := &recorder{failures: map[string]int{"a": 1, "b": 1}}
	var mu sync.Mutex
	var got []string
	opts := queue.Options{OnDone: func(t *queue.Task, err error, allowed bool, _ time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, fmt.Sprintf("%s:%v:%v", t.Description, err != nil, allowed))
	}}
	run(t, r, opts, &queue.Task{Description: "a", AllowFailure: true}, task("b"))
	want := "a:true:true b:true:false b:false:false"
	if s := strings.Join(got, " "); s != want {
		t.Errorf("OnDone calls %q, want %q", s, want)
	}
}

func TestNamedQueuesIndependent(t *testing.T) {
	// A task failing forever in one queue does not hold up another queue.
	block := make(chan struct{})
	var mu sync.Mutex
	var ran []string
	h := func(_ context.Context, t *queue.Task) ([]*queue.Task, error) {
		if t.Queue == "stuck" {
			<-block
			return nil, errors.New("stuck")
		}
		mu.Lock()
		ran = append(ran, t.Description)
		mu.Unlock()
		return nil, nil
	}
	s := queue.New(h, queue.Options{Backoff: func(int) time.Duration { return time.Hour }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	defer func() { cancel(); close(block); <-done }()
	if err := s.Add(&queue.Task{Queue: "stuck", Description: "x"}, &queue.Task{Description: "m1"}, &queue.Task{Queue: "other", Description: "o1"}); err != nil {
		t.Fatal(err)
	}
	for s.Len(queue.Main) > 0 || s.Len("other") > 0 {
		<-s.Changed()
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ran) != 2 {
		t.Errorf("ran %v, want m1 and o1", ran)
	}
	names := []string{}
	for _, q := range s.Snapshot() {
		names = append(names, q.Name)
	}
	if got := strings.Join(names, ","); got != "main,stuck,other" {
		t.Errorf("Snapshot queues %s, want main,stuck,other", got)
	}
}

func TestCompaction(t *testing.T) {
	// While "gate" runs, three runs of hook h are added: they compact into
	// the first one, whose Data collects all three contexts.
	gate := make(chan struct{})
	var mu sync.Mutex
	var ran []string
	h := func(_ context.Context, t *queue.Task) ([]*queue.Task, error) {
		if t.Description == "gate" {
			<-gate
		}
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, fmt.Sprintf("%s%v", t.Description, t.Data))
		return nil, nil
	}
	merge := func(older, newer *queue.Task) {
		older.Data = append(older.Data.([]string), newer.Data.([]string)...)
	}
	s := queue.New(h, queue.Options{Merge: merge})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	if err := s.Add(task("gate")); err != nil {
		t.Fatal(err)
	}
	for snapshotStatus(s) != "running" {
		<-s.Changed()
	}
	for _, ctxName := range []string{"e1", "e2", "e3"} {
		if err := s.Add(&queue.Task{Description: "h", CompactKey: "h", Data: []string{ctxName}}, task("other-"+ctxName)); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.Len(queue.Main); n != 5 {
		t.Errorf("Len(main) = %d, want 5 (gate, one h, three others)", n)
	}
	close(gate)
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := s.WaitIdle(wctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := "gate<nil> h[e1 e2 e3] other-e1<nil> other-e2<nil> other-e3<nil>"
	if got := strings.Join(ran, " "); got != want {
		t.Errorf("ran %q, want %q", got, want)
	}
}

func snapshotStatus(s *queue.Set) string {
	for _, q := range s.Snapshot() {
		if q.Name == queue.Main && len(q.Tasks) > 0 {
			return q.Tasks[0].Status
		}
	}
	return ""
}

func TestCompactionWithoutMergeDrops(t *testing.T) {
	s := queue.New(func(context.Context, *queue.Task) ([]*queue.Task, error) { return nil, nil }, queue.Options{})
	for range 3 {
		if err := s.Add(&queue.Task{Description: "reload", CompactKey: "reload"}); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.Len(queue.Main); n != 1 {
		t.Errorf("Len(main) = %d, want 1", n)
	}
}

func TestMaxQueues(t *testing.T) {
	s := queue.New(func(context.Context, *queue.Task) ([]*queue.Task, error) { return nil, nil }, queue.Options{MaxQueues: 2})
	if err := s.Add(&queue.Task{Queue: "a"}); err != nil {
		t.Fatal(err)
	}
	err := s.Add(&queue.Task{Queue: "b"})
	if !errors.Is(err, queue.ErrTooManyQueues) {
		t.Errorf("Add to a third queue: %v, want ErrTooManyQueues", err)
	}
}

func TestFailingTaskVisible(t *testing.T) {
	h := func(context.Context, *queue.Task) ([]*queue.Task, error) { return nil, errors.New("exit status 1") }
	s := queue.New(h, queue.Options{Backoff: func(int) time.Duration { return time.Hour }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	if err := s.Add(task("bad")); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	ti, err := s.WaitFailing(wctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if ti.Description != "bad" || ti.Status != "backoff" || ti.Attempts != 1 || ti.LastError != "exit status 1" {
		t.Errorf("WaitFailing = %+v", ti)
	}
	// A task in backoff is not compacted into.
	if s.Pending(queue.Main, func(*queue.Task) bool { return true }) {
		t.Error("Pending reports the task in backoff")
	}
	// Has sees it.
	if !s.Has(queue.Main, func(t *queue.Task) bool { return t.Description == "bad" }) {
		t.Error("Has does not report the task in backoff")
	}
	if s.Has(queue.Main, func(t *queue.Task) bool { return t.Description == "other" }) {
		t.Error("Has reports a task that is not there")
	}
}

func TestExponential(t *testing.T) {
	b := queue.Exponential(5*time.Second, 30*time.Second)
	tests := []struct {
		attempt int
		base    time.Duration
	}{{1, 5 * time.Second}, {2, 10 * time.Second}, {3, 20 * time.Second}, {4, 30 * time.Second}, {10, 30 * time.Second}}
	for _, tc := range tests {
		for range 50 {
			d := b(tc.attempt)
			if lo, hi := tc.base-tc.base/10, tc.base+tc.base/10; d < lo || d > hi {
				t.Fatalf("Exponential(5s,30s)(%d) = %v, want within [%v, %v]", tc.attempt, d, lo, hi)
			}
		}
	}
}

func TestPanicIsAFailure(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	h := func(context.Context, *queue.Task) ([]*queue.Task, error) {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n == 1 {
			panic("boom")
		}
		return nil, nil
	}
	var errs []string
	opts := queue.Options{Backoff: func(int) time.Duration { return time.Millisecond }, OnDone: func(_ *queue.Task, err error, _ bool, _ time.Duration) {
		if err != nil {
			errs = append(errs, err.Error())
		}
	}}
	s := queue.New(h, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	if err := s.Add(task("p")); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := s.WaitIdle(wctx); err != nil {
		t.Fatal(err)
	}
	if len(errs) != 1 || errs[0] != "task p panicked: boom" {
		t.Errorf("errors %q, want one panic turned into a failure, then a successful retry", errs)
	}
}

// TestOnAction checks that every low-level action on a queue is reported
// under addon-operator's action names.
func TestOnAction(t *testing.T) {
	var mu sync.Mutex
	counts := map[string]int{}
	r := &recorder{next: map[string][]*queue.Task{"a": {{Description: "a1"}, {Description: "a2"}}}}
	s := queue.New(r.handle, queue.Options{OnAction: func(q, action string, took time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		if took < 0 {
			t.Errorf("OnAction(%s, %s) took %v", q, action, took)
		}
		counts[q+" "+action]++
	}})
	if err := s.Add(&queue.Task{Description: "a"}, &queue.Task{Description: "b", Queue: "other"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := s.WaitIdle(wctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done // every worker has returned: its reports are in
	want := map[string]int{
		"main AddLast": 1, "main GetFirst": 3, "main RemoveFirst": 3, "main AddFirst": 1,
		"other AddLast": 1, "other GetFirst": 1, "other RemoveFirst": 1,
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Errorf("actions = %v, want %v", counts, want)
	}
}

// A Neighbour task merges only into the last task of its queue, as
// shell-operator combines consecutive runs of one hook; without Neighbour
// it merges into any waiting task with its key.
func TestCompactionNeighbour(t *testing.T) {
	type add struct {
		key, data string
	}
	for _, tc := range []struct {
		name      string
		neighbour bool
		adds      []add
		want      string // the queue: description[data...] per task
	}{
		{"consecutive runs merge", true, []add{{"h", "e1"}, {"h", "e2"}, {"h", "e3"}}, "h[e1 e2 e3]"},
		{"another task in between", true, []add{{"h", "e1"}, {"g", "x"}, {"h", "e2"}}, "h[e1] g[x] h[e2]"},
		{"merge again after the other", true, []add{{"h", "e1"}, {"g", "x"}, {"h", "e2"}, {"h", "e3"}}, "h[e1] g[x] h[e2 e3]"},
		{"anywhere without Neighbour", false, []add{{"h", "e1"}, {"g", "x"}, {"h", "e2"}}, "h[e1 e2] g[x]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			merge := func(older, newer *queue.Task) {
				older.Data = append(older.Data.([]string), newer.Data.([]string)...)
			}
			s := queue.New(func(context.Context, *queue.Task) ([]*queue.Task, error) { return nil, nil }, queue.Options{Merge: merge})
			var tasks []*queue.Task
			for _, a := range tc.adds {
				tk := &queue.Task{Description: a.key, CompactKey: a.key, Neighbour: tc.neighbour, Data: []string{a.data}}
				if err := s.Add(tk); err != nil {
					t.Fatal(err)
				}
				if tk.ID() != 0 {
					tasks = append(tasks, tk)
				}
			}
			var got []string
			for _, tk := range tasks {
				got = append(got, fmt.Sprintf("%s%v", tk.Description, tk.Data))
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Errorf("queued %q, want %q", g, tc.want)
			}
			if n := s.Len(queue.Main); n != len(tasks) {
				t.Errorf("Len(main) = %d, want %d", n, len(tasks))
			}
		})
	}
}

// TestHistory: every finished run is remembered, oldest first, with its
// outcome and attempt; only the last Options.History runs are kept.
func TestHistory(t *testing.T) {
	r := &recorder{failures: map[string]int{"b": 1, "c": 1}}
	s := run(t, r, queue.Options{}, task("a"), task("b"), &queue.Task{Description: "c", Kind: "Test", AllowFailure: true, Queue: "q"})
	var got []string
	for _, h := range s.History() {
		got = append(got, fmt.Sprintf("%s/%s:%s#%d:%s", h.Queue, h.Description, h.Outcome, h.Attempt, h.Error))
		if h.Kind != "Test" || h.Started.IsZero() || h.Duration < 0 || h.ID == 0 {
			t.Errorf("history entry %+v lacks its kind, start, duration or id", h)
		}
	}
	// Queues run concurrently: compare as a set, and the order within main.
	want := map[string]bool{"main/a:succeeded#1:": true, "main/b:failed#1:b failed": true, "main/b:succeeded#2:": true, "q/c:allowedFailure#1:c failed": true}
	if len(got) != len(want) {
		t.Fatalf("History = %q, want the runs %v", got, want)
	}
	var mainOrder []string
	for _, g := range got {
		if !want[g] {
			t.Errorf("unexpected history entry %q", g)
		}
		if strings.HasPrefix(g, "main/") {
			mainOrder = append(mainOrder, g)
		}
	}
	if strings.Join(mainOrder, " ") != "main/a:succeeded#1: main/b:failed#1:b failed main/b:succeeded#2:" {
		t.Errorf("main's runs in the history: %q", mainOrder)
	}

	var tasks []*queue.Task
	for i := range 7 {
		tasks = append(tasks, task(fmt.Sprint(i)))
	}
	s = run(t, &recorder{}, queue.Options{History: 3}, tasks...)
	var last []string
	for _, h := range s.History() {
		last = append(last, h.Description)
	}
	if strings.Join(last, " ") != "4 5 6" {
		t.Errorf("History with room for 3 = %q, want the last three runs, oldest first", last)
	}
	if h := run(t, &recorder{}, queue.Options{History: -1}, task("a")).History(); len(h) != 0 {
		t.Errorf("History with History: -1 = %v, want none", h)
	}
}
