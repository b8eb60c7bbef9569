package operator

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

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
	// Reason says why a module is disabled (or what failed).
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
