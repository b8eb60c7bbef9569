package operator

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"sigs.k8s.io/yaml"
)

// RenderResult is what Render found: each enabled module's manifests and
// values, the disabled modules and why, and the history of the converge.
type RenderResult struct {
	Modules  []RenderedModule
	Disabled []ModuleView
	History  []string
}

// RenderedModule is an enabled module's Helm output.
type RenderedModule struct {
	Name string
	// Manifests are the CRDs of crds/ then the rendered templates.
	Manifests []byte
	// Values is the JSON of the values Helm got.
	Values []byte
}

// Render runs start-up and one converge with local backends in a private
// workspace (a temporary directory, removed on return; the config file is
// read, never written) and returns what each module rendered. It stops at
// the first failed task, with its error (a hook's error holds the end of
// its stderr). Schedules do not fire and object files are read once.
func Render(ctx context.Context, s Settings, log *slog.Logger) (*RenderResult, error) {
	tmp, err := os.MkdirTemp("", "strata-operator-render-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	s.Local = true
	s.HA = false // one converge in private: no Lease to campaign for
	s.TempDir = tmp
	s.StateDir = filepath.Join(tmp, "releases")
	s.DebugUnixSocket, s.DebugHTTPAddr = "", ""
	s.ListenPort = ""
	e, err := New(s, log)
	if err != nil {
		return nil, err
	}
	e.oneShot = true
	return e.renderOnce(ctx)
}

// renderOnce starts the engine, waits for the first converge or the first
// failure, and stops it.
func (e *Engine) renderOnce(ctx context.Context) (*RenderResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
		e.back.close()
		_ = e.runner.Close()
	}()
	if err := e.start(ctx); err != nil {
		return nil, err
	}
	wg.Add(1)
	go func() { defer wg.Done(); e.queues.Run(ctx) }()
	failed := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		ti, err := e.queues.WaitFailing(ctx, 1)
		if err == nil {
			failed <- fmt.Errorf("%s failed: %s", ti.Description, ti.LastError)
		}
	}()
	select {
	case <-e.readyCh:
	case err := <-failed:
		return nil, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return e.result(), nil
}

// result collects the render result after a converge.
func (e *Engine) result() *RenderResult {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := &RenderResult{History: append([]string(nil), e.history...)}
	for _, m := range e.modules.Modules {
		ms := e.mods[m.Name]
		if ms.enabled {
			r.Modules = append(r.Modules, RenderedModule{Name: m.Name, Manifests: ms.manifests, Values: ms.helmValues})
			continue
		}
		r.Disabled = append(r.Disabled, ModuleView{Name: m.Name, Key: m.Key, Order: m.Order, Path: m.Path, State: "disabled", Reason: ms.reason})
	}
	return r
}

// Write prints the result: each enabled module's manifests (valuesOnly:
// its values, as YAML), then as YAML comments the disabled modules with
// their reasons and the history, so that the output stays a valid YAML
// stream.
func (r *RenderResult) Write(w io.Writer, valuesOnly bool) error {
	var buf bytes.Buffer
	for _, m := range r.Modules {
		fmt.Fprintf(&buf, "# module: %s\n", m.Name)
		if valuesOnly {
			y, err := yaml.JSONToYAML(m.Values)
			if err != nil {
				return fmt.Errorf("module %s: %w", m.Name, err)
			}
			buf.WriteString("---\n")
			buf.Write(y)
			continue
		}
		body := bytes.TrimLeft(m.Manifests, "\n")
		if len(body) == 0 {
			buf.WriteString("# (no manifests)\n")
			continue
		}
		if !bytes.HasPrefix(body, []byte("---")) {
			buf.WriteString("---\n")
		}
		buf.Write(body)
		if !bytes.HasSuffix(body, []byte("\n")) {
			buf.WriteByte('\n')
		}
	}
	if len(r.Disabled) > 0 {
		buf.WriteString("# disabled modules:\n")
		for _, d := range r.Disabled {
			fmt.Fprintf(&buf, "#   %s: %s\n", d.Name, oneLine(d.Reason))
		}
	}
	buf.WriteString("# lifecycle, in order:\n")
	for _, h := range r.History {
		fmt.Fprintf(&buf, "#   %s\n", oneLine(h))
	}
	_, err := w.Write(buf.Bytes())
	return err
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }
