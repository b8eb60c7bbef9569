//go:build linux

package clustertest

import (
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// gitServer serves bare repositories over git's smart HTTP protocol, by
// git's own http-backend behind net/http/cgi, on a loopback port.
type gitServer struct {
	root string // GIT_PROJECT_ROOT: NAME.git directories
	url  string // http://127.0.0.1:PORT
	srv  *http.Server
}

func startGitServer(root string) (*gitServer, error) {
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		return nil, fmt.Errorf("git --exec-path: %w (git must be installed)", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		return nil, fmt.Errorf("git's http-backend: %w", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h := &cgi.Handler{
		Path: backend,
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"},
	}
	g := &gitServer{root: root, url: "http://" + l.Addr().String(), srv: &http.Server{Handler: h}}
	go g.srv.Serve(l) //nolint:errcheck // ends with Close
	return g, nil
}

// gitRepo is a working copy whose commits are pushed to the server.
type gitRepo struct {
	work string
	bare string // the served repository
	url  string // what Argo CD clones
}

// git runs git in dir with a fixed identity and no user configuration.
func git(dir string, args ...string) error {
	cmd := exec.Command("git", append([]string{"-c", "user.name=strata e2e", "-c", "user.email=e2e@strata.invalid", "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return nil
}

// newRepo makes repository NAME on the server from the files of src.
func (g *gitServer) newRepo(name, src, work string) (*gitRepo, error) {
	if err := os.CopyFS(work, os.DirFS(src)); err != nil {
		return nil, err
	}
	bare := filepath.Join(g.root, name+".git")
	steps := [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		{"commit", "-q", "-m", "initial"},
		{"init", "-q", "--bare", "-b", "main", bare},
		{"push", "-q", bare, "main"},
	}
	for _, s := range steps {
		if err := git(work, s...); err != nil {
			return nil, err
		}
	}
	return &gitRepo{work: work, bare: bare, url: g.url + "/" + name + ".git"}, nil
}

func (g *gitServer) close() { g.srv.Close() }
