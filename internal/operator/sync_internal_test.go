package operator

import (
	"fmt"
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/queue"
)

// TestSyncTasksGroups: shell-operator combines the Synchronization runs of
// one hook that follow a grouped one (in the same place: now in main, or
// one named queue) and keeps one Group context per group; ungrouped
// bindings before a grouped one keep runs of their own.
func TestSyncTasksGroups(t *testing.T) {
	type b struct {
		name, group, queue string
		wait               bool
	}
	for _, tc := range []struct {
		name     string
		bindings []b
		oneShot  bool
		main     string // the runs now in main: [binding/type/group ...] each
		queued   string // the runs handed to queues: queue:[...] each
	}{
		{"one group, two bindings", []b{{"a", "g", "", true}, {"b", "g", "", true}}, false, "[a,b:Group:g]", ""},
		{"two groups", []b{{"a", "g", "", true}, {"b", "g", "", true}, {"c", "h", "", true}}, false, "[a,b,c:Group:g Group:h]", ""},
		{"ungrouped alone", []b{{"a", "", "", true}, {"b", "", "", true}}, false, "[a:Synchronization:] [b:Synchronization:]", ""},
		{"ungrouped before a group", []b{{"a", "", "", true}, {"b", "g", "", true}, {"c", "g", "", true}}, false, "[a:Synchronization:] [b,c:Group:g]", ""},
		{"group then ungrouped", []b{{"a", "g", "", true}, {"b", "", "", true}}, false, "[a,b:Group:g Synchronization:]", ""},
		{"group in a named queue", []b{{"a", "g", "q", false}, {"b", "g", "q", false}, {"c", "g", "", true}}, false, "[c:Group:g]", "q:[a,b:Group:g]"},
		{"other queues apart", []b{{"a", "g", "q", false}, {"b", "g", "r", false}}, false, "", "q:[a:Group:g] r:[b:Group:g]"},
		{"one-shot: all now", []b{{"a", "g", "q", false}, {"b", "g", "", true}}, true, "[a,b:Group:g]", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			he := &hookEntry{h: &hook.Hook{Name: "h.sh"}, cfg: &hook.Config{}}
			for _, bb := range tc.bindings {
				he.cfg.Kubernetes = append(he.cfg.Kubernetes, &hook.KubernetesBinding{Name: bb.name, Group: bb.group, Queue: bb.queue,
					ExecuteHookOnSynchronization: true, WaitForSynchronization: bb.wait})
				he.syncs = append(he.syncs, hook.BindingContext{BindingType: hook.Kubernetes, Binding: bb.name, Type: hook.TypeSynchronization, Group: bb.group})
			}
			var queued []*queue.Task
			main, err := syncTasks(he, "OperatorStartup", tc.oneShot, func(ts ...*queue.Task) error {
				queued = append(queued, ts...)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := describeRuns(main, false); got != tc.main {
				t.Errorf("runs in main %q, want %q", got, tc.main)
			}
			if got := describeRuns(queued, true); got != tc.queued {
				t.Errorf("queued runs %q, want %q", got, tc.queued)
			}
		})
	}
}

func describeRuns(ts []*queue.Task, withQueue bool) string {
	var out []string
	for _, tk := range ts {
		d := tk.Data.(*hookRun)
		_, names, _ := strings.Cut(tk.Description, "Synchronization ")
		var ctxs []string
		for _, c := range d.contexts {
			typ := string(c.Type)
			if c.Group != "" {
				typ = "Group"
			}
			ctxs = append(ctxs, fmt.Sprintf("%s:%s", typ, c.Group))
		}
		s := "[" + strings.ReplaceAll(names, ", ", ",") + ":" + strings.Join(ctxs, " ") + "]"
		if withQueue {
			s = tk.Queue + ":" + s
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}
