package cli

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestCLILogLines(t *testing.T) {
	tests := []struct {
		name     string
		level    string
		explicit bool
		log      func(*slog.Logger)
		want     string
	}{
		{"warning", "info", false, func(l *slog.Logger) { l.Warn("chart has no icon") }, "warning: chart has no icon\n"},
		{"error", "info", false, func(l *slog.Logger) { l.Error("gone", "file", "a b.yaml") }, "error: gone (file=\"a b.yaml\")\n"},
		{"info hidden by default", "info", false, func(l *slog.Logger) { l.Info("started") }, ""},
		{"info shown when asked", "info", true, func(l *slog.Logger) { l.Info("started", "n", 3) }, "info: started (n=3)\n"},
		{"debug shown when asked", "debug", true, func(l *slog.Logger) { l.Debug("x") }, "debug: x\n"},
		{"attrs and groups", "info", false, func(l *slog.Logger) {
			l.With("plugin", "helm").WithGroup("req").Warn("slow", "took", 1500*time.Millisecond, slog.Group("app", "name", "web"))
		}, "warning: slow (plugin=helm, req.took=1.5s, req.app.name=web)\n"},
		{"empty value quoted", "info", false, func(l *slog.Logger) { l.Warn("m", "k", "") }, "warning: m (k=\"\")\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			g := &globals{stderr: &buf, logLevel: tc.level, logFormat: "text", oneShot: true, levelExplicit: tc.explicit}
			l, err := g.logger()
			if err != nil {
				t.Fatal(err)
			}
			tc.log(l)
			if got := buf.String(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestJSONLogDurations: JSON logs give durations in seconds, for servers
// and one-shot commands alike.
func TestJSONLogDurations(t *testing.T) {
	for _, oneShot := range []bool{false, true} {
		var buf bytes.Buffer
		g := &globals{stderr: &buf, logLevel: "info", logFormat: "json", oneShot: oneShot}
		l, err := g.logger()
		if err != nil {
			t.Fatal(err)
		}
		l.Warn("render", "duration", 1500*time.Millisecond)
		if got := buf.String(); !strings.Contains(got, `"duration":1.5}`) {
			t.Errorf("oneShot=%v: %s, want \"duration\":1.5", oneShot, got)
		}
	}
}

// TestServerLogRecords: servers keep log records (time, level, message).
func TestServerLogRecords(t *testing.T) {
	var buf bytes.Buffer
	g := &globals{stderr: &buf, logLevel: "info", logFormat: "text"}
	l, err := g.logger()
	if err != nil {
		t.Fatal(err)
	}
	l.Info("serving", "took", 2*time.Second)
	if got := buf.String(); !strings.HasPrefix(got, "time=") || !strings.Contains(got, "level=INFO msg=serving took=2s") {
		t.Errorf("server log = %q", got)
	}
}
