package clustertest_test

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"

	"github.com/strata-dev/strata/internal/operator/kubebind"
)

// proxy forwards TCP connections to the API server until cut: then it
// drops every connection and accepts none (closing them at once) until
// restored, as an API server that restarts.
type proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]struct{}
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	t.Cleanup(func() {
		ln.Close()
		p.cut()
	})
	go p.serve()
	return p
}

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c], p.conns[up] = struct{}{}, struct{}{}
		p.mu.Unlock()
		go pipe(c, up)
		go pipe(up, c)
	}
}

func pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
}

// cut drops every connection and refuses new ones until restore; it
// returns how many connections it dropped.
func (p *proxy) cut() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	n := len(p.conns)
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
	return n
}

func (p *proxy) restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

// TestAPIServerOutage: the watches outlive a cut of every connection to
// the API server; the changes made meanwhile arrive once, and objects that
// did not change make no event.
func TestAPIServerOutage(t *testing.T) {
	e := setup(t)
	u, err := url.Parse(e.c.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, u.Host)
	rc := rest.CopyConfig(e.c.Config)
	rc.Host = "https://" + p.ln.Addr().String()
	src, err := kubebind.NewClusterSource(rc)
	if err != nil {
		t.Fatal(err)
	}
	src.RetryMin, src.RetryMax, src.OnError = e.src.RetryMin, e.src.RetryMax, e.src.OnError
	e.src = src
	ns := unique("kb-outage-")
	e.namespace(ns, "")
	for _, n := range []string{"a", "b", "c", "d"} {
		e.apply(configMaps, cm(ns, n, "", n+"1"))
	}
	_, sync := e.start(binding(fmt.Sprintf("  namespace: {nameSelector: {matchNames: [%s]}}\n", ns)))
	if want := res(ns, "a", "a1") + " " + res(ns, "b", "b1") + " " + res(ns, "c", "c1") + " " + res(ns, "d", "d1"); sync != want {
		t.Fatalf("Synchronization %s, want %s", sync, want)
	}
	if n := p.cut(); n == 0 {
		t.Fatal("the source had no connection through the proxy to cut")
	}
	e.apply(configMaps, cm(ns, "a", "", "a2"))
	e.delete(configMaps, ns, "b")
	e.apply(configMaps, cm(ns, "e", "", "e1"))
	e.apply(configMaps, cm(ns, "c", "", "c1")) // applied again: no change
	p.restore()
	got := []string{e.next(), e.next(), e.next()}
	slices.Sort(got)
	want := []string{"Added " + res(ns, "e", "e1"), "Deleted " + res(ns, "b", "b1"), "Modified " + res(ns, "a", "a2")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("events after the outage (-want +got):\n%s", diff)
	}
	e.apply(configMaps, cm(ns, "d", "", "d2"))
	e.expect("Modified " + res(ns, "d", "d2"))
}
