// Command cmpbench measures strata's config management plugin server the
// way Argo CD's repo-server drives it, beside Argo CD's own sidecar
// behaviour, in the same run, and prints the ratio (make bench-cmp; see
// docs/benchmarks.md).
//
// Every request is a GenerateManifest stream, sent as the repo-server sends
// it over a connection of its own: the metadata (checksum, size), then the
// repository's tar.gz in 1 KiB chunks. The plugin is a plugin.yaml whose
// generate is `cat m.yaml`, so what is measured is the server: receiving,
// unpacking and cleaning up the repository, and starting the command.
//
// Two repositories are sent: a 10-file application, and a repository of
// 20,000 files (-big-files) whose tar.gz is about 80 MB. Each goes to two
// servers running side by side:
//
//   - argo-like: strata's server with its cache disabled (cache size 0),
//     which decompresses and extracts the whole tarball on every request,
//     as Argo CD's sidecar does. A store without cache still lets requests
//     of one checksum that overlap share an extraction, which Argo CD
//     does not do, so every request to this server carries a tarball of
//     its own checksum: the same archive with another MTIME in its gzip
//     header.
//   - strata: the same server with its checksum cache on; every request
//     carries the same tarball, as the repo-server sends for one revision.
//
// For each, the first (cold) request, then repeated requests at
// concurrency 1, 4 and 16, with p50, p99 and requests per second; and, as a
// lower bound of Argo CD's cost, tarball.Extract alone. The servers work
// under $TMPDIR.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

func main() {
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

// run parses the flags, runs the benchmark, prints the table to stdout and
// writes it to -out; progress goes to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cmpbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	b := &Bench{}
	quick := fs.Bool("quick", false, "tiny repositories and 2 requests per row: a smoke test, not figures")
	fs.IntVar(&b.BigFiles, "big-files", 20_000, "files of the big repository")
	fs.IntVar(&b.BigRequests, "big-requests", 16, "repeated requests per concurrency level, big repository")
	fs.IntVar(&b.SmallRequests, "small-requests", 400, "repeated requests per concurrency level, 10-file application")
	out := fs.String("out", "", "also write the markdown table to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q; see -help", fs.Args())
	}
	if *quick {
		b.BigRequests, b.SmallRequests = 2, 2
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["big-files"] {
			b.BigFiles = 200
		}
	}
	if b.BigFiles < appFiles || b.BigRequests < 1 || b.SmallRequests < 1 {
		return fmt.Errorf("-big-files must be at least %d, -big-requests and -small-requests at least 1", appFiles)
	}
	b.Concurrency = []int{1, 4, 16}
	b.Log = slog.New(slog.NewTextHandler(stderr, nil))

	rep, err := b.Run(ctx)
	if err != nil {
		return err
	}
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
