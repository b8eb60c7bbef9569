package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/strata-dev/strata/internal/manifest"
)

// A Bench measures the servers on the repositories. Set the fields, then
// call Run.
type Bench struct {
	Strata, Argo, Helm string // the binaries
	YQ, JQ             string // the announcement pipeline's tools; "" skips that comparison
	Self               []string
	Subchart           string // Helm's subchart test chart
	Dir                string // parent of the servers' work directories (disk)
	Tmpfs              string // parent of the extra column's work directories; "" for none
	MonorepoFiles      int
	// Requests per row: at 1 client and at 16 clients, for the small
	// repositories, the monorepo and the Helm rows.
	Small1, Small16, Big1, Big16, Helm1, Helm16 int
	Log                                         *slog.Logger
}

// Clients is the concurrency of the throughput rows.
const Clients = 16

// A Report is what Run measured.
type Report struct {
	Repos  []RepoResult
	Memory []Memory
	Helm   []HelmResult
	Notes  []string // comparisons not run, and why

	Command string        // how to run it again
	Date    time.Time     // when it began
	Took    time.Duration // how long it ran
	Machine string        // CPU, kernel, file systems
}

// A RepoResult is one repository's rows, one per server.
type RepoResult struct {
	Name    string
	Files   int
	Content int64
	Tgz     int64
	Rows    []ServerResult
}

// A ServerResult is one server's samples on one repository.
type ServerResult struct {
	Server string // argo, strata, floor
	FS     string // disk or tmpfs ("" for the floor, which writes nothing)
	One    Sample // requests one at a time
	Many   Sample // Clients at a time
}

// Memory is a server's peak resident set during the monorepo's
// concurrent row.
type Memory struct {
	Server, FS string
	PeakRSS    int64
}

// A HelmResult compares the built-in Helm plugin through the sidecar with
// the process a user would run otherwise.
type HelmResult struct {
	Request   string
	Peer      string
	Strata    [2]Sample // at 1 and at Clients clients
	PeerTimes [2]Sample
}

