// Command cmpbench measures config management plugin servers the way Argo
// CD's repo-server drives them, side by side in one run, and prints the
// ratios (make bench-cmp; see docs/benchmarks.md):
//
//   - Argo CD's own sidecar, argocd-cmp-server v2.14 built from the Go
//     module proxy (hack/testbin/build.sh argocd-cmp-server);
//   - `strata cmp serve`, the built binary;
//   - the floor: a server that only drains the stream and checks its
//     SHA-256, what any server must do at least;
//   - the floor + command: the floor that also starts the plugin's
//     command once per request (`cat m.yaml` in a directory prepared at
//     start-up, on the same disk), what a command plugin costs at least.
//
// Each request is what the repo-server does for an Application naming the
// plugin: a new connection, CheckPluginConfiguration twice, then the
// streaming RPC with the metadata first and the repository's tar.gz in
// 1 KiB chunks. The plugin is `generate: [cat, m.yaml]`, so the figures are
// the servers' own overhead. The servers' work directories are on disk: a
// directory under $TMPDIR, or -dir; -tmpfs adds Argo CD's sidecar and
// strata with their work directories on /dev/shm as an extra column.
//
// Repositories: 10 files; ~220 small files, Helm-style (4 charts of 53
// templates); and a monorepo of 20,000 files (-monorepo-files), whose
// tar.gz is about 78 MiB, sent again and again, as the repo-server does for
// every Application of one revision. For each: p50 and p99 at 1 client,
// requests per second at 16 clients, and for the monorepo each server's
// peak resident set during the 16-client row.
//
// Then the built-in Helm plugin (`strata cmp serve --builtin helm`),
// rendering Helm's `subchart` test chart in a ~220-file repository beside
// a `helm template` process on a checkout on the same disk, and announcing
// the parameters of a 5,000-leaf values.yaml beside the proposal's
// `yq | jq` pipeline. The bench installs nothing: it builds strata and the
// peers from this checkout and the module proxy, and skips the pipeline,
// saying why, when the Go yq or jq is not on PATH.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/strata-dev/strata/internal/testbin"
)

