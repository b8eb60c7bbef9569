package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// cliHandler prints a one-shot command's log records as a command-line
// tool does: `warning: message (key=value, …)` on stderr, with no time
// and no level column. Errors print as `error: …`, info and debug records
// (shown with --log-level) as `info: …` and `debug: …`.
type cliHandler struct {
	w     io.Writer
	level slog.Level
	mu    *sync.Mutex // shared by the handlers WithAttrs and WithGroup derive
	attrs []slog.Attr
	group string
}

func (h *cliHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *cliHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	switch {
	case r.Level >= slog.LevelError:
		b.WriteString("error: ")
	case r.Level >= slog.LevelWarn:
		b.WriteString("warning: ")
	case r.Level >= slog.LevelInfo:
		b.WriteString("info: ")
	default:
		b.WriteString("debug: ")
	}
	b.WriteString(r.Message)
	var kv []string
	add := func(a slog.Attr) bool {
		kv = appendAttr(kv, h.group, a)
		return true
	}
	for _, a := range h.attrs { // their keys hold their groups already
		kv = appendAttr(kv, "", a)
	}
	r.Attrs(add)
	if len(kv) > 0 {
		b.WriteString(" (")
		b.WriteString(strings.Join(kv, ", "))
		b.WriteString(")")
	}
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

// appendAttr appends a's key=value pairs, groups flattened with dots.
func appendAttr(kv []string, prefix string, a slog.Attr) []string {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return kv
	}
	key := a.Key
	if prefix != "" {
		key = prefix + "." + key
	}
	if a.Value.Kind() == slog.KindGroup {
		p := key
		if a.Key == "" {
			p = prefix
		}
		for _, g := range a.Value.Group() {
			kv = appendAttr(kv, p, g)
		}
		return kv
	}
	v := a.Value.String()
	if v == "" || strings.ContainsAny(v, " ,()=\"") {
		v = fmt.Sprintf("%q", v)
	}
	return append(kv, key+"="+v)
}

func (h *cliHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := h.clone()
	for _, a := range as {
		if h.group != "" {
			a.Key = h.group + "." + a.Key
		}
		c.attrs = append(c.attrs, a)
	}
	return c
}

func (h *cliHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := h.clone()
	if c.group != "" {
		name = c.group + "." + name
	}
	c.group = name
	return c
}

func (h *cliHandler) clone() *cliHandler {
	c := *h
	c.attrs = append([]slog.Attr(nil), h.attrs...)
	return &c
}
