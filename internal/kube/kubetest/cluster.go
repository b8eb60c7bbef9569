// Package kubetest starts a real Kubernetes control plane — etcd and
// kube-apiserver, no kubelet, no controller-manager — for integration tests
// and for `make cluster`.
//
// In a test, [Start] gives the test its own control plane, stopped when the
// test ends; [Shared] gives every test of the package one control plane,
// started on first use and stopped by [Main] from the package's TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }
//
//	func TestThing(t *testing.T) {
//		c := kubetest.Shared(t)
//		c.Client.CoreV1().ConfigMaps("default").Create(...)
//	}
//
// The binaries come from internal/testbin, which builds them from the Go
// module proxy on first use (or set STRATA_SKIP_CLUSTER_TESTS=1 to skip
// these tests on a machine without them; CI refuses it). Outside tests,
// [StartCluster] does the work and returns errors instead.
//
// The control plane listens on loopback only, on free ports, with
// self-signed certificates generated at start; the admin user authenticates
// with a client certificate in the group system:masters, and authorization is
// RBAC. What needs controllers does not happen: namespaces are not finalized
// (a deleted namespace stays Terminating — use a fresh namespace per test
// instead of deleting one), owner references are not garbage-collected, no
// service account or token is created, and pods are never scheduled. The
// ServiceAccount admission plugin is off so pods can be created.
package kubetest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/strata-dev/strata/internal/testbin"
)

// DefaultStartTimeout bounds start-up when Options.StartTimeout is zero.
const DefaultStartTimeout = 3 * time.Minute

// serviceCIDR is the range Services get their cluster IPs from; serviceIP is
// the first, the `kubernetes` Service's.
const (
	serviceCIDR = "10.0.0.0/24"
	serviceIP   = "10.0.0.1"
)

// startAttempts is how often a process is started again when a port it
// was given was taken in the meantime.
const startAttempts = 3

// Options configure a control plane.
type Options struct {
	// EtcdPath and APIServerPath are the binaries to run; empty means the
	// ones internal/testbin builds (building them when missing).
	EtcdPath      string
	APIServerPath string

	// Dir receives the data, certificates, kubeconfig and logs. Empty
	// means a new temporary directory, removed by Stop.
	Dir string

	// CRDs are YAML files, or directories of .yaml/.yml/.json files,
	// holding CustomResourceDefinitions to install once the API server is
	// ready. StartCluster returns when they are established.
	CRDs []string

	// APIServerArgs are extra kube-apiserver flags, after kubetest's own
	// (for a repeated flag, the later one wins).
	APIServerArgs []string

	// StartTimeout bounds the start-up, CRDs included; zero means
	// DefaultStartTimeout.
	StartTimeout time.Duration

	// Logger receives one line per start-up step; nil means none.
	Logger *slog.Logger

	// BuildOutput receives the progress of building missing binaries; nil
	// means it is dropped.
	BuildOutput io.Writer
}

// Cluster is a running control plane.
type Cluster struct {
	// Config reaches the API server as the admin user.
	Config *rest.Config
	// Kubeconfig is the path of a kubeconfig file with the same access,
	// for tools (kubectl, strata, helm) run by tests.
	Kubeconfig string
	// Client and Dynamic are clients for Config.
	Client  kubernetes.Interface
	Dynamic dynamic.Interface
	// Dir holds the data, certificates, kubeconfig and logs.
	Dir string
	// EtcdURL is etcd's client URL.
	EtcdURL string

	etcd      *proc
	apiMu     sync.Mutex    // guards apiserver and restart
	apiserver *proc         // the running kube-apiserver
	restart   chan struct{} // non-nil while RestartAPIServer works; closed after
	apiArgv   []string      // how kube-apiserver was started
	apiProbe  func(context.Context) error
	done      chan struct{} // closed when either process has exited (not by a restart)
	removeDir bool
	stopOnce  sync.Once
	stopErr   error
}

