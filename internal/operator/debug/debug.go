// Package debug is the operator's debug API: HTTP over a unix socket
// (DEBUG_UNIX_SOCKET), as addon-operator serves it, and the client the
// `strata operator queue|global|module` commands use.
//
// Every endpoint answers GET with JSON (or YAML for a path ending in
// .yaml):
//
//	/queue/list.json                     tasks of every queue
//	/queue/history.json                  the last finished task runs, oldest first
//	/hook/list.json                      every hook with its parsed configuration
//	/global/{list|values|config|patches|snapshots}.json
//	/module/list.json                    modules, enabled or not, and why
//	/module/NAME/{values|config|patches|render|snapshots}.json
//
// values takes ?explain=true for the provenance of every key; a module's
// values and config take ?global=true for the global section beside it.
// Errors are JSON {"error": "..."} with status 404 (unknown module) or 500.
package debug

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// ErrNotFound marks a request for a module (or other object) that does
// not exist; the server answers 404.
var ErrNotFound = errors.New("not found")

// A Source answers the debug API's questions; the engine is one.
type Source interface {
	// Queues returns the queues and their tasks.
	Queues() any
	// Global returns the global "values", "config", "patches" or
	// "snapshots"; explain asks values for their provenance.
	Global(what string, explain bool) (any, error)
	// Modules returns every module with its state.
	Modules() any
	// Module returns a module's "values", "config", "patches", "render"
	// or "snapshots"; an unknown module is an error matching ErrNotFound.
	Module(ctx context.Context, name, what string, explain bool) (any, error)
	// Hooks returns every hook with its parsed configuration.
	Hooks() any
	// Runs returns the last finished task runs, oldest first.
	Runs() any
}

// Handler returns the debug API over src.
func Handler(src Source) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /queue/{file}", func(w http.ResponseWriter, r *http.Request) {
		serve(w, r, "", func(what string) (any, error) {
			switch what {
			case "list":
				return src.Queues(), nil
			case "history":
				return src.Runs(), nil
			}
			return nil, fmt.Errorf("/queue/%s: %w; use list or history", what, ErrNotFound)
		})
	})
	mux.HandleFunc("GET /hook/{file}", func(w http.ResponseWriter, r *http.Request) {
		serve(w, r, "list", func(string) (any, error) { return src.Hooks(), nil })
	})
	mux.HandleFunc("GET /global/{file}", func(w http.ResponseWriter, r *http.Request) {
		serve(w, r, "", func(what string) (any, error) {
			switch what {

			case "list", "values", "config", "patches", "snapshots":
				return src.Global(what, r.URL.Query().Get("explain") == "true")
			}
			return nil, fmt.Errorf("/global/%s: %w; use list, values, config, patches or snapshots", what, ErrNotFound)
		})
	})
	mux.HandleFunc("GET /module/{file}", func(w http.ResponseWriter, r *http.Request) {
		serve(w, r, "list", func(string) (any, error) { return src.Modules(), nil })
	})
	mux.HandleFunc("GET /module/{name}/{file}", func(w http.ResponseWriter, r *http.Request) {
		serve(w, r, "", func(what string) (any, error) {
			switch what {
			case "values", "config":
				v, err := src.Module(r.Context(), r.PathValue("name"), what, r.URL.Query().Get("explain") == "true")
				if err != nil || r.URL.Query().Get("global") != "true" || r.URL.Query().Get("explain") == "true" {
					return v, err
				}
				// ?global=true: the global section beside the module's, as
				// addon-operator answers it.
				g, err := src.Global(what, false)
				if err != nil {
					return nil, err
				}
				return mergeSections(g, v), nil
			case "patches", "render", "snapshots":
				return src.Module(r.Context(), r.PathValue("name"), what, r.URL.Query().Get("explain") == "true")
			}
			return nil, fmt.Errorf("/module/NAME/%s: %w; use values, config, patches, render or snapshots", what, ErrNotFound)
		})
	})
	return mux
}

