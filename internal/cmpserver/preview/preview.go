// Package preview serves `strata cmp preview`: a page on loopback that draws
// a plugin's parameters form as Argo CD's UI draws it from the plugin's
// announcement, and renders the application with the values of the form
// the way `strata cmp generate` renders it (a cmpserver.Local request: the
// same private copy of the repository, sandbox, budgets and timeout).
//
// The Handler answers only requests whose path starts with /TOKEN/ (a
// random token, compared in constant time), whose Host is one it serves
// under, and whose Origin, when there is one, is its own: another site the
// browser opens can neither read the page nor drive renders.
package preview

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/strata-dev/strata/internal/cmpserver"
	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/hookexec"
	"github.com/strata-dev/strata/internal/params"
	"github.com/strata-dev/strata/internal/values"
)

//go:embed web
var web embed.FS

// MaxBody bounds a render request's body: parameters and env as JSON.
const MaxBody = 1 << 20

// maxPages bounds the pages whose render in flight the handler tracks.
const maxPages = 64

// A Handler serves the preview page and its API. Set the fields, then
// serve it; it must not be copied after first use.
type Handler struct {
	// Local is the application and its plugin, as cmp generate's flags
	// give them; each render runs a copy with the form's parameters and env.
	Local cmpserver.Local
	// Token is the secret every path starts with (NewToken).
	Token string
	// Hosts are the Host header values the handler answers (host:port);
	// an Origin header must be http:// and one of them.
	Hosts []string
	// Command is the cmp generate command line the form's values are added
	// to, for display (argv: strata cmp generate APPDIR --config ...).
	Command []string

	mu       sync.Mutex
	inflight map[string]*run
	// announced is the announcement the last GET read, which renders
	// check their parameters against (nil: read it then).
	announced []params.Announcement
}

// A run is a render in flight, cancelled by a newer one of its page.
type run struct{ cancel context.CancelFunc }

// NewToken returns 32 random bytes from crypto/rand, base64url-encoded.
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// LoopbackHosts are the Host values a server listening on addr (the
// listener's address, host:port) answers: addr itself, and localhost
// under the same port when addr is a loopback address.
func LoopbackHosts(addr string) []string {
	hosts := []string{addr}
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return hosts
	}
	switch host := strings.Trim(addr[:i], "[]"); host {
	case "127.0.0.1", "::1", "localhost":
		hosts = append(hosts, "localhost"+addr[i:], "127.0.0.1"+addr[i:], "[::1]"+addr[i:])
	}
	return hosts
}

// ServeHTTP checks the request's host, origin and token, then serves the
// page, its assets, or the API.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'; form-action 'none'; base-uri 'none'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Cache-Control", "no-store")
	if !slices.Contains(h.Hosts, r.Host) {
		http.Error(w, "unknown Host: open the address strata cmp preview printed", http.StatusMisdirectedRequest)
		return
	}
	if o := r.Header.Get("Origin"); o != "" && !slices.ContainsFunc(h.Hosts, func(host string) bool { return o == "http://"+host }) {
		http.Error(w, "foreign Origin", http.StatusForbidden)
		return
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		http.Error(w, "cross-site request", http.StatusForbidden)
		return
	}
	token, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if h.Token == "" || subtle.ConstantTimeCompare([]byte(token), []byte(h.Token)) != 1 {
		http.Error(w, "not found: open the address with the token strata cmp preview printed", http.StatusNotFound)
		return
	}
	switch {
	case rest == "" && r.URL.Path == "/"+token:
		http.Redirect(w, r, "/"+token+"/", http.StatusFound)
	case rest == "" || rest == "app.js" || rest == "style.css":
		h.asset(w, r, rest)
	case rest == "api/announcement":
		if r.Method != http.MethodGet {
			http.Error(w, "use GET", http.StatusMethodNotAllowed)
			return
		}
		writeJSON(w, h.announcement(r.Context()))
	case rest == "api/state":
		if r.Method != http.MethodGet {
			http.Error(w, "use GET", http.StatusMethodNotAllowed)
			return
		}
		writeJSON(w, State{Version: appDirVersion(h.Local.AppDir)})
	case rest == "api/render":
		if r.Method != http.MethodPost {
			http.Error(w, "use POST", http.StatusMethodNotAllowed)
			return
		}
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			http.Error(w, "send application/json", http.StatusUnsupportedMediaType)
			return
		}
		var req RenderRequest
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			http.Error(w, "reading the render request: "+err.Error(), http.StatusBadRequest)
			return
		}
		res, ok := h.render(r.Context(), req)
		if !ok {
			http.Error(w, "cancelled by a newer render", http.StatusConflict)
			return
		}
		writeJSON(w, res)
	default:
		http.NotFound(w, r)
	}
}

