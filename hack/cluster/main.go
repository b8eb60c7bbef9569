// Command cluster runs a local Kubernetes control plane (etcd and
// kube-apiserver, as the integration tests use it) in the foreground for
// manual testing, until Ctrl-C or SIGTERM. `make cluster` runs it.
//
//	go run ./hack/cluster [-kubeconfig PATH] [-crds PATH]...
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/strata-dev/strata/internal/kube/kubetest"
	"github.com/strata-dev/strata/internal/testbin"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

// pathList is a repeatable flag.
type pathList []string

func (p *pathList) String() string     { return strings.Join(*p, ",") }
func (p *pathList) Set(v string) error { *p = append(*p, v); return nil }

func run() error {
	var crds pathList
	kubeconfig := flag.String("kubeconfig", filepath.Join(".cache", "cluster", "kubeconfig"),
		"write the admin kubeconfig here (removed on exit)")
	startTimeout := flag.Duration("start-timeout", kubetest.DefaultStartTimeout, "bound on the start-up")
	flag.Var(&crds, "crds", "install the CRDs in this file or directory (repeatable)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: %s [flags]\n\nRuns etcd and kube-apiserver on loopback until Ctrl-C.\n\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		flag.Usage()
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	out, err := filepath.Abs(*kubeconfig)
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))

	o := kubetest.Options{CRDs: crds, StartTimeout: *startTimeout, Logger: log}
	for _, b := range []struct {
		name string
		path *string
	}{{"etcd", &o.EtcdPath}, {"kube-apiserver", &o.APIServerPath}} {
		if *b.path, err = testbin.Build(ctx, b.name, os.Stderr); err != nil {
			return err
		}
	}
	start := time.Now()
	c, err := kubetest.StartCluster(ctx, o)
	if err != nil {
		return err
	}
	err = serve(ctx, c, out, time.Since(start))
	if rmErr := os.Remove(out); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
		err = errors.Join(err, rmErr)
	}
	log.Info("stopping")
	return errors.Join(err, c.Stop())
}

// serve publishes the kubeconfig and waits for a signal or a process exit.
func serve(ctx context.Context, c *kubetest.Cluster, out string, took time.Duration) error {
	data, err := os.ReadFile(c.Kubeconfig)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(out, data, 0o600); err != nil {
		return err
	}
	fmt.Printf(`
Control plane ready in %s: %s (etcd %s, data and logs in %s)

Point kubectl, helm or strata at it:

    export KUBECONFIG=%s
    kubectl get namespaces

There is no scheduler or controller-manager: objects are stored and served,
pods never run, and deleted namespaces stay Terminating.
Ctrl-C stops it.
`, took.Round(100*time.Millisecond), c.Config.Host, c.EtcdURL, c.Dir, out)
	select {
	case <-ctx.Done():
		return nil
	case <-c.Done():
		return fmt.Errorf("a control-plane process exited on its own:\n%s", c.Logs(30))
	}
}
