package values

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/strata-dev/strata/internal/document"
)

// WriteExplanations writes explanations as text for people, or as YAML or
// JSON (a list of {path, value, deleted, from, overrode}) for programs.
func WriteExplanations(w io.Writer, exps []Explanation, format string) error {
	switch format {
	case "", "text":
		return writeExplanationText(w, exps)
	case string(document.YAML), string(document.JSON):
		list := make([]any, len(exps))
		for i, e := range exps {
			list[i] = explanationTree(e)
		}
		return document.Encode(w, list, document.Format(format))
	}
	return fmt.Errorf("unknown output format %q: use text, yaml or json", format)
}

func explanationTree(e Explanation) map[string]any {
	m := map[string]any{"path": e.Path.String(), "from": settingTree(e.Winner)}
	if e.Deleted {
		m["deleted"] = true
	} else {
		m["value"] = e.Value
	}
	if len(e.Overrode) > 0 {
		list := make([]any, len(e.Overrode))
		for i, s := range e.Overrode {
			list[i] = settingTree(s)
		}
		m["overrode"] = list
	}
	return m
}

func settingTree(s Setting) map[string]any {
	m := map[string]any{"layer": s.Layer, "position": int64(s.Position)}
	if s.Path != nil {
		m["path"] = s.Path.String()
	}
	if s.Source != "" {
		m["source"] = s.Source
	}
	if s.Line > 0 {
		m["line"] = int64(s.Line)
	}
	if s.Priority != nil {
		m["priority"] = int64(*s.Priority)
	}
	if s.Sensitive {
		m["sensitive"] = true
	}
	if s.Deleted {
		m["deleted"] = true
	} else {
		m["value"] = s.Value
	}
	return m
}

func writeExplanationText(w io.Writer, exps []Explanation) error {
	var b bytes.Buffer
	for _, e := range exps {
		if e.Deleted {
			fmt.Fprintf(&b, "%s (removed)\n", e.Path)
		} else {
			fmt.Fprintf(&b, "%s = %s\n", e.Path, inline(e.Value))
		}
		verb := "set by"
		if e.Winner.Deleted {
			verb = "removed by"
		}
		if w := e.Winner; w.Path != nil {
			// An enclosing key decided it: name that write.
			if w.Deleted {
				verb = w.Path.String() + " " + verb
			} else {
				verb = w.Path.String() + " = " + inline(w.Value) + " " + verb
			}
		}
		fmt.Fprintf(&b, "    %s %s\n", verb, DescribeOrigin(e.Winner.Origin))
		for _, s := range e.Overrode {
			fmt.Fprintf(&b, "    overrode %s from %s\n", setText(s), DescribeOrigin(s.Origin))
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// setText writes a setting as "value", "path = value" or "path (removed)".
func setText(s Setting) string {
	switch {
	case s.Path != nil && s.Deleted:
		return s.Path.String() + " (removed)"
	case s.Path != nil:
		return s.Path.String() + " = " + inline(s.Value)
	case s.Deleted:
		return "(removed)"
	}
	return inline(s.Value)
}

// DescribeOrigin names a layer for people: "prod.yaml:4 [layer 2, priority 50]".
func DescribeOrigin(o Origin) string {
	var b strings.Builder
	b.WriteString(o.Layer)
	if o.Source != "" && !strings.Contains(o.Layer, o.Source) {
		b.WriteString(" (" + o.Source)
		if o.Line > 0 {
			b.WriteString(":" + strconv.Itoa(o.Line))
		}
		b.WriteString(")")
	} else if o.Line > 0 {
		b.WriteString(":" + strconv.Itoa(o.Line))
	}
	fmt.Fprintf(&b, " [layer %d", o.Position)
	if o.Priority != nil {
		fmt.Fprintf(&b, ", priority %d", *o.Priority)
	}
	b.WriteString("]")
	return b.String()
}

// inline writes a value on one line, as JSON: strings quoted, so that "1"
// and 1 differ.
func inline(v any) string {
	if v == Redacted {
		return Redacted
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return document.Clip(strings.TrimSuffix(b.String(), "\n"), 200)
}