func (h *Handler) asset(w http.ResponseWriter, r *http.Request, name string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "use GET", http.StatusMethodNotAllowed)
		return
	}
	types := map[string]string{"": "text/html; charset=utf-8", "app.js": "text/javascript; charset=utf-8", "style.css": "text/css; charset=utf-8"}
	file := name
	if file == "" {
		file = "index.html"
	}
	b, err := fs.ReadFile(web, "web/"+file)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", types[name])
	w.Write(b)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// Announced is the answer of GET api/announcement.
type Announced struct {
	Plugin        string                `json:"plugin"`
	Announcements []params.Announcement `json:"announcements"`
	Error         *Failure              `json:"error,omitempty"`
}

// announcement reads the plugin's announcement for the application, as
// cmp parameters does; a dynamic one runs its command again each time.
func (h *Handler) announcement(ctx context.Context) Announced {
	out := Announced{Plugin: pluginName(h.Local.Plugin.Info()), Announcements: []params.Announcement{}}
	anns, err := h.announce(ctx)
	if err != nil {
		out.Error = failure(err, nil)
		return out
	}
	if anns != nil {
		out.Announcements = anns
	}
	h.mu.Lock()
	h.announced = out.Announcements
	h.mu.Unlock()
	return out
}

func (h *Handler) announce(ctx context.Context) ([]params.Announcement, error) {
	l := h.Local
	l.Parameters, l.Env = nil, nil
	req, cleanup, err := l.Request(ctx)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	return l.Plugin.Announce(ctx, req)
}

// pluginName is the name an Application's spec.source.plugin.name gives
// to pick the plugin: <name>-<version> when it has a version.
func pluginName(i cmpserver.Info) string {
	return strings.TrimSuffix(i.SocketName(), ".sock")
}

// An EnvEntry is one entry of an Application's plugin env.
type EnvEntry struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// A RenderRequest is the body of POST api/render.
type RenderRequest struct {
	// Page identifies the browser page: a newer render of the same page
	// cancels the one in flight.
	Page string `json:"page"`
	// Parameters are in ARGOCD_APP_PARAMETERS' JSON.
	Parameters json.RawMessage `json:"parameters"`
	Env        []EnvEntry      `json:"env"`
}

// A Resource is one rendered manifest, by kind, namespace and name; Line is
// where its document starts in Rendered.Manifests (1-based).
type Resource struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	Line       int    `json:"line"`
}

// A Failure is a render's error: the message, the command's stderr when a
// command failed, and the parameter at fault when it names one.
type Failure struct {
	Message   string `json:"message"`
	Stderr    string `json:"stderr,omitempty"`
	Parameter string `json:"parameter,omitempty"`
}

// A Problem is what params.Check finds wrong with one parameter: a value
// that does not fit its itemType, a required parameter not set.
type Problem struct {
	Parameter string `json:"parameter"`
	Message   string `json:"message"`
}

// Rendered is the answer of POST api/render.
type Rendered struct {
	Manifests string     `json:"manifests"`
	Resources []Resource `json:"resources"`
	// Diff is a unified diff from the render with no parameters (the
	// announcement's defaults) to this one; "" when they are the same.
	Diff     string    `json:"diff"`
	Error    *Failure  `json:"error,omitempty"`
	Problems []Problem `json:"problems,omitempty"`
	// Plugin is the spec.source.plugin block of an Application (YAML).
	Plugin string `json:"plugin"`
	// Command is the equivalent cmp generate command line, quoted for a
	// POSIX shell; ParametersFile, when set, is the file it names with
	// --parameters (parameters the --param flags cannot write).
	Command        string `json:"command"`
	ParametersFile string `json:"parametersFile,omitempty"`
	// Values, for a plugin that can explain its values (the built-in Helm
	// plugin), says where each value the chart got came from: the text of
	// cmp generate --explain.
	Values string `json:"values,omitempty"`
}

// valueExplainer is what a plugin that can explain its values has
// (helmplugin.Plugin.ExplainValues).
type valueExplainer interface {
	ExplainValues(ctx context.Context, req *params.Request, path document.Path) ([]values.Explanation, error)
}

