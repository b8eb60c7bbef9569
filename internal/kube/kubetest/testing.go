package kubetest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/strata-dev/strata/internal/testbin"
)

// logLines is how much of each log a failing test shows.
const logLines = 60

// Option changes the Options of Start.
type Option func(*Options)

// WithCRDs installs the CustomResourceDefinitions in paths (files or
// directories) and waits until they are established.
func WithCRDs(paths ...string) Option {
	return func(o *Options) { o.CRDs = append(o.CRDs, paths...) }
}

// WithAPIServerArgs adds kube-apiserver flags.
func WithAPIServerArgs(args ...string) Option {
	return func(o *Options) { o.APIServerArgs = append(o.APIServerArgs, args...) }
}

// WithStartTimeout bounds the start-up.
func WithStartTimeout(d time.Duration) Option {
	return func(o *Options) { o.StartTimeout = d }
}

// Start starts a control plane for t alone, in t.TempDir(), and stops it
// when t ends. The binaries come from internal/testbin: built on first use,
// or t is skipped when STRATA_SKIP_CLUSTER_TESTS=1 and they are missing.
// When t fails, the tails of the etcd and kube-apiserver logs are logged.
func Start(t testing.TB, opts ...Option) *Cluster {
	t.Helper()
	o := Options{
		EtcdPath:      testbin.Path(t, "etcd"),
		APIServerPath: testbin.Path(t, "kube-apiserver"),
		Dir:           t.TempDir(),
	}
	for _, opt := range opts {
		opt(&o)
	}
	c, err := StartCluster(context.Background(), o)
	if err != nil {
		t.Fatalf("starting the test control plane: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("test control plane logs:\n%s", c.Logs(logLines))
		}
		if err := c.Stop(); err != nil {
			t.Errorf("stopping the test control plane: %v", err)
		}
	})
	return c
}

// shared is the control plane that Shared hands out and Main stops: one
// per test binary, started by the first test that asks for it.
var shared struct {
	mu      sync.Mutex
	inMain  bool // Main is running the tests
	cluster *Cluster
	err     error
	started bool
}

// Shared returns the control plane shared by the tests of this test
// binary, starting it on first use. The package's TestMain must call Main,
// which stops it after the last test:
//
//	func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }
//
// Tests sharing a cluster should keep to their own namespaces and names.
// CRDs go in with c.InstallCRDs(t.Context(), paths...), which is
// idempotent. When t fails, the tails of the logs are logged.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	etcd := testbin.Path(t, "etcd")
	apiserver := testbin.Path(t, "kube-apiserver")

	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.inMain {
		t.Fatal("kubetest.Shared needs the package's TestMain to call kubetest.Main, which stops the shared control plane: func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }")
	}
	if !shared.started {
		shared.started = true
		shared.cluster, shared.err = StartCluster(context.Background(), Options{EtcdPath: etcd, APIServerPath: apiserver})
	}
	if shared.err != nil {
		t.Fatalf("starting the shared test control plane: %v", shared.err)
	}
	c := shared.cluster
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("shared test control plane logs:\n%s", c.Logs(logLines))
		}
	})
	return c
}

// Main runs the tests of m and then stops the control plane Shared
// started, if any; it returns the exit code for os.Exit. When a test failed,
// the control plane's directory (data and logs) is kept and its path printed.
func Main(m *testing.M) int {
	shared.mu.Lock()
	shared.inMain = true
	shared.mu.Unlock()

	code := m.Run()
	testbin.RemoveStrata()

	shared.mu.Lock()
	defer shared.mu.Unlock()
	shared.inMain = false
	if c := shared.cluster; c != nil {
		keep := code != 0
		if err := c.stop(!keep); err != nil {
			fmt.Fprintf(os.Stderr, "kubetest: stopping the shared test control plane: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
		if keep {
			fmt.Fprintf(os.Stderr, "kubetest: the shared test control plane's data and logs are kept in %s\n", c.Dir)
		}
	}
	return code
}
