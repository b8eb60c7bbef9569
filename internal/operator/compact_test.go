package operator

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/queue"
)

// TestCompactHookRuns: repeated runs of one hook waiting in a queue become
// one run with every binding context, in order (a group keeps only its
// latest); repeated module runs become one, with onStartup if any asked.
func TestCompactHookRuns(t *testing.T) {
	block := make(chan struct{})
	var ran []*queue.Task
	h := func(_ context.Context, tk *queue.Task) ([]*queue.Task, error) {
		if tk.Kind == "gate" {
			<-block
		}
		ran = append(ran, tk)
		return nil, nil
	}
	qs := queue.New(h, queue.Options{Merge: mergeTasks})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { qs.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	if err := qs.Add(&queue.Task{Kind: "gate"}); err != nil {
		t.Fatal(err)
	}
	for qs.Snapshot()[0].Tasks[0].Status != "running" {
		<-qs.Changed()
	}
	he := &hookEntry{h: &hook.Hook{Name: "h.sh"}}
	ev := func(name, group string) *queue.Task {
		return &queue.Task{Kind: KindGlobalHookRun, CompactKey: "hook/h", Data: &hookRun{entry: he, binding: hook.Kubernetes, reacts: true,
			contexts: []hook.BindingContext{{Binding: name, Type: hook.TypeEvent, Group: group}}}}
	}
	if err := qs.Add(ev("a", ""), ev("b", "g"), ev("c", "g"), ev("d", ""), moduleRunTask("m", "x", false), moduleRunTask("m", "y", true)); err != nil {
		t.Fatal(err)
	}
	close(block)
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	if err := qs.WaitIdle(wctx); err != nil {
		t.Fatal(err)
	}
	if len(ran) != 3 {
		t.Fatalf("ran %d tasks, want 3 (gate, one hook run, one module run)", len(ran))
	}
	var got []string
	for _, c := range ran[1].Data.(*hookRun).contexts {
		got = append(got, c.Binding)
	}
	if want := "a c d"; strings.Join(got, " ") != want {
		t.Errorf("compacted contexts %q, want %q (b dropped: c is later in its group)", strings.Join(got, " "), want)
	}
	if mr := ran[2].Data.(*moduleRun); !mr.doStartup {
		t.Error("compacted module run lost doStartup")
	}
}
