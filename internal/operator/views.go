package operator

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/queue"
)

// QueueView is a queue as the debug API lists it.
type QueueView = queue.QueueInfo

// WriteQueuesText prints queues the way `queue list -o text` shows them.
func WriteQueuesText(w io.Writer, qs []QueueView) error {
	for i, q := range qs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "queue %s: %d task(s)\n", q.Name, len(q.Tasks))
		for n, t := range q.Tasks {
			fmt.Fprintf(w, "%3d. %-8s %s", n+1, t.Status, t.Description)
			if t.Attempts > 0 {
				fmt.Fprintf(w, " (failed %d time(s): %s)", t.Attempts, firstLine(t.LastError))
			}
			fmt.Fprintln(w)
		}
	}
	return nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// ModuleView is a module as the debug API lists it.
type ModuleView struct {
	Name  string `json:"name"`
	Key   string `json:"key"`
	Order int    `json:"order"`
	Path  string `json:"path"`
	// State is enabled, disabled or failed.
	State string `json:"state"`
	// Reason says why a module is enabled or disabled, naming the source
	// that decided (values.yaml, a global hook's patch, the config store,
	// the enabled script), or what failed.
	Reason string `json:"reason,omitempty"`
	// Hooks are the module's hooks, by name.
	Hooks []string `json:"hooks,omitempty"`
	// Release is the revision and checksum of the module's release.
	Revision int    `json:"revision,omitempty"`
	Checksum string `json:"checksum,omitempty"`
}

// ExplainRow is one key of `values --explain`: its value, the layer that
// set it, and the values it overrode, earliest first.
type ExplainRow struct {
	Path     string        `json:"path"`
	Value    any           `json:"value"`
	Layer    string        `json:"layer"`
	Overrode []ExplainLost `json:"overrode,omitempty"`
}

// ExplainLost is a value a later layer replaced.
type ExplainLost struct {
	Value any    `json:"value"`
	Layer string `json:"layer"`
}

// WriteExplainText prints explain rows as a table.
func WriteExplainText(w io.Writer, rows []ExplainRow) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVALUE\tSET BY\tOVERRODE")
	for _, r := range rows {
		var lost []string
		for _, l := range r.Overrode {
			lost = append(lost, compact(l.Value)+" ("+l.Layer+")")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Path, compact(r.Value), r.Layer, strings.Join(lost, "; "))
	}
	return tw.Flush()
}

// compact renders a value on one line, bounded.
func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	s := string(b)
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

// HookView is a hook and its parsed configuration as the debug API lists
// it (`strata operator hook list`).
type HookView struct {
	// Name is the hook's name, as in logs and metrics.
	Name string `json:"name"`
	// Module is a module hook's module; "" for a global hook.
	Module string `json:"module,omitempty"`
	Path   string `json:"path"`
	// Batch is, for a hook of a module-sdk batch file (Path), its key
	// there: it runs as `Path hook run BATCH` ("ready": `hook ready`).
	Batch string `json:"batch,omitempty"`
	// Config is the configuration the hook printed for --config, in
	// shell-operator's v1 shape with every default filled in.
	Config map[string]any `json:"config"`
	// Monitors is true while the hook's kubernetes bindings watch.
	Monitors bool `json:"monitors,omitempty"`
}

