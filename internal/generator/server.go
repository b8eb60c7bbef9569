package generator

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/hookexec"
	"github.com/strata-dev/strata/internal/memlimit"
)

// A Server serves the plugins of a Config. Build it with New, then call Run
// (or Serve with listeners of your own); Handler serves the plugin API for
// tests and embedding.
type Server struct {
	cfg     *Config
	log     *slog.Logger
	plugins []*plugin
	certs   *certLoader
	metrics *metrics
	watched []watchedSource
	handler http.Handler

	ready      atomic.Bool
	baseCtx    context.Context // of backend calls that outlive one request
	cancelBase context.CancelFunc
	calls      hookexec.Running // backend calls
	memory     *memlimit.Budget // nil: none (SetMemoryBudget)
}

// A watchedSource is a file-backed source that Reload checks.
type watchedSource struct {
	name string
	r    interface{ Reload() (bool, error) }
}

// plugin is a PluginConfig at run time.
type plugin struct {
	cfg   *PluginConfig
	token *tokenChecker // nil: unauthenticated
	cache *responseCache
	limit *limiter
	// lastCost is what the plugin's last answer cost in memory: what a
	// backend call reserves in the memory budget before it starts, when
	// it is large (prepaidFrom).
	lastCost atomic.Int64

	requests     *prometheus.CounterVec
	duration     prometheus.Observer
	inFlight     prometheus.Gauge
	backendOK    prometheus.Counter
	backendErr   prometheus.Counter
	backendBusy  prometheus.Counter
	backendTime  prometheus.Observer
	queued       prometheus.Gauge
	cacheResults map[string]prometheus.Counter
	hits         prometheus.Counter // cacheResults[cacheHit]
	byCode       sync.Map           // int → prometheus.Counter
}

// New checks everything it can before serving: it loads the static
// parameter files, reads the tokens and the TLS certificate, and looks up
// the commands. A nil logger discards logs.
func New(cfg *Config, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, log: log, metrics: newMetrics()}
	s.baseCtx, s.cancelBase = context.WithCancel(context.Background())
	if cfg.TLS != nil {
		c, err := newCertLoader(cfg.TLS)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", cfg.Source, err)
		}
		s.certs = c
		s.watched = append(s.watched, watchedSource{"tls", c})
	}
	for _, pc := range cfg.Plugins {
		p, err := s.newPlugin(pc)
		if err != nil {
			return nil, fmt.Errorf("%s: plugin %s: %w", cfg.Source, pc.Name, err)
		}
		s.plugins = append(s.plugins, p)
	}
	s.handler = s.newHandler()
	return s, nil
}

func (s *Server) newPlugin(pc *PluginConfig) (*plugin, error) {
	if pc.Backend == nil {
		return nil, errors.New("no backend")
	}
	m := s.metrics
	p := &plugin{
		cfg:          pc,
		cache:        newResponseCache(pc.Cache),
		limit:        newLimiter(pc.Concurrency, pc.MaxQueue),
		requests:     m.requests.MustCurryWith(prometheus.Labels{"plugin": pc.Name}),
		duration:     m.requestDuration.WithLabelValues(pc.Name),
		inFlight:     m.inFlight.WithLabelValues(pc.Name),
		backendOK:    m.backendCalls.WithLabelValues(pc.Name, "ok"),
		backendErr:   m.backendCalls.WithLabelValues(pc.Name, "error"),
		backendBusy:  m.backendCalls.WithLabelValues(pc.Name, "busy"),
		backendTime:  m.backendDuration.WithLabelValues(pc.Name),
		queued:       m.queued.WithLabelValues(pc.Name),
		cacheResults: map[string]prometheus.Counter{},
	}
	for _, r := range []string{cacheHit, cacheShared, cacheMiss} {
		p.cacheResults[r] = m.cache.WithLabelValues(pc.Name, r)
	}
	p.hits = p.cacheResults[cacheHit]
	if pc.Token != nil {
		t, err := newTokenChecker(*pc.Token)
		if err != nil {
			return nil, err
		}
		p.token = t
		if pc.Token.File != "" {
			s.watched = append(s.watched, watchedSource{"plugin " + pc.Name + " token", t})
		}
	} else if !pc.AllowUnauthenticated {
		return nil, errors.New("no token, and allowUnauthenticated is not set")
	}
	switch b := pc.Backend.(type) {
	case *CommandBackend:
		if err := b.check(); err != nil {
			return nil, err
		}
	case interface{ Reload() (bool, error) }:
		if _, err := b.Reload(); err != nil {
			return nil, err
		}
		s.watched = append(s.watched, watchedSource{"plugin " + pc.Name + " parameters", b})
	}
	return p, nil
}