// explain returns cmp generate --explain's text for the parameters and
// env, or why there is none.
func (h *Handler) explain(ctx context.Context, ve valueExplainer, ps []params.Parameter, env []string) string {
	l := h.Local
	l.Parameters, l.Env = ps, append(slices.Clip(l.Env), env...)
	req, cleanup, err := l.Request(ctx)
	if err != nil {
		return "(cannot explain the values: " + err.Error() + ")"
	}
	defer cleanup()
	exps, err := ve.ExplainValues(ctx, req, nil)
	var b bytes.Buffer
	if err == nil {
		err = values.WriteExplanations(&b, exps, "text")
	}
	if err != nil {
		return "(cannot explain the values: " + err.Error() + ")"
	}
	return b.String()
}

// render runs the plugin with the request's parameters and env, and with
// none to diff against; ok is false when a newer render of the same page
// cancelled it.
func (h *Handler) render(ctx context.Context, rr RenderRequest) (res Rendered, ok bool) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	me := &run{cancel: cancel}
	h.track(rr.Page, me)
	defer h.untrack(rr.Page, me)

	var ps []params.Parameter
	if len(bytes.TrimSpace(rr.Parameters)) > 0 && string(bytes.TrimSpace(rr.Parameters)) != "null" {
		var err error
		if ps, err = params.ParseParameters(rr.Parameters, "the form's parameters"); err != nil {
			res.Error = failure(err, nil)
			return res, true
		}
	}
	var env []string
	for _, e := range rr.Env {
		kv, err := params.AppEnv(e.Name + "=" + e.Value)
		if err != nil || strings.ContainsAny(e.Name, "=\x00") || strings.ContainsRune(e.Value, 0) {
			res.Error = &Failure{Message: fmt.Sprintf("env entry %q: a name is required, without = or NUL", e.Name)}
			return res, true
		}
		env = append(env, kv)
	}
	res.Plugin = h.pluginBlock(ps, rr.Env)
	res.Command, res.ParametersFile = h.command(ps, rr.Env)

	h.mu.Lock()
	anns := h.announced
	h.mu.Unlock()
	var aerr error
	if anns == nil {
		anns, aerr = h.announce(ctx)
	}
	if aerr == nil {
		if _, err := params.Check(ps, anns); err != nil {
			for _, e := range unjoin(err) {
				var pe *params.Error
				if errors.As(e, &pe) {
					res.Problems = append(res.Problems, Problem{Parameter: pe.Name, Message: pe.Error()})
				}
			}
		}
	}
	// The render with the defaults runs beside this one: each copies the
	// repository, as cmp generate does.
	type baseRender struct {
		text string
		err  error
	}
	var base chan baseRender
	if len(ps) > 0 || len(env) > 0 {
		base = make(chan baseRender, 1)
		go func() {
			text, _, err := h.generate(ctx, nil, nil)
			base <- baseRender{text, err}
		}()
	}
	text, resources, err := h.generate(ctx, ps, env)
	var b baseRender
	if base != nil {
		b = <-base
	}
	if ctx.Err() != nil && errors.Is(context.Cause(ctx), context.Canceled) && !h.current(rr.Page, me) {
		return res, false
	}
	if err != nil {
		res.Error = failure(err, anns)
		if res.Error.Parameter == "" && len(res.Problems) > 0 {
			res.Error.Parameter = res.Problems[0].Parameter
		}
		return res, true
	}
	res.Manifests, res.Resources = text, resources
	if ve, ok := h.Local.Plugin.(valueExplainer); ok {
		res.Values = h.explain(ctx, ve, ps, env)
	}
	if base != nil {
		if b.err != nil {
			res.Diff = "(the render with the defaults failed: " + b.err.Error() + ")"
		} else if b.text != text {
			res.Diff, _ = difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
				A: lines(b.text), B: lines(text),
				FromFile: "defaults", ToFile: "this form", Context: 3,
			})
		}
	}
	return res, true
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func (h *Handler) track(page string, r *run) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.inflight == nil {
		h.inflight = map[string]*run{}
	}
	if old, ok := h.inflight[page]; ok {
		old.cancel()
	} else if len(h.inflight) >= maxPages {
		for k, old := range h.inflight { // a page that went away, most likely
			old.cancel()
			delete(h.inflight, k)
			break
		}
	}
	h.inflight[page] = r
}

// current says whether r is still its page's render in flight.
func (h *Handler) current(page string, r *run) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.inflight[page] == r
}