// Run generates the repositories, starts the servers, measures, and stops
// them.
func (b *Bench) Run(ctx context.Context) (*Report, error) {
	log := b.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	sockets, err := os.MkdirTemp("", "cmps") // short: a socket path has at most 108 bytes
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(sockets)
	conf := filepath.Join(b.Dir, "config")
	if err := os.MkdirAll(conf, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(conf, "plugin.yaml"), []byte(pluginYAML), 0o644); err != nil {
		return nil, err
	}

	log.Info("generating the repositories", "monorepoFiles", b.MonorepoFiles)
	ten, err := monorepo(10)
	if err != nil {
		return nil, err
	}
	small, err := helmStyleRepo()
	if err != nil {
		return nil, err
	}
	big, err := monorepo(b.MonorepoFiles)
	if err != nil {
		return nil, err
	}
	helm, err := helmRepo(b.Subchart)
	if err != nil {
		return nil, err
	}

	// The servers: Argo CD's sidecar and strata with their work
	// directories on disk (and on tmpfs with -tmpfs), and the floor.
	var servers []*server
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	n := 0
	launch := func(sp serverSpec) (*server, error) {
		n++
		s, err := start(ctx, sp, b.Dir)
		if err != nil {
			return nil, err
		}
		servers = append(servers, s)
		return s, nil
	}
	socketDir := func() (string, error) {
		d := filepath.Join(sockets, fmt.Sprint(n))
		return d, os.Mkdir(d, 0o755)
	}
	type fsys struct{ name, dir string }
	filesystems := []fsys{{"disk", b.Dir}}
	if b.Tmpfs != "" {
		filesystems = append(filesystems, fsys{"tmpfs", b.Tmpfs})
	}
	type running struct {
		s      *server
		kind   string
		fsName string
	}
	var cmd []running
	for _, f := range filesystems {
		kinds := []string{"argo", "strata"}
		if f.name == "disk" {
			// strata with each command in its own namespaces, where
			// the kernel allows them (Kubernetes' RuntimeDefault
			// seccomp profile does not).
			kinds = append(kinds, "strata-ns")
		}
		for _, kind := range kinds {
			sd, err := socketDir()
			if err != nil {
				return nil, err
			}
			work := filepath.Join(f.dir, kind)
			if err := os.MkdirAll(filepath.Join(work, "tmp"), 0o755); err != nil {
				return nil, err
			}
			sp := serverSpec{name: fmt.Sprintf("%s (%s)", kind, f.name), kind: kind, socket: filepath.Join(sd, "cat.sock"), work: work}
			env := environ("TMPDIR=" + filepath.Join(work, "tmp"))
			switch kind {
			case "argo":
				sp.argv = []string{b.Argo, "--config-dir-path", conf}
				sp.env = append(env, "ARGOCD_PLUGINSOCKFILEPATH="+sd, "ARGOCD_CMP_WORKDIR="+work)
			case "strata":
				sp.argv = []string{b.Strata, "cmp", "serve", "--config", filepath.Join(conf, "plugin.yaml"),
					"--socket-dir", sd, "--cache-dir", filepath.Join(work, "cache")}
				sp.env = env
			case "strata-ns":
				sp.argv = []string{b.Strata, "cmp", "serve", "--config", filepath.Join(conf, "plugin.yaml"),
					"--socket-dir", sd, "--cache-dir", filepath.Join(work, "cache"), "--command-namespaces"}
				sp.env = env
			}
			log.Info("starting", "server", sp.name, "work", work)
			s, err := launch(sp)
			if err != nil {
				return nil, err
			}
			cmd = append(cmd, running{s, kind, f.name})
		}
	}
	sd, err := socketDir()
	if err != nil {
		return nil, err
	}
	fl, err := launch(serverSpec{name: "floor", kind: "floor", socket: filepath.Join(sd, "cat.sock"),
		argv: b.Self, env: environ(floorEnv + "=" + filepath.Join(sd, "cat.sock"))})
	if err != nil {
		return nil, err
	}
	cmd = append(cmd, running{fl, "floor", ""})
	// The floor plus one start of the plugin's command, in a directory on
	// the same disk as the servers' work directories.
	if sd, err = socketDir(); err != nil {
		return nil, err
	}
	floorDir := filepath.Join(b.Dir, "floor-command")
	if err := os.MkdirAll(floorDir, 0o755); err != nil {
		return nil, err
	}
	fc, err := launch(serverSpec{name: "floor + command", kind: "floorcmd", socket: filepath.Join(sd, "cat.sock"),
		argv: b.Self, env: environ(floorEnv+"="+filepath.Join(sd, "cat.sock"), floorDirEnv+"="+floorDir)})
	if err != nil {
		return nil, err
	}
	cmd = append(cmd, running{fc, "floorcmd", ""})

	rep := &Report{}
	for _, r := range []struct {
		repo     *repo
		one, all int
	}{{ten, b.Small1, b.Small16}, {small, b.Small1, b.Small16}, {big, b.Big1, b.Big16}} {
		rr := RepoResult{Name: r.repo.name, Files: len(r.repo.files), Content: r.repo.content, Tgz: int64(len(r.repo.tgz))}
		fn := generateCall(r.repo, r.repo.appDir, manifestCount)
		for _, s := range cmd {
			rr.Rows = append(rr.Rows, ServerResult{Server: s.kind, FS: s.fsName})
			// One request first, so that no row measures a process's first
			// request, and strata's row measures a repeated one.
			if err := fn(ctx, s.s.socket); err != nil {
				return nil, fmt.Errorf("%s, %s: %w", rr.Name, s.s.name, err)
			}
		}
		isBig := r.repo == big
		// The servers in turn at each step, so that all see the same
		// machine load.
		for i, s := range cmd {
			log.Info("measuring", "repo", rr.Name, "server", s.s.name, "clients", 1, "requests", r.one)
			if rr.Rows[i].One, err = measure(ctx, r.one, 1, func(ctx context.Context) error { return fn(ctx, s.s.socket) }); err != nil {
				return nil, fmt.Errorf("%s, %s: %w", rr.Name, s.s.name, err)
			}
		}
		for i, s := range cmd {
			if isBig {
				if err := s.s.resetPeakRSS(); err != nil {
					return nil, fmt.Errorf("resetting the peak RSS of %s: %w", s.s.name, err)
				}
			}
			log.Info("measuring", "repo", rr.Name, "server", s.s.name, "clients", Clients, "requests", r.all)
			if rr.Rows[i].Many, err = measure(ctx, r.all, Clients, func(ctx context.Context) error { return fn(ctx, s.s.socket) }); err != nil {
				return nil, fmt.Errorf("%s, %s: %w", rr.Name, s.s.name, err)
			}
			if isBig {
				peak, err := s.s.peakRSS()
				if err != nil {
					return nil, fmt.Errorf("the peak RSS of %s: %w", s.s.name, err)
				}
				rep.Memory = append(rep.Memory, Memory{Server: s.kind, FS: s.fsName, PeakRSS: peak})
			}
		}
		log.Info("measured", "repo", rr.Name, "results", rr.summary())
		rep.Repos = append(rep.Repos, rr)
	}

	// The built-in Helm plugin, through a sidecar on disk, beside the
	// processes a user would run instead, on a checkout on the same disk.
	sd, err = socketDir()
	if err != nil {
		return nil, err
	}
	work := filepath.Join(b.Dir, "strata-helm")
	if err := os.MkdirAll(filepath.Join(work, "tmp"), 0o755); err != nil {
		return nil, err
	}
	hs, err := launch(serverSpec{name: "strata helm (disk)", kind: "strata", socket: filepath.Join(sd, "helm.sock"), work: work,
		argv: []string{b.Strata, "cmp", "serve", "--builtin", "helm", "--socket-dir", sd, "--cache-dir", filepath.Join(work, "cache")},
		env:  environ("TMPDIR=" + filepath.Join(work, "tmp"))})
	if err != nil {
		return nil, err
	}
	checkout := filepath.Join(b.Dir, "checkout")
	if err := helm.writeTo(checkout); err != nil {
		return nil, err
	}
	home := filepath.Join(b.Dir, "helm-home")
	helmEnv := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "HELM_CACHE_HOME=" + home + "/cache",
		"HELM_CONFIG_HOME=" + home + "/config", "HELM_DATA_HOME=" + home + "/data"}
	helmTemplate := func(ctx context.Context) ([]byte, error) {
		c := exec.CommandContext(ctx, b.Helm, "template", filepath.Join(checkout, "apps", "subchart"),
			"--name-template", "web", "--namespace", "default", "--include-crds")
		c.Env = helmEnv
		var stderr bytes.Buffer
		c.Stderr = &stderr
		out, err := c.Output()
		if err != nil {
			return nil, fmt.Errorf("helm template: %v: %s", err, stderr.String())
		}
		return out, nil
	}
	out, err := helmTemplate(ctx)
	if err != nil {
		return nil, err
	}
	docs, err := countDocuments(out)
	if err != nil {
		return nil, err
	}
	hr := HelmResult{Request: "render Helm's subchart chart (GenerateManifest)", Peer: "`helm template` process"}
	gen := generateCall(helm, "apps/subchart", docs)
	if err := gen(ctx, hs.socket); err != nil {
		return nil, fmt.Errorf("the built-in Helm plugin on the subchart chart (helm template printed %d documents): %w", docs, err)
	}
	peer := func(ctx context.Context) error { _, err := helmTemplate(ctx); return err }
	if err := b.pair(ctx, log, &hr, func(ctx context.Context) error { return gen(ctx, hs.socket) }, peer); err != nil {
		return nil, err
	}
	rep.Helm = append(rep.Helm, hr)

	ann := announceCall(helm, "apps/values", 5000)
	if err := ann(ctx, hs.socket); err != nil {
		return nil, fmt.Errorf("the built-in Helm plugin's announcement: %w", err)
	}
	if b.YQ == "" || b.JQ == "" {
		rep.Notes = append(rep.Notes, "The announcement was not compared with the yq | jq pipeline: "+missingTools(b.YQ, b.JQ))
	} else {
		values := filepath.Join(checkout, "apps", "values")
		out, err := pipeline(ctx, b.YQ, b.JQ, values)
		if err != nil {
			return nil, err
		}
		var anns []struct{ Map map[string]string }
		if err := json.Unmarshal(out, &anns); err != nil || len(anns) != 1 || len(anns[0].Map) != 5000 {
			return nil, fmt.Errorf("the yq | jq pipeline announced %d parameters (%v), want one map of 5000 entries", len(anns), err)
		}
		hr := HelmResult{Request: "announce a 5,000-leaf values.yaml (GetParametersAnnouncement)", Peer: "`yq ∣ jq` pipeline"}
		peer := func(ctx context.Context) error { _, err := pipeline(ctx, b.YQ, b.JQ, values); return err }
		if err := b.pair(ctx, log, &hr, func(ctx context.Context) error { return ann(ctx, hs.socket) }, peer); err != nil {
			return nil, err
		}
		rep.Helm = append(rep.Helm, hr)
	}
	return rep, nil
}