// hookConfigView writes a parsed hook configuration back in
// shell-operator's v1 shape, defaults filled in.
func hookConfigView(c *hook.Config) map[string]any {
	out := map[string]any{"configVersion": c.Version}
	webhookConfigView(c, out)
	for b, order := range c.Orders {
		out[string(b)] = order
	}
	if len(c.Schedules) > 0 {
		var list []any
		for _, s := range c.Schedules {
			m := map[string]any{"name": s.Name, "crontab": s.Crontab, "allowFailure": s.AllowFailure, "queue": s.Queue}
			putNonEmpty(m, "group", s.Group)
			putNonEmpty(m, "includeSnapshotsFrom", s.IncludeSnapshotsFrom)
			list = append(list, m)
		}
		out["schedule"] = list
	}
	if len(c.Kubernetes) > 0 {
		var list []any
		for _, k := range c.Kubernetes {
			m := map[string]any{
				"name": k.Name, "apiVersion": k.APIVersion, "kind": k.Kind,
				"executeHookOnEvent":           nonNilSlice(k.ExecuteHookOnEvent),
				"executeHookOnSynchronization": k.ExecuteHookOnSynchronization,
				"waitForSynchronization":       k.WaitForSynchronization,
				"keepFullObjectsInMemory":      k.KeepFullObjectsInMemory,
				"allowFailure":                 k.AllowFailure,
				"queue":                        k.Queue,
			}
			if len(k.NameSelector) > 0 {
				m["nameSelector"] = map[string]any{"matchNames": k.NameSelector}
			}
			if k.LabelSelector != nil {
				m["labelSelector"] = labelSelectorView(k.LabelSelector)
			}
			if len(k.FieldSelector) > 0 {
				var exprs []any
				for _, f := range k.FieldSelector {
					exprs = append(exprs, map[string]any{"field": f.Field, "operator": f.Operator, "value": f.Value})
				}
				m["fieldSelector"] = map[string]any{"matchExpressions": exprs}
			}
			if ns := k.Namespace; ns != nil {
				n := map[string]any{}
				if len(ns.NameSelector) > 0 {
					n["nameSelector"] = map[string]any{"matchNames": ns.NameSelector}
				}
				if ns.LabelSelector != nil {
					n["labelSelector"] = labelSelectorView(ns.LabelSelector)
				}
				m["namespace"] = n
			}
			putNonEmpty(m, "jqFilter", k.JqFilter)
			putNonEmpty(m, "group", k.Group)
			putNonEmpty(m, "includeSnapshotsFrom", k.IncludeSnapshotsFrom)
			list = append(list, m)
		}
		out["kubernetes"] = list
	}
	if s := c.Settings; s != nil {
		out["settings"] = map[string]any{"executionMinInterval": s.ExecutionMinInterval.String(), "executionBurst": s.ExecutionBurst}
	}
	return out
}

func labelSelectorView(l *hook.LabelSelector) map[string]any {
	m := map[string]any{}
	if len(l.MatchLabels) > 0 {
		m["matchLabels"] = l.MatchLabels
	}
	if len(l.MatchExpressions) > 0 {
		var exprs []any
		for _, r := range l.MatchExpressions {
			e := map[string]any{"key": r.Key, "operator": r.Operator}
			putNonEmpty(e, "values", r.Values)
			exprs = append(exprs, e)
		}
		m["matchExpressions"] = exprs
	}
	return m
}

func putNonEmpty[T string | []string](m map[string]any, key string, v T) {
	if len(v) > 0 {
		m[key] = v
	}
}

func nonNilSlice[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// WriteHooksText prints hooks as `hook list -o text` shows them: one line
// a hook with its bindings.
func WriteHooksText(w io.Writer, hs []HookView) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HOOK\tMODULE\tBINDINGS")
	for _, h := range hs {
		var b []string
		for _, k := range slices.Sorted(maps.Keys(h.Config)) {
			switch v := h.Config[k].(type) {
			case []any:
				for _, e := range v {
					name, _ := e.(map[string]any)["name"].(string)
					b = append(b, k+":"+name)
				}
			case float64:
				b = append(b, fmt.Sprintf("%s(%g)", k, v))
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", h.Name, cmpOr(h.Module, "(global)"), strings.Join(b, " "))
	}
	return tw.Flush()
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// WriteHistoryText prints the task history as `queue history -o text`
// shows it, oldest first.
func WriteHistoryText(w io.Writer, runs []queue.RunInfo) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STARTED\tQUEUE\tOUTCOME\tDURATION\tTASK")
	for _, r := range runs {
		task := r.Description
		if r.Error != "" {
			task += ": " + firstLine(r.Error)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.3fs\t%s\n", r.Started.UTC().Format("15:04:05.000"), r.Queue, r.Outcome, r.Duration, task)
	}
	return tw.Flush()
}