func (h *Handler) untrack(page string, r *run) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.inflight[page] == r {
		delete(h.inflight, page)
	}
}

// generate runs the plugin as cmp generate does and encodes the manifests
// as a YAML stream.
func (h *Handler) generate(ctx context.Context, ps []params.Parameter, env []string) (string, []Resource, error) {
	l := h.Local
	l.Parameters, l.Env = ps, append(slices.Clip(l.Env), env...)
	req, cleanup, err := l.Request(ctx)
	if err != nil {
		return "", nil, err
	}
	defer cleanup()
	manifests, err := l.Plugin.Generate(ctx, req)
	if err != nil {
		return "", nil, err
	}
	var b bytes.Buffer
	resources := make([]Resource, 0, len(manifests))
	for i, m := range manifests {
		v, _, err := document.Loader{JSON: true}.ParseAny([]byte(m), fmt.Sprintf("manifest %d", i))
		if err != nil {
			return "", nil, err
		}
		r := Resource{Line: bytes.Count(b.Bytes(), []byte("\n")) + 1}
		if obj, ok := v.(map[string]any); ok {
			r.APIVersion, _ = obj["apiVersion"].(string)
			r.Kind, _ = obj["kind"].(string)
			if md, ok := obj["metadata"].(map[string]any); ok {
				r.Namespace, _ = md["namespace"].(string)
				r.Name, _ = md["name"].(string)
			}
		}
		resources = append(resources, r)
		b.WriteString("---\n")
		if err := document.Encode(&b, v, document.YAML); err != nil {
			return "", nil, err
		}
	}
	return b.String(), resources, nil
}

// failure describes err for the page: its message, the stderr of the
// command that failed, and the parameter it names (a *params.Error's, or
// an announced parameter whose name or PARAM_ variable the message or
// stderr names; only the stderr when a command failed).
func failure(err error, anns []params.Announcement) *Failure {
	f := &Failure{Message: err.Error()}
	var exit *hookexec.ExitError
	if errors.As(err, &exit) {
		f.Stderr = exit.StderrTail
	}
	var pe *params.Error
	if errors.As(err, &pe) && pe.Kind == "parameter" {
		f.Parameter = pe.Name
		return f
	}
	// A command's message holds its command line, which may name every
	// PARAM_ variable: only its stderr says which one is at fault.
	text := f.Message
	if exit != nil {
		text = f.Stderr
	}
	// Longest names first: "replicas-max" before "replicas".
	names := make([]string, 0, len(anns))
	for _, a := range anns {
		names = append(names, a.Name)
	}
	sort.Slice(names, func(i, j int) bool { return len(names[i]) > len(names[j]) })
	for _, n := range names {
		if n != "" && (containsWord(text, n) || strings.Contains(text, "PARAM_"+params.Escape(n))) {
			f.Parameter = n
			break
		}
	}
	return f
}

// containsWord says whether name occurs in text with no letter, digit, -
// or _ on either side.
func containsWord(text, name string) bool {
	word := func(c byte) bool {
		return c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	for i := 0; ; {
		j := strings.Index(text[i:], name)
		if j < 0 {
			return false
		}
		s, e := i+j, i+j+len(name)
		if (s == 0 || !word(text[s-1])) && (e == len(text) || !word(text[e])) {
			return true
		}
		i = s + 1
	}
}

// lines splits text after each newline, as difflib wants its lines.
func lines(text string) []string {
	l := strings.SplitAfter(text, "\n")
	if l[len(l)-1] == "" {
		l = l[:len(l)-1]
	}
	return l
}

// State is the answer of GET api/state: the page polls it and reads the
// announcement again when Version changes (the app directory changed).
type State struct {
	Version string `json:"version"`
}

// maxStateEntries bounds the walk of the app directory for api/state.
const maxStateEntries = 10000

// appDirVersion sums the names, sizes, modes and modification times of
// the files under dir (the first maxStateEntries): it changes when a file
// is added, removed or written. Nothing is read but directory entries.
func appDirVersion(dir string) string {
	h := sha256.New()
	n := 0
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			fmt.Fprintf(h, "%s\x00error\x00", p)
			return nil
		}
		if n++; n > maxStateEntries {
			return filepath.SkipAll
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		fmt.Fprintf(h, "%s\x00%d\x00%d\x00%d\x00", p, info.Size(), info.Mode(), info.ModTime().UnixNano())
		return nil
	})
	return hex.EncodeToString(h.Sum(nil)[:12])
}