// pair measures strata's call and the peer's, at 1 client then at
// Clients, alternating.
func (b *Bench) pair(ctx context.Context, log *slog.Logger, hr *HelmResult, strata, peer func(context.Context) error) error {
	var err error
	for i, c := range []struct{ conc, n int }{{1, b.Helm1}, {Clients, b.Helm16}} {
		log.Info("measuring", "request", hr.Request, "clients", c.conc, "requests", c.n)
		if hr.Strata[i], err = measure(ctx, c.n, c.conc, strata); err != nil {
			return fmt.Errorf("%s, strata: %w", hr.Request, err)
		}
		if hr.PeerTimes[i], err = measure(ctx, c.n, c.conc, peer); err != nil {
			return fmt.Errorf("%s, %s: %w", hr.Request, hr.Peer, err)
		}
	}
	return nil
}

// countDocuments counts the YAML documents of helm template's output that
// hold more than comments (manifest.Split).
func countDocuments(out []byte) (int, error) {
	docs, err := manifest.Split(out, "helm template's output", manifest.Limits{})
	return len(docs), err
}

// yqJQ is the proposal's get-parameters.sh (example 3), as in
// internal/helmplugin's benchmarks: yq prints the values as properties,
// jq turns them into an announcement.
const yqJQ = `
  [{
    name: "helm-parameters",
    title: "Helm Parameters",
    collectionType: "map",
    map: split("\n") | map(capture("(?<key>.*) = (?<value>.*)")) | from_entries
  }]`