// StartCluster starts etcd and kube-apiserver and returns when the API
// server is ready and the CRDs in o are established. ctx bounds the
// start-up only: the processes run until Stop. On error nothing is left
// running, and the error carries the tail of the failing process's log.
func StartCluster(ctx context.Context, o Options) (c *Cluster, err error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	timeout := o.StartTimeout
	if timeout <= 0 {
		timeout = DefaultStartTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	if o.EtcdPath == "" {
		if o.EtcdPath, err = testbin.Build(ctx, "etcd", o.BuildOutput); err != nil {
			return nil, err
		}
	}
	if o.APIServerPath == "" {
		if o.APIServerPath, err = testbin.Build(ctx, "kube-apiserver", o.BuildOutput); err != nil {
			return nil, err
		}
	}

	c = &Cluster{Dir: o.Dir}
	if c.Dir == "" {
		if c.Dir, err = os.MkdirTemp("", "strata-kubetest-"); err != nil {
			return nil, fmt.Errorf("creating the cluster directory: %w", err)
		}
		c.removeDir = true
	} else if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the cluster directory: %w", err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Stop())
			c = nil
		}
	}()

	pki, err := newPKI(filepath.Join(c.Dir, "pki"), 365*24*time.Hour)
	if err != nil {
		return c, fmt.Errorf("generating certificates: %w", err)
	}

	start := time.Now()
	if err := c.startEtcd(ctx, o.EtcdPath); err != nil {
		return c, err
	}
	log.Info("etcd ready", "url", c.EtcdURL, "pid", c.etcd.cmd.Process.Pid, "took", time.Since(start).Round(time.Millisecond))

	start = time.Now()
	if err := c.startAPIServer(ctx, o.APIServerPath, pki, o.APIServerArgs); err != nil {
		return c, err
	}
	log.Info("kube-apiserver ready", "url", c.Config.Host, "pid", c.apiserver.cmd.Process.Pid, "took", time.Since(start).Round(time.Millisecond))

	if c.Client, err = kubernetes.NewForConfig(c.Config); err != nil {
		return c, err
	}
	if c.Dynamic, err = dynamic.NewForConfig(c.Config); err != nil {
		return c, err
	}
	if err := c.waitDefaultNamespace(ctx); err != nil {
		return c, err
	}
	c.Kubeconfig = filepath.Join(c.Dir, "kubeconfig")
	if err := writeKubeconfig(c.Kubeconfig, c.Config.Host, pki); err != nil {
		return c, fmt.Errorf("writing %s: %w", c.Kubeconfig, err)
	}
	if len(o.CRDs) > 0 {
		start = time.Now()
		if err := c.InstallCRDs(ctx, o.CRDs...); err != nil {
			return c, err
		}
		log.Info("CRDs established", "paths", o.CRDs, "took", time.Since(start).Round(time.Millisecond))
	}
	c.done = make(chan struct{})
	go c.watchDone()
	return c, nil
}

// watchDone closes c.done when etcd or kube-apiserver exits, except for
// the kube-apiserver a restart stops.
func (c *Cluster) watchDone() {
	for {
		c.apiMu.Lock()
		p := c.apiserver
		c.apiMu.Unlock()
		select {
		case <-c.etcd.done:
			close(c.done)
			return
		case <-p.done:
		}
		c.apiMu.Lock()
		wait, replaced := c.restart, c.apiserver != p
		c.apiMu.Unlock()
		if wait == nil && !replaced {
			close(c.done)
			return
		}
		if wait != nil {
			<-wait
		}
	}
}

// api is the running kube-apiserver.
func (c *Cluster) api() *proc {
	c.apiMu.Lock()
	defer c.apiMu.Unlock()
	return c.apiserver
}

// RestartAPIServer stops kube-apiserver (SIGTERM) and starts it again with
// the same flags, port, certificates and etcd, as an upgrade or a crash
// of the control plane would, and returns when it is ready again. Clients
// keep working with their configuration once it is back; watches are cut.
// Done is not closed by the restart. A test using it should have a control
// plane of its own (Start), not the shared one.
func (c *Cluster) RestartAPIServer(ctx context.Context) error {
	wait := make(chan struct{})
	c.apiMu.Lock()
	old := c.apiserver
	c.restart = wait
	c.apiMu.Unlock()
	defer func() {
		c.apiMu.Lock()
		c.restart = nil
		c.apiMu.Unlock()
		close(wait)
	}()
	if err := old.stop(); err != nil {
		return err
	}
	p, err := startProc("kube-apiserver", old.logFile, c.apiArgv)
	if err != nil {
		return err
	}
	c.apiMu.Lock()
	c.apiserver = p
	c.apiMu.Unlock()
	if err := waitReady(ctx, p, c.apiProbe); err != nil {
		return fmt.Errorf("restarting kube-apiserver: %w\n--- %s (tail) ---\n%s", err, p.logFile, p.tail(40))
	}
	return nil
}

