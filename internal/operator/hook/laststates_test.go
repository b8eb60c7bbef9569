package hook_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/operator/hook"
)

func objEvent(binding string, ev hook.WatchEvent, name string, v int) hook.BindingContext {
	obj := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"namespace":"ns","name":%q},"v":%d}`, name, v)
	return hook.BindingContext{BindingType: hook.Kubernetes, Binding: binding, Type: hook.TypeEvent, WatchEvent: ev,
		Objects: []hook.ObjectResult{{Object: []byte(obj)}}}
}

func describe(ctxs []hook.BindingContext) string {
	var s []string
	for _, c := range ctxs {
		d := c.Binding + ":" + string(c.Type)
		if c.Type == hook.TypeEvent {
			d += ":" + string(c.WatchEvent)
			if len(c.Objects) == 1 && c.Objects[0].Object != nil {
				o := string(c.Objects[0].Object)
				d += ":" + o[strings.Index(o, `"name":"`)+8:strings.Index(o, `"},`)] + "@" + o[strings.LastIndex(o, ":")+1:len(o)-1]
			}
		}
		s = append(s, d)
	}
	return strings.Join(s, " ")
}

func TestLastStates(t *testing.T) {
	noObject := hook.BindingContext{BindingType: hook.Kubernetes, Binding: "b", Type: hook.TypeEvent, WatchEvent: hook.Modified,
		Objects: []hook.ObjectResult{{FilterResult: []byte(`"x"`)}}}
	sync := hook.BindingContext{BindingType: hook.Kubernetes, Binding: "b", Type: hook.TypeSynchronization}
	ctxs := []hook.BindingContext{
		sync,
		objEvent("b", hook.Added, "p1", 1),
		objEvent("b", hook.Modified, "p2", 1),
		objEvent("b", hook.Modified, "p1", 2),
		noObject,
		objEvent("other", hook.Modified, "p1", 1), // another binding: its own
		objEvent("b", hook.Modified, "p2", 2),
		objEvent("b", hook.Deleted, "p3", 1),
		objEvent("b", hook.Modified, "p1", 3),
		noObject,
	}
	if got := hook.LastStates(ctxs, 1<<20); len(got) != len(ctxs) {
		t.Errorf("under the budget: %d contexts, want all %d", len(got), len(ctxs))
	}
	got := describe(hook.LastStates(ctxs, 10))
	// p1 and p2 at their last change, p1 Added (the hook has not seen
	// it); contexts without an object, another binding's and the
	// Synchronization stay.
	want := "b:Synchronization b:Event:Modified other:Event:Modified:p1@1 b:Event:Modified:p2@2 b:Event:Deleted:p3@1 b:Event:Added:p1@3 b:Event:Modified"
	if got != want {
		t.Errorf("LastStates =\n%s\nwant\n%s", got, want)
	}
	if describe(ctxs) != "b:Synchronization b:Event:Added:p1@1 b:Event:Modified:p2@1 b:Event:Modified:p1@2 b:Event:Modified other:Event:Modified:p1@1 b:Event:Modified:p2@2 b:Event:Deleted:p3@1 b:Event:Modified:p1@3 b:Event:Modified" {
		t.Errorf("LastStates changed its input: %s", describe(ctxs))
	}
}