// pipeline runs `yq e -o=p values.yaml | jq --slurp --raw-input PROGRAM` in
// dir: two processes joined by a pipe, no shell.
func pipeline(ctx context.Context, yq, jq, dir string) ([]byte, error) {
	y := exec.CommandContext(ctx, yq, "e", "-o=p", "values.yaml")
	y.Dir = dir
	j := exec.CommandContext(ctx, jq, "--slurp", "--raw-input", yqJQ)
	j.Dir = dir
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	y.Stdout, j.Stdin = w, r
	var out bytes.Buffer
	j.Stdout = &out
	if err := y.Start(); err != nil {
		w.Close()
		r.Close()
		return nil, err
	}
	if err := j.Start(); err != nil {
		w.Close()
		r.Close()
		_ = y.Wait()
		return nil, err
	}
	w.Close()
	r.Close()
	errY, errJ := y.Wait(), j.Wait()
	if err := errors.Join(errY, errJ); err != nil {
		return nil, fmt.Errorf("yq | jq: %w", err)
	}
	return out.Bytes(), nil
}

// floorEnv names the variable that makes this program serve the floor on
// the socket it holds, instead of running the benchmark; with floorDirEnv
// set too, the floor runs `cat m.yaml` in that directory for each request.
const (
	floorEnv    = "CMPBENCH_SERVE_FLOOR"
	floorDirEnv = "CMPBENCH_FLOOR_DIR"
)

// environ returns this process's environment without TMPDIR, floorEnv and
// floorDirEnv, plus extra.
func environ(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TMPDIR=") && !strings.HasPrefix(kv, floorEnv+"=") && !strings.HasPrefix(kv, floorDirEnv+"=") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

func (rr RepoResult) summary() string {
	var parts []string
	for _, r := range rr.Rows {
		parts = append(parts, fmt.Sprintf("%s%s p50 %s, %.1f/s", r.Server, fsSuffix(r.FS), ms(r.One.Quantile(0.5)), r.Many.PerSecond()))
	}
	return strings.Join(parts, "; ")
}

func fsSuffix(fs string) string {
	if fs == "" {
		return ""
	}
	return " (" + fs + ")"
}

// missingTools says which of the pipeline's tools were not found.
func missingTools(yq, jq string) string {
	var m []string
	if yq == "" {
		m = append(m, "the Go yq (github.com/mikefarah/yq/v4) is not on PATH (make bench-cmp installs it into .cache/genbin; Debian's yq is another program)")
	}
	if jq == "" {
		m = append(m, "jq is not on PATH (apt-get install jq)")
	}
	return strings.Join(m, "; ")
}

// ms formats d in milliseconds with about three significant digits.
func ms(d time.Duration) string {
	m := float64(d) / float64(time.Millisecond)
	switch {
	case m < 10:
		return fmt.Sprintf("%.2f ms", m)
	case m < 100:
		return fmt.Sprintf("%.1f ms", m)
	case m < 10_000:
		return fmt.Sprintf("%.0f ms", m)
	}
	return fmt.Sprintf("%.1f s", m/1000)
}
