package kubetest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// proc is one child process (etcd or kube-apiserver) with its output in a
// log file.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logFile string
	log     *os.File

	done    chan struct{} // closed when the process has exited and been reaped
	waitErr error         // valid after done

	stopOnce sync.Once
	stopErr  error
}

// stopGrace is how long a process has to exit after SIGTERM before it is
// killed.
const stopGrace = 15 * time.Second

// startProc starts argv[0] with argv[1:], its stdout and stderr appended to
// logFile. The process gets its own process group, so stop reaches anything
// it starts, and (on Linux) dies with the process that started it.
func startProc(name, logFile string, argv []string) (*proc, error) {
	log, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout = log
	cmd.Stderr = log
	cmd.Env = os.Environ()
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("starting %s (%s): %w", name, argv[0], err)
	}
	p := &proc{name: name, cmd: cmd, logFile: logFile, log: log, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		log.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has exited.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop ends the process: SIGTERM to its process group, then SIGKILL after
// stopGrace, and waits until it is reaped. It is safe to call more than once.
func (p *proc) stop() error {
	p.stopOnce.Do(func() {
		if p.exited() {
			killGroup(p.cmd) // leave nothing of the group behind
			return
		}
		if err := terminateGroup(p.cmd); err != nil && !p.exited() {
			p.stopErr = fmt.Errorf("stopping %s (pid %d): %w", p.name, p.cmd.Process.Pid, err)
		}
		select {
		case <-p.done:
		case <-time.After(stopGrace):
		}
		// Kill what is left: the process itself if it ignored SIGTERM, and
		// any child it left in its group.
		killGroup(p.cmd)
		<-p.done
	})
	return p.stopErr
}

// tail returns the last n lines of the process's log.
func (p *proc) tail(n int) string {
	return fileTail(p.logFile, n)
}

// fileTail returns the last n lines of a file, reading at most its last
// 256 KiB.
func fileTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	const window = 256 << 10
	if info, err := f.Stat(); err == nil && info.Size() > window {
		if _, err := f.Seek(-window, io.SeekEnd); err != nil {
			return fmt.Sprintf("(reading log: %v)", err)
		}
	}
	data, err := io.ReadAll(io.LimitReader(f, window))
	if err != nil {
		return fmt.Sprintf("(reading log: %v)", err)
	}
	data = bytes.TrimRight(data, "\n")
	lines := bytes.Split(data, []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// errExited reports a process that exited while it should be starting.
var errExited = errors.New("exited during start-up")