// mergeSections puts the top-level keys of two section maps ({global:
// ...} and {<moduleKey>: ...}) into one.
func mergeSections(a, b any) any {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if !aok || !bok {
		return b
	}
	out := make(map[string]any, len(am)+len(bm))
	for k, v := range am {
		out[k] = v
	}
	for k, v := range bm {
		out[k] = v
	}
	return out
}

// serve answers one request: file is WHAT.json or WHAT.yaml; only (when
// set) is the one WHAT accepted.
func serve(w http.ResponseWriter, r *http.Request, only string, get func(what string) (any, error)) {
	file := r.PathValue("file")
	what, format, ok := strings.Cut(file, ".")
	if !ok || (format != "json" && format != "yaml") || (only != "" && what != only) {
		writeErr(w, http.StatusNotFound, fmt.Errorf("%s: %w; ask for NAME.json or NAME.yaml", r.URL.Path, ErrNotFound))
		return
	}
	v, err := get(what)
	if err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, ErrNotFound) {
			code = http.StatusNotFound
		}
		writeErr(w, code, err)
		return
	}
	data, err := json.Marshal(v)
	if err == nil && format == "yaml" {
		data, err = yaml.JSONToYAML(data)
	}
	if err != nil {
		writeErr(w, http.StatusInternalServerError, err)
		return
	}
	if format == "json" {
		w.Header().Set("Content-Type", "application/json")
	} else {
		w.Header().Set("Content-Type", "application/yaml")
	}
	_, _ = w.Write(data)
}

func writeErr(w http.ResponseWriter, code int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
}

// Serve listens on the unix socket at path (replacing a stale socket file,
// creating its directory) and serves h until ctx is done.
func Serve(ctx context.Context, path string, h http.Handler, log *slog.Logger) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("debug socket %s: %w; set DEBUG_UNIX_SOCKET (--debug-unix-socket) to a writable path", path, err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return fmt.Errorf("debug socket %s: exists and is not a socket; remove it or set DEBUG_UNIX_SOCKET elsewhere", path)
		}
		_ = os.Remove(path)
	}
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "unix", path)
	if err != nil {
		return fmt.Errorf("debug socket %s: %w; set DEBUG_UNIX_SOCKET (--debug-unix-socket) to a writable path", path, err)
	}
	_ = os.Chmod(path, 0o600)
	log.Debug("debug API listening", "socket", path)
	err = serveOn(ctx, l, h)
	_ = os.Remove(path)
	return err
}

// ServeTCP serves h over plain HTTP at addr (host:port) until ctx is done:
// shell-operator's --debug-http-addr. It has no authentication.
func ServeTCP(ctx context.Context, addr string, h http.Handler, log *slog.Logger) error {
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("debug HTTP address %s: %w; set DEBUG_HTTP_SERVER_ADDR (--debug-http-addr) to a free host:port", addr, err)
	}
	log.Info("debug API listening over HTTP, unauthenticated", "address", l.Addr().String())
	return serveOn(ctx, l, h)
}

// ServeListener serves h on l until ctx is done (ServeTCP on a listener
// the caller opened).
func ServeListener(ctx context.Context, l net.Listener, h http.Handler) error {
	return serveOn(ctx, l, h)
}

func serveOn(ctx context.Context, l net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	err := srv.Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// MaxResponse bounds what the client reads from the socket.
const MaxResponse = 256 << 20

// Get asks the debug API at socket for path (as in the package doc) and
// returns the JSON answer, or the server's error.
func Get(ctx context.Context, socket, path string) ([]byte, error) {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://operator"+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("debug socket %s: %w; is `strata operator run` running with this DEBUG_UNIX_SOCKET (--debug-unix-socket)?", socket, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponse+1))
	if err != nil {
		return nil, fmt.Errorf("debug socket %s: reading %s: %w", socket, path, err)
	}
	if len(data) > MaxResponse {
		return nil, fmt.Errorf("debug socket %s: answer to %s is larger than %d bytes", socket, path, MaxResponse)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			return nil, errors.New(e.Error)
		}
		return nil, fmt.Errorf("debug socket %s: %s: %s", socket, path, resp.Status)
	}
	return data, nil
}