// check looks the command up the way hookexec will run it, so that a typo
// fails at startup rather than on the first request.
func (b *CommandBackend) check() error {
	name := b.Argv[0]
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(b.Dir, p)
		}
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("command %q does not exist; a relative argv[0] starts from the command's dir, by default the configuration's directory", name)
		}
		if err != nil {
			return fmt.Errorf("command %q: %w", name, err)
		}
		if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			return fmt.Errorf("command %q is not an executable file; make it executable (chmod +x) or run it through its interpreter, e.g. argv: [python3, %s]", name, name)
		}
		return nil
	}
	for _, kv := range b.environ() {
		if path, ok := strings.CutPrefix(kv, "PATH="); ok {
			for _, dir := range filepath.SplitList(path) {
				if !filepath.IsAbs(dir) {
					continue
				}
				if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
					return nil
				}
			}
			return fmt.Errorf("command %q is not in PATH %q", name, path)
		}
	}
	if _, err := exec.LookPath(name); err != nil {
		return fmt.Errorf("command %q: %w", name, err)
	}
	return nil
}

// Handler returns the server's HTTP handler: the plugins, /healthz,
// /readyz, and /metrics unless the configuration has a metrics listener.
func (s *Server) Handler() http.Handler { return s.handler }

// MetricsHandler serves the Prometheus metrics.
func (s *Server) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{ErrorLog: slogPrinter{s.log}})
}

func (s *Server) newHandler() http.Handler {
	mux := http.NewServeMux()
	for _, p := range s.plugins {
		mux.Handle(p.cfg.Path+APIPath, s.pluginHandler(p))
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("/readyz", s.readyz)
	if s.cfg.MetricsListen == "" {
		mux.Handle("/metrics", s.MetricsHandler())
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no plugin serves %s; a plugin answers POST <its base path>%s", document.Clip(r.URL.Path, 200), APIPath))
	})
	return mux
}

func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if !s.ready.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "not ready\n")
		return
	}
	io.WriteString(w, "ok\n")
}

// SetReady sets what /readyz answers; Serve sets it, and clears it on
// shutdown.
func (s *Server) SetReady(ok bool) { s.ready.Store(ok) }

// statusClientGone is the status counted for a request whose client went
// away before it was answered (nginx's 499); it is never sent.
const statusClientGone = 499

func (s *Server) pluginHandler(p *plugin) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		p.inFlight.Inc()
		code := statusClientGone // unless servePlugin returns
		defer func() {
			p.inFlight.Dec()
			p.countRequest(code)
			p.duration.Observe(time.Since(start).Seconds())
		}()
		code = s.servePlugin(w, r, p, start)
	})
}

