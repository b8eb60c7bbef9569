package operator

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/queue"
)

// bigObject is the JSON of ConfigMap ns/name holding about size bytes,
// version v.
func bigObject(name string, v, size int) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"ns","name":%q,"resourceVersion":"%d"},"data":{"blob":%q}}`,
		name, v, strings.Repeat("x", size))
}

func eventTask(he *hookEntry, binding string, ev hook.WatchEvent, obj []byte) *queue.Task {
	c := hook.BindingContext{BindingType: hook.Kubernetes, Binding: binding, Type: hook.TypeEvent, WatchEvent: ev,
		Objects: []hook.ObjectResult{{Object: obj}}}
	return &queue.Task{Kind: KindGlobalHookRun, CompactKey: "hook/h", Data: &hookRun{entry: he, binding: hook.Kubernetes,
		contexts: []hook.BindingContext{c}, reacts: true, queued: hook.QueuedBytes([]hook.BindingContext{c})}}
}

// TestCompactKeepsLastStates is the case: 300 changes of an 800 KB
// watched object while its hook runs. Before, the queued run held every
// change's object (~1 MB a change, 327 MB heap); now, past 16 MiB, it
// holds the last state of the object.
func TestCompactKeepsLastStates(t *testing.T) {
	he := &hookEntry{h: &hook.Hook{Name: "h.sh"}}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	queued := eventTask(he, "cms", hook.Added, bigObject("big", 0, 800<<10))
	for v := 1; v <= 300; v++ {
		mergeTasks(queued, eventTask(he, "cms", hook.Modified, bigObject("big", v, 800<<10)))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	run := queued.Data.(*hookRun)
	t.Logf("300 changes of an 800 KB object: the queued run holds %d contexts, %d MiB of objects; heap +%d MiB",
		len(run.contexts), hook.QueuedBytes(run.contexts)>>20, held>>20)
	if b := hook.QueuedBytes(run.contexts); b > maxQueuedEventBytes+(1<<20) {
		t.Errorf("the queued run holds %d MiB of objects, want at most the budget of %d MiB", b>>20, maxQueuedEventBytes>>20)
	}
	if held > 64<<20 {
		t.Errorf("the queued run grew the heap by %d MiB, want far less than 300 copies (240 MB)", held>>20)
	}
	last := run.contexts[len(run.contexts)-1]
	if !strings.Contains(string(last.Objects[0].Object), `"resourceVersion":"300"`) {
		t.Errorf("the last context is not the object's last state: %.120s", last.Objects[0].Object)
	}
	if run.contexts[0].WatchEvent != hook.Added {
		t.Errorf("the object's first context is %s, want Added (the hook has not seen it before)", run.contexts[0].WatchEvent)
	}
	runtime.KeepAlive(queued)
}

// TestCompactBelowBudgetKeepsEveryEvent: under the budget every event is
// given with its object, as shell-operator does.
func TestCompactBelowBudgetKeepsEveryEvent(t *testing.T) {
	he := &hookEntry{h: &hook.Hook{Name: "h.sh"}}
	queued := eventTask(he, "cms", hook.Added, bigObject("a", 0, 1<<10))
	for v := 1; v <= 300; v++ {
		mergeTasks(queued, eventTask(he, "cms", hook.Modified, bigObject("a", v, 1<<10)))
	}
	if n := len(queued.Data.(*hookRun).contexts); n != 301 {
		t.Errorf("%d contexts, want all 301 events", n)
	}
}
