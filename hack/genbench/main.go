// Command genbench measures strata's ApplicationSet plugin generator server
// beside a plugin written with Python's standard http.server the way Argo
// CD's documentation teaches, in the same run, and prints the ratio (make
// bench-generator; see docs/benchmarks.md).
//
// Three servers answer the same request, {"applicationSetName": "bench",
// "input": {"parameters": {...}}}, with the same parameter set [{"a":"b"}]:
//
//   - strata, cache off: `strata generator serve` (this binary, re-executed)
//     with a command backend, a shell script printing the set, run for
//     every request (no cache, no collapsing of identical requests);
//   - strata, cache on: the same plugin with a response cache (TTL 1 h);
//   - python: plugin.py, a single-threaded http.server plugin.
//
// Each is driven by 1, 16 and 64 concurrent clients (-concurrency) for
// -duration after a short warm-up, -count times in turns (the table shows
// the medians), as the ApplicationSet controller calls a
// plugin: a POST with a bearer token and a JSON body, over keep-alive
// connections where the server allows them. A request that fails or takes
// longer than -timeout counts as an error. The table gives requests per
// second, p50 and p99 latency and errors; the ratios compare strata with
// the Python plugin. The load client is a minimal HTTP/1.1 client in the
// manner of wrk (rawclient.go), so that on a small machine the bench
// measures the servers rather than itself.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
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
		fmt.Fprintln(os.Stderr, "genbench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("genbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	b := &Bench{}
	serveConfig := fs.String("serve", "", "internal: serve this GeneratorConfig (the bench re-executes itself as strata's server)")
	fs.StringVar(&b.Profiles.CPU, "cpuprofile", "", "write a CPU profile of strata's server to this file")
	fs.StringVar(&b.Profiles.Mem, "memprofile", "", "write an allocation profile of strata's server to this file")
	fs.StringVar(&b.Profiles.Trace, "trace", "", "write an execution trace of strata's server to this file (large: keep -duration short)")
	targets := fs.String("targets", "off,on,python", "servers to measure, comma-separated: off (strata, cache off), on (strata, cache on), python")
	conc := fs.String("concurrency", "1,16,64", "concurrent clients, comma-separated")
	fs.DurationVar(&b.Duration, "duration", 5e9, "measuring time per row")
	fs.DurationVar(&b.Warmup, "warmup", 5e8, "warm-up time per row, not measured")
	fs.DurationVar(&b.Timeout, "timeout", 5e9, "a request taking longer is an error")
	fs.StringVar(&b.Python, "python", "python3", "the Python interpreter")
	fs.IntVar(&b.ServerCPUs, "server-cpus", 0, "run strata's server with GOMAXPROCS=N, as Go sets it in a pod with an N-CPU limit (0: the machine's CPUs)")
	clientCPUs := fs.Int("client-cpus", 0, "run the load client with GOMAXPROCS=N (0: the machine's CPUs)")
	fs.IntVar(&b.Count, "count", 3, "runs per row; the table shows their median")
	quick := fs.Bool("quick", false, "0.2 s per row: a smoke test, not figures")
	out := fs.String("out", "", "also write the markdown table to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *clientCPUs > 0 && *serveConfig == "" {
		runtime.GOMAXPROCS(*clientCPUs)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q; see -help", fs.Args())
	}
	if *serveConfig != "" {
		return serveStrata(ctx, *serveConfig, b.Profiles, stderr)
	}
	levels, err := parseLevels(*conc)
	if err != nil {
		return err
	}
	b.Concurrency = levels
	if b.Targets, err = parseTargets(*targets); err != nil {
		return err
	}
	if *quick {
		b.Duration, b.Warmup, b.Count = 2e8, 5e7, 1
	}
	b.Log = stderr
	rep, err := b.Run(ctx)
	if err != nil {
		return err
	}
	table := rep.Markdown()
	fmt.Fprint(stdout, table)
	if *out != "" {
		if err := os.WriteFile(*out, []byte(table), 0o644); err != nil {
			return err
		}
	}
	return nil
}