// Done returns a channel that is closed when etcd or kube-apiserver has
// exited, whether by Stop or on its own.
func (c *Cluster) Done() <-chan struct{} { return c.done }

// startEtcd starts etcd on free loopback ports and waits until it is
// healthy, starting again on other ports if one was taken meanwhile.
func (c *Cluster) startEtcd(ctx context.Context, bin string) error {
	var lastErr error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		ports, err := freePorts(2)
		if err != nil {
			return err
		}
		dataDir := filepath.Join(c.Dir, "etcd")
		if err := os.RemoveAll(dataDir); err != nil { // left by a failed attempt
			return err
		}
		clientURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
		peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
		p, err := startProc("etcd", filepath.Join(c.Dir, "etcd.log"), []string{bin,
			"--name=kubetest",
			"--data-dir=" + dataDir,
			"--listen-client-urls=" + clientURL,
			"--advertise-client-urls=" + clientURL,
			"--listen-peer-urls=" + peerURL,
			"--initial-advertise-peer-urls=" + peerURL,
			"--initial-cluster=kubetest=" + peerURL,
			"--initial-cluster-state=new",
			// Test data need not survive a power cut; fsync dominates
			// etcd's latency on slow disks.
			"--unsafe-no-fsync=true",
		})
		if err != nil {
			return err
		}
		c.etcd = p
		c.EtcdURL = clientURL
		hc := &http.Client{Timeout: 2 * time.Second}
		lastErr = waitReady(ctx, p, func(ctx context.Context) error {
			return probe(ctx, hc, clientURL+"/health", `"health":"true"`)
		})
		if lastErr == nil {
			return nil
		}
		if !errors.Is(lastErr, errExited) || !portTaken(p) {
			break
		}
		_ = p.stop() // it has exited; reap what is left before retrying
	}
	return fmt.Errorf("starting etcd: %w\n--- %s (tail) ---\n%s", lastErr, c.etcd.logFile, c.etcd.tail(40))
}

// startAPIServer starts kube-apiserver on a free loopback port and waits
// until /readyz answers ok.
func (c *Cluster) startAPIServer(ctx context.Context, bin string, pki *pki, extra []string) error {
	cert, err := tls.X509KeyPair(pki.adminCert, pki.adminKey)
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pki.caCert)
	hc := &http.Client{
		Timeout: 2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{
			RootCAs:      roots,
			Certificates: []tls.Certificate{cert},
			MinVersion:   tls.VersionTLS12,
		}},
	}
	defer hc.CloseIdleConnections()

	var lastErr error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		ports, err := freePorts(1)
		if err != nil {
			return err
		}
		host := "https://127.0.0.1:" + strconv.Itoa(ports[0])
		args := []string{bin,
			"--etcd-servers=" + c.EtcdURL,
			"--bind-address=127.0.0.1",
			"--advertise-address=127.0.0.1",
			// The endpoint reconciler refuses a loopback address; the
			// `kubernetes` Service gets no endpoints, which nothing here needs.
			"--endpoint-reconciler-type=none",
			"--secure-port=" + strconv.Itoa(ports[0]),
			"--cert-dir=" + pki.dir,
			"--tls-cert-file=" + pki.servingCertFile,
			"--tls-private-key-file=" + pki.servingKeyFile,
			"--client-ca-file=" + pki.caFile,
			"--authorization-mode=RBAC",
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file=" + pki.saPublicFile,
			"--service-account-signing-key-file=" + pki.saPrivateFile,
			"--service-cluster-ip-range=" + serviceCIDR,
			// No controller-manager creates service accounts.
			"--disable-admission-plugins=ServiceAccount",
			"--allow-privileged=true",
			"--profiling=false",
		}
		argv := append(args, extra...)
		p, err := startProc("kube-apiserver", filepath.Join(c.Dir, "kube-apiserver.log"), argv)
		if err != nil {
			return err
		}
		c.apiMu.Lock()
		c.apiserver = p
		c.apiMu.Unlock()
		ready := func(ctx context.Context) error {
			return probe(ctx, hc, host+"/readyz", "ok")
		}
		lastErr = waitReady(ctx, p, ready)
		if lastErr == nil {
			c.apiArgv = argv
			c.apiProbe = func(ctx context.Context) error {
				defer hc.CloseIdleConnections()
				return ready(ctx)
			}
			c.Config = &rest.Config{
				Host: host,
				TLSClientConfig: rest.TLSClientConfig{
					CAData:   pki.caCert,
					CertData: pki.adminCert,
					KeyData:  pki.adminKey,
				},
				QPS:       200,
				Burst:     400,
				Timeout:   30 * time.Second,
				UserAgent: "strata-kubetest",
			}
			return nil
		}
		if !errors.Is(lastErr, errExited) || !portTaken(p) {
			break
		}
		_ = p.stop()
	}
	return fmt.Errorf("starting kube-apiserver: %w\n--- %s (tail) ---\n%s", lastErr, c.apiserver.logFile, c.apiserver.tail(40))
}

