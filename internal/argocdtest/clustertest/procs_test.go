//go:build linux

package clustertest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is a process the setup started: its log is a file, and it is
// stopped (SIGTERM to its process group, then SIGKILL) when the package's
// tests end.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error // after done
}

// start runs argv with env (the whole environment) and dir, its output
// going to dir/../logs/NAME.log.
func start(name, logDir string, env []string, argv ...string) (*proc, error) {
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s (%s): %w", name, argv[0], err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether p has ended, with how.
func (p *proc) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// stop ends p's process group: SIGTERM, then SIGKILL after grace.
func (p *proc) stop(grace time.Duration) {
	if ok, _ := p.exited(); ok {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// tail is the end of p's log: n lines at most.
func (p *proc) tail(n int) string {
	data, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitLog waits until p's log has a line starting with prefix and returns
// the rest of that line.
func (p *proc) waitLog(ctx context.Context, prefix string) (string, error) {
	for {
		data, _ := os.ReadFile(p.log)
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), prefix); ok {
				return rest, nil
			}
		}
		if ok, err := p.exited(); ok {
			return "", fmt.Errorf("%s exited (%v) before printing %q; its log:\n%s", p.name, err, prefix, p.tail(40))
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("%s did not print %q: %w; its log:\n%s", p.name, prefix, ctx.Err(), p.tail(40))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitListen waits until addr accepts TCP connections, or p exits.
func (p *proc) waitListen(ctx context.Context, addr string) error {
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if ok, err := p.exited(); ok {
			return fmt.Errorf("%s exited (%v) before listening on %s; its log:\n%s", p.name, err, addr, p.tail(40))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s is not listening on %s: %w; its log:\n%s", p.name, addr, ctx.Err(), p.tail(40))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitFile waits until path exists, or p exits.
func (p *proc) waitFile(ctx context.Context, path string) error {
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		if ok, err := p.exited(); ok {
			return fmt.Errorf("%s exited (%v) before creating %s; its log:\n%s", p.name, err, path, p.tail(40))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not create %s: %w; its log:\n%s", p.name, path, ctx.Err(), p.tail(40))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// ports hands out free loopback ports, never the same twice in a process.
var ports struct {
	mu   sync.Mutex
	seen map[int]bool
}

// freeAddr is 127.0.0.1:PORT with a port nothing listened on a moment ago.
func freeAddr() (string, error) {
	ports.mu.Lock()
	defer ports.mu.Unlock()
	if ports.seen == nil {
		ports.seen = map[int]bool{}
	}
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !ports.seen[port] {
			ports.seen[port] = true
			return "127.0.0.1:" + strconv.Itoa(port), nil
		}
	}
	return "", fmt.Errorf("no free loopback port found")
}

// portOf is the port of HOST:PORT.
func portOf(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return port
}