func main() {
	if socket := os.Getenv(floorEnv); socket != "" {
		if err := serveFloor(socket, os.Getenv(floorDirEnv)); err != nil {
			fmt.Fprintln(os.Stderr, "cmpbench floor:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "cmpbench:", err)
		os.Exit(1)
	}
}

// run parses the flags, runs the benchmark, prints the report to stdout
// and writes it to -out; progress goes to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cmpbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	b := &Bench{}
	quick := fs.Bool("quick", false, "a 200-file monorepo and few requests per row: a smoke run, not figures")
	dir := fs.String("dir", "", "parent of the servers' work directories (default: a new directory under $TMPDIR); put it on the disk to measure")
	tmpfs := fs.Bool("tmpfs", false, "also measure Argo CD's sidecar and strata with their work directories on /dev/shm (tmpfs), as an extra column")
	fs.StringVar(&b.Strata, "strata", "", "the strata binary (default: go build ./cmd/strata from this checkout)")
	fs.StringVar(&b.Argo, "argocd-cmp-server", "", "Argo CD's argocd-cmp-server (default: hack/testbin/build.sh argocd-cmp-server)")
	fs.StringVar(&b.Helm, "helm", "", "the helm binary (default: hack/testbin/build.sh helm)")
	fs.IntVar(&b.MonorepoFiles, "monorepo-files", 20_000, "files of the monorepo")
	fs.IntVar(&b.Small1, "small-requests", 200, "requests at 1 client, 10-file and ~220-file repositories")
	fs.IntVar(&b.Small16, "small-requests-16", 320, "requests at 16 clients, 10-file and ~220-file repositories")
	fs.IntVar(&b.Big1, "monorepo-requests", 5, "requests at 1 client, monorepo")
	fs.IntVar(&b.Big16, "monorepo-requests-16", 16, "requests at 16 clients, monorepo")
	fs.IntVar(&b.Helm1, "helm-requests", 100, "requests at 1 client, built-in Helm plugin and its peers")
	fs.IntVar(&b.Helm16, "helm-requests-16", 160, "requests at 16 clients, built-in Helm plugin and its peers")
	out := fs.String("out", "", "also write the report to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q; see -help", fs.Args())
	}
	if *quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		for name, p := range map[string]*int{"monorepo-files": &b.MonorepoFiles, "small-requests": &b.Small1, "small-requests-16": &b.Small16,
			"monorepo-requests": &b.Big1, "monorepo-requests-16": &b.Big16, "helm-requests": &b.Helm1, "helm-requests-16": &b.Helm16} {
			if !set[name] {
				*p = map[string]int{"monorepo-files": 200, "small-requests": 5, "small-requests-16": Clients,
					"monorepo-requests": 2, "monorepo-requests-16": Clients, "helm-requests": 3, "helm-requests-16": Clients}[name]
			}
		}
	}
	if b.MonorepoFiles < 10 {
		return fmt.Errorf("-monorepo-files %d: the monorepo holds the 10-file application, so at least 10", b.MonorepoFiles)
	}
	for _, n := range []int{b.Small1, b.Small16, b.Big1, b.Big16, b.Helm1, b.Helm16} {
		if n < 1 {
			return errors.New("every -*-requests flag must be at least 1")
		}
	}
	b.Log = slog.New(slog.NewTextHandler(stderr, nil))

	root, err := testbin.Root()
	if err != nil {
		return err
	}
	b.Subchart = filepath.Join(root, "internal", "helmplugin", "testdata", "bench", "subchart")
	parent := *dir
	if parent == "" {
		if parent, err = os.MkdirTemp("", "cmpbench"); err != nil {
			return err
		}
		defer os.RemoveAll(parent)
	} else if parent, err = os.MkdirTemp(parent, "cmpbench"); err != nil {
		return err
	} else {
		defer os.RemoveAll(parent)
	}
	b.Dir = parent
	if *tmpfs {
		if b.Tmpfs, err = os.MkdirTemp("/dev/shm", "cmpbench"); err != nil {
			return fmt.Errorf("-tmpfs: %w", err)
		}
		defer os.RemoveAll(b.Tmpfs)
	}
	if b.Strata == "" {
		b.Strata = filepath.Join(parent, "bin", "strata") // beside, not in, the work dirs
		fmt.Fprintln(stderr, "cmpbench: building strata from", root)
		c := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", b.Strata, "./cmd/strata")
		c.Dir, c.Stdout, c.Stderr = root, stderr, stderr
		if err := c.Run(); err != nil {
			return fmt.Errorf("building strata: %w", err)
		}
	}
	if b.Argo == "" {
		if b.Argo, err = testbin.Build(ctx, "argocd-cmp-server", stderr); err != nil {
			return err
		}
	}
	if b.Helm == "" {
		if b.Helm, err = testbin.Build(ctx, "helm", stderr); err != nil {
			return err
		}
	}
	b.YQ, b.JQ = findYQ(), lookPath("jq")
	if self, err := os.Executable(); err != nil {
		return err
	} else {
		b.Self = []string{self}
	}

	began := time.Now()
	rep, err := b.Run(ctx)
	if err != nil {
		return err
	}
	rep.Command = "go run ./hack/cmpbench " + strings.Join(args, " ")
	rep.Date = began.UTC()
	rep.Took = time.Since(began)
	rep.Machine = machine(parent, b.Tmpfs)
	if err := rep.WriteMarkdown(stdout); err != nil {
		return err
	}
	if *out == "" {
		return nil
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	if err := rep.WriteMarkdown(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// findYQ returns the Go yq (mikefarah's) on PATH, or "".
func findYQ() string {
	yq := lookPath("yq")
	if yq == "" {
		return ""
	}
	if out, _ := exec.Command(yq, "--version").Output(); strings.Contains(string(out), "mikefarah") {
		return yq
	}
	return ""
}

func lookPath(name string) string {
	p, err := exec.LookPath(name)
	if err != nil {
		return ""
	}
	return p
}