// waitDefaultNamespace waits for the API server's bootstrap to create the
// default namespace, which tests use without creating it.
func (c *Cluster) waitDefaultNamespace(ctx context.Context) error {
	return waitReady(ctx, c.apiserver, func(ctx context.Context) error {
		_, err := c.Client.CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("namespace %s not created yet", metav1.NamespaceDefault)
		}
		return err
	})
}

// waitReady polls check until it succeeds, p exits, or ctx ends.
func waitReady(ctx context.Context, p *proc, check func(context.Context) error) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		err := check(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s %w (%v)", p.name, errExited, p.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w (last check: %v)", p.name, ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// probe GETs url and wants status 200 and a body containing want.
func probe(ctx context.Context, hc *http.Client, url, want string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
		return fmt.Errorf("GET %s: %s: %.200s", url, resp.Status, body)
	}
	return nil
}

// freePorts returns n distinct loopback ports that were free a moment ago.
// Another process may take one before the caller binds it; the callers
// start again when that happens (portTaken).
func freePorts(n int) ([]int, error) {
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// portTaken reports whether p's log says it could not bind its port.
func portTaken(p *proc) bool {
	return strings.Contains(p.tail(20), "address already in use")
}

// writeKubeconfig writes a kubeconfig for the admin user.
func writeKubeconfig(path, host string, pki *pki) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kubetest"] = &clientcmdapi.Cluster{Server: host, CertificateAuthorityData: pki.caCert}
	cfg.AuthInfos[adminUser] = &clientcmdapi.AuthInfo{ClientCertificateData: pki.adminCert, ClientKeyData: pki.adminKey}
	cfg.Contexts["kubetest"] = &clientcmdapi.Context{Cluster: "kubetest", AuthInfo: adminUser, Namespace: metav1.NamespaceDefault}
	cfg.CurrentContext = "kubetest"
	return clientcmd.WriteToFile(*cfg, path)
}

// Stop stops kube-apiserver, then etcd (SIGTERM, then SIGKILL after a
// grace period), waits until both are gone, and removes Dir if StartCluster
// created it. It is safe to call more than once.
func (c *Cluster) Stop() error {
	return c.stop(c.removeDir)
}

func (c *Cluster) stop(removeDir bool) error {
	c.stopOnce.Do(func() {
		var errs []error
		c.apiMu.Lock()
		api := c.apiserver
		c.apiMu.Unlock()
		for _, p := range []*proc{api, c.etcd} {
			if p != nil {
				errs = append(errs, p.stop())
			}
		}
		if removeDir {
			if err := os.RemoveAll(c.Dir); err != nil {
				errs = append(errs, fmt.Errorf("removing %s: %w", c.Dir, err))
			}
		}
		c.stopErr = errors.Join(errs...)
	})
	return c.stopErr
}

// Logs returns the last n lines of the etcd and kube-apiserver logs, for a
// failing test to show.
func (c *Cluster) Logs(n int) string {
	var b strings.Builder
	for _, p := range []*proc{c.etcd, c.api()} {
		if p != nil {
			fmt.Fprintf(&b, "--- %s (last %d lines) ---\n%s\n", p.logFile, n, p.tail(n))
		}
	}
	return b.String()
}

// PIDs returns the process IDs of etcd and kube-apiserver.
func (c *Cluster) PIDs() []int {
	var pids []int
	for _, p := range []*proc{c.etcd, c.api()} {
		if p != nil {
			pids = append(pids, p.cmd.Process.Pid)
		}
	}
	return pids
}