// servePlugin answers a request to a plugin and returns the status it
// answered with. A kept answer to a body seen before is written without
// decoding the body and without allocating beyond what net/http does.
func (s *Server) servePlugin(w http.ResponseWriter, r *http.Request, p *plugin, start time.Time) int {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s is not allowed: use POST", r.Method))
	}
	if p.token != nil {
		if code, msg := p.token.check(r); code != 0 {
			if code == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="strata generator"`)
			}
			s.log.Warn("request refused", "plugin", p.cfg.Name, "remote", r.RemoteAddr, "status", code, "reason", msg, "userAgent", r.UserAgent())
			return writeError(w, code, msg)
		}
	}
	if ct := r.Header.Get("Content-Type"); ct != "" && ct != "application/json" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return writeError(w, http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type %q is not JSON: send application/json", ct))
		}
	}
	body, err := readBody(w, r, s.cfg.MaxRequestBytes)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body is larger than the limit of %d bytes (maxRequestBytes)", mbe.Limit))
		}
		s.log.Warn("reading the request failed", "plugin", p.cfg.Name, "remote", r.RemoteAddr, "err", err)
		return writeError(w, http.StatusBadRequest, "reading the request body: "+err.Error())
	}
	raw := sha256.Sum256(body)
	if a, ok := p.cache.peek(raw[:]); ok {
		p.hits.Inc()
		return writeAnswer(w, a, cacheHit)
	}
	req, err := DecodeRequest(body)
	if err != nil {
		s.log.Warn("bad request", "plugin", p.cfg.Name, "remote", r.RemoteAddr, "err", err)
		return writeError(w, http.StatusBadRequest, err.Error())
	}
	canonical, err := json.Marshal(req)
	if err != nil {
		return writeError(w, http.StatusBadRequest, "encoding the request: "+err.Error())
	}
	sum := sha256.Sum256(canonical)
	key := string(sum[:])

	// The output and the body built from it are held in the memory
	// budget until the answer is written; a call shared with other
	// requests takes from the reservation of the request that made it.
	ctx, end := s.memory.Begin(r.Context())
	defer end()
	fill := func() ([]byte, error) {
		callCtx := ctx
		if p.cache.enabled() {
			// Other requests may share the call.
			callCtx = memlimit.WithReservationOf(s.baseCtx, ctx)
		}
		return s.callBackend(callCtx, p, *req)
	}
	a, result, err := p.cache.get(ctx, key, fill, func(result string) { p.cacheResults[result].Inc() })
	if err != nil {
		code := errorStatus(err)
		if ctx.Err() != nil {
			s.log.Info("the client went away", "plugin", p.cfg.Name, "remote", r.RemoteAddr, "appset", req.ApplicationSetName, "duration", time.Since(start))
			return statusClientGone
		}
		if code == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "1")
		}
		if errors.Is(err, ErrMemoryBudget) {
			w.Header().Set("Retry-After", "10")
		}
		s.log.Warn("backend failed", "plugin", p.cfg.Name, "remote", r.RemoteAddr, "appset", req.ApplicationSetName,
			"status", code, "err", err, "duration", time.Since(start))
		return writeError(w, code, fmt.Sprintf("plugin %s: %v", p.cfg.Name, err))
	}
	p.cache.alias(raw[:], key)
	code := writeAnswer(w, a, result)
	if s.log.Enabled(context.Background(), slog.LevelDebug) {
		s.log.Debug("answered", "plugin", p.cfg.Name, "remote", r.RemoteAddr, "appset", req.ApplicationSetName, "cache", result, "duration", time.Since(start))
	}
	return code
}

var (
	jsonContentType = []string{"application/json"}
	cacheHeader     = map[string][]string{cacheHit: {cacheHit}, cacheMiss: {cacheMiss}, cacheShared: {cacheShared}}
)

// writeAnswer writes an answer with its length (never chunked) and returns
// the status. The header values are shared, read-only slices: net/http
// copies the header map before it writes it.
func writeAnswer(w http.ResponseWriter, a answer, result string) int {
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["X-Strata-Cache"] = cacheHeader[result]
	h["Content-Length"] = a.contentLength
	w.WriteHeader(http.StatusOK)
	w.Write(a.body)
	return http.StatusOK
}

// readBody reads a request body of at most limit bytes, in one allocation
// when the client said its length. net/http already stops such a body at
// its length; a body of unknown length, or longer than the limit, is read
// through http.MaxBytesReader, which also has the connection closed after
// the answer.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if n := r.ContentLength; n >= 0 && n <= limit {
		buf := make([]byte, n)
		if _, err := io.ReadFull(r.Body, buf); err != nil {
			return nil, err
		}
		return buf, nil
	}
	return io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
}

// callBackend calls the backend under the plugin's limits and encodes its
// answer.
func (s *Server) callBackend(ctx context.Context, p *plugin, req Request) ([]byte, error) {
	s.calls.Add()
	defer s.calls.Done()
	ctx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
	defer cancel()
	if err := p.limit.acquire(ctx, p.queued.Add); err != nil {
		if errors.Is(err, ErrBusy) {
			p.backendBusy.Inc()
			return nil, fmt.Errorf("%w: %d backend calls are running and %d waiting; raise concurrency or maxQueue, or add replicas",
				err, p.cfg.Concurrency, p.cfg.MaxQueue)
		}
		p.backendErr.Inc()
		return nil, fmt.Errorf("waiting for a backend slot: %w", err)
	}
	defer p.limit.release()
	if cost := p.lastCost.Load(); cost >= prepaidFrom {
		if err := memlimit.Prepay(ctx, cost, fmt.Sprintf("an answer as large as the plugin's last (%d bytes)", cost/(1+encodeCost))); err != nil {
			p.backendErr.Inc()
			return nil, err
		}
	}
	start := time.Now()
	var (
		body []byte
		sets []map[string]any
		err  error
	)
	if r, ok := p.cfg.Backend.(responder); ok {
		body, err = r.Respond(ctx, req)
	} else {
		sets, err = p.cfg.Backend.GetParams(ctx, req)
	}
	p.backendTime.Observe(time.Since(start).Seconds())
	if err != nil {
		p.backendErr.Inc()
		if errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, hookexec.ErrTimeout) {
			err = fmt.Errorf("%w (requestTimeout %s)", err, p.cfg.RequestTimeout)
		}
		return nil, err
	}
	if body == nil {
		if body, err = EncodeResponse(sets); err != nil {
			p.backendErr.Inc()
			return nil, fmt.Errorf("%w: encoding the parameter sets: %w", ErrBadOutput, err)
		}
	}
	p.backendOK.Inc()
	p.lastCost.Store((1 + encodeCost) * int64(len(body)))
	return body, nil
}

// errorStatus is the status a backend error is answered with.
func errorStatus(err error) int {
	switch {
	case errors.Is(err, ErrBusy), errors.Is(err, ErrMemoryBudget):
		return http.StatusServiceUnavailable
	case errors.Is(err, hookexec.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	case errors.Is(err, ErrBadOutput):
		return http.StatusBadGateway
	}
	return http.StatusInternalServerError
}

// countRequest counts a request by its status; the counter of a status is
// looked up once.
func (p *plugin) countRequest(code int) {
	if c, ok := p.byCode.Load(code); ok {
		c.(prometheus.Counter).Inc()
		return
	}
	c := p.requests.WithLabelValues(strconv.Itoa(code))
	p.byCode.Store(code, c)
	c.Inc()
}

// writeError answers {"message": msg}, as Argo CD's client reads it, and
// returns code.
func writeError(w http.ResponseWriter, code int, msg string) int {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(errorBody{Message: msg})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	w.Write(b.Bytes())
	return code
}

// Reload checks the watched files (static parameters, token files, the TLS
// certificate) once and loads those that changed. A failed load keeps the
// last good data and is logged.
func (s *Server) Reload() {
	for _, src := range s.watched {
		changed, err := src.r.Reload()
		switch {
		case err != nil:
			s.metrics.reloads.WithLabelValues(src.name, "error").Inc()
			s.log.Error("reload failed; keeping the last good data", "source", src.name, "err", err)
		case changed:
			s.metrics.reloads.WithLabelValues(src.name, "ok").Inc()
			s.log.Info("reloaded", "source", src.name)
		}
	}
}

// Run listens on the configured addresses and serves until ctx is done.
func (s *Server) Run(ctx context.Context) error {
	lis, err := listen(s.cfg.Listen)
	if err != nil {
		return err
	}
	var mlis net.Listener
	if s.cfg.MetricsListen != "" {
		if mlis, err = listen(s.cfg.MetricsListen); err != nil {
			lis.Close()
			return err
		}
	}
	return s.Serve(ctx, lis, mlis)
}

func listen(addr string) (net.Listener, error) {
	network := "tcp"
	if p, ok := strings.CutPrefix(addr, "unix:"); ok {
		network, addr = "unix", p
	}
	lis, err := net.Listen(network, addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", addr, err)
	}
	return lis, nil
}

// StopWait is how long Serve waits, once ShutdownGrace is over and the
// requests still running are cancelled, for their backend commands to be
// stopped: SIGTERM to the command's process group, then SIGKILL after its
// grace (5 s).
const StopWait = 15 * time.Second

// Serve serves the plugins on lis and, when mlis is not nil, the metrics,
// /healthz and /readyz on mlis, until ctx is done. Then /readyz fails for
// ShutdownDelay while requests are still served, the listeners close, and
// in-flight requests get ShutdownGrace to finish before they are cancelled;
// Serve returns once their commands are gone (see StopWait).
func (s *Server) Serve(ctx context.Context, lis, mlis net.Listener) error {
	defer s.cancelBase()
	cfg := s.cfg
	errLog := slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: min(cfg.ReadTimeout, 10*time.Second),
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          errLog,
		BaseContext:       func(net.Listener) context.Context { return s.baseCtx },
	}
	servers := []*http.Server{srv}
	errc := make(chan error, 2)
	var wg sync.WaitGroup
	serve := func(hs *http.Server, l net.Listener, useTLS bool) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if useTLS {
				err = hs.ServeTLS(l, "", "")
			} else {
				err = hs.Serve(l)
			}
			if !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}()
	}
	scheme := "http"
	if s.certs != nil {
		srv.TLSConfig = s.certs.tlsConfig()
		scheme = "https"
	}
	serve(srv, lis, s.certs != nil)
	if mlis != nil {
		mux := http.NewServeMux()
		mux.Handle("/metrics", s.MetricsHandler())
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
		mux.HandleFunc("/readyz", s.readyz)
		msrv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
			WriteTimeout: 30 * time.Second, IdleTimeout: cfg.IdleTimeout, ErrorLog: errLog}
		servers = append(servers, msrv)
		serve(msrv, mlis, false)
		s.log.Info("serving metrics", "address", mlis.Addr().String())
	}
	for _, p := range s.plugins {
		s.log.Info("serving plugin", "plugin", p.cfg.Name, "url", scheme+"://"+lis.Addr().String()+p.cfg.Path+APIPath,
			"auth", p.cfg.Token != nil, "cacheTTL", p.cfg.Cache.TTL.String(), "concurrency", p.cfg.Concurrency)
		if p.cfg.AllowUnauthenticated {
			s.log.Warn("plugin accepts requests without a token (allowUnauthenticated)", "plugin", p.cfg.Name)
		}
	}
	s.SetReady(true)

	reloadDone := make(chan struct{})
	go func() {
		defer close(reloadDone)
		t := time.NewTicker(cfg.ReloadInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.Reload()
			}
		}
	}()

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	s.SetReady(false)
	if serveErr == nil && cfg.ShutdownDelay > 0 {
		s.log.Info("shutting down: not ready; serving on while load balancers notice", "delay", cfg.ShutdownDelay.String())
		select {
		case <-time.After(cfg.ShutdownDelay):
		case serveErr = <-errc:
		}
	}
	s.log.Info("shutting down: letting in-flight requests finish", "grace", cfg.ShutdownGrace.String())
	graceCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGrace)
	defer cancel()
	var shutdownErr error
	for _, hs := range servers {
		if err := hs.Shutdown(graceCtx); err != nil {
			shutdownErr = err
		}
	}
	if shutdownErr != nil {
		s.log.Warn("in-flight requests did not finish in time; cancelling them")
		s.cancelBase()
		for _, hs := range servers {
			hs.Close()
		}
	}
	// Close cancelled the requests still running, but does not wait for
	// their handlers: wait for the backend calls to stop their commands'
	// process groups (SIGTERM, then SIGKILL after the command's grace),
	// so that nothing outlives the server.
	s.cancelBase()
	waitCtx, cancelWait := context.WithTimeout(context.Background(), StopWait)
	defer cancelWait()
	if n := s.calls.Wait(waitCtx); n > 0 {
		s.log.Warn("backend calls still running after the shutdown", "count", n, "waited", StopWait.String())
	}
	wg.Wait()
	<-reloadDone
	if serveErr != nil {
		return fmt.Errorf("serving: %w", serveErr)
	}
	s.log.Info("stopped")
	return nil
}

// slogPrinter adapts a slog.Logger to promhttp's Logger.
type slogPrinter struct{ log *slog.Logger }

func (p slogPrinter) Println(v ...any) {
	p.log.Warn(strings.TrimSpace(fmt.Sprintln(v...)))
}
