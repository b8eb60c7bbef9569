// Command opbench measures `strata operator run` with local backends on
// the tree of issue 14: 50 modules, each a chart with one ConfigMap and 3
// shell hooks (onStartup no-op, beforeHelm writing a values patch,
// afterHelm no-op), plus a global onStartup hook (make bench-operator;
// see docs/benchmarks.md).
//
// It builds strata, writes the tree under -dir (on disk; pass a tmpfs
// directory for the extra column), and for -count rounds measures
//
//   - cold: from starting the process with an empty release store until
//     /readyz answers 200 (the first converge done);
//   - no-op restart: the same with the release store of the cold run (same
//     inputs, so no release is written again);
//
// the operator's CPU time (user + system, /proc/PID/stat) when it turned
// ready, and the peak RSS of the operator process (getrusage's ru_maxrss,
// the hooks' processes not included); with -settle D also its resident set D
// after it turned ready (what a converged operator holds). It prints the
// medians and the maxima.
//
// With -cluster (make bench-operator-cluster) it measures, side by side in
// the same run, flant's addon-operator (built by hack/testbin/build.sh) and
// `strata operator run` on a real control plane (etcd and kube-apiserver,
// internal/kube/kubetest) with the same tree: each round gives each
// operator a new namespace holding an empty ConfigMap addon-operator, runs
// it cold (no releases) and then again on the releases the cold run left
// (the no-op restart), each until its /readyz answers 200 — both turn
// ready when their first converge is done — and checks that every module's
// release is deployed. Rounds alternate which operator goes first. It
// prints per round and then the medians, with strata's figures divided by
// flant's. See docs/benchmarks.md.
//
// With -watch (make bench-operator-watch; issue 26's P10) it measures,
// the same way, both operators watching -objects ConfigMaps through -hooks
// global hooks with jqFilters: time to ready (Synchronization), the
// latency from an object's patch to the start of the hook run that sees
// it (p50, p99), and anonymous resident memory (RssAnon) beside peak RSS.
// See watch.go.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/strata-dev/strata/internal/testbin"
)

func main() {
	dir := flag.String("dir", ".cache/opbench", "directory for the generated tree and the release store (on disk)")
	modules := flag.Int("modules", 50, "number of modules")
	count := flag.Int("count", 5, "rounds")
	sameOrder := flag.Bool("same-order", false, "give every module the same order (they run in parallel)")
	strata := flag.String("strata", "", "strata binary (default: built from this checkout)")
	fresh := flag.Bool("fresh-page-cache", false, "keep the binary's page cache as writing it left it, instead of evicting it first (see evictPageCache)")
	cluster := flag.Bool("cluster", false, "measure on a control plane (kubetest), side by side with flant's addon-operator")
	addonOperator := flag.String("addon-operator", "", "with -cluster: flant's addon-operator binary (default: built by hack/testbin/build.sh addon-operator)")
	operators := flag.String("operators", opFlant+","+opStrata, "with -cluster: the operators to measure, comma-separated")
	logLevel := flag.String("log-level", "info", "with -cluster: LOG_LEVEL of both operators")
	timeout := flag.Duration("timeout", 5*time.Minute, "with -cluster: bound on one run's wait for /readyz")
	settle := flag.Duration("settle", 0, "also read each operator's resident set (VmRSS) this long after it turned ready: what a converged operator holds (0: not measured)")
	watch := flag.Bool("watch", false, "the watch scenario (implies -cluster): -objects ConfigMaps watched by -hooks global hooks with jqFilters; event-to-hook latency and RssAnon, beside flant's addon-operator")
	objects := flag.Int("objects", 10000, "with -watch: watched objects")
	hooks := flag.Int("hooks", 20, "with -watch: hooks watching them (each an equal share)")
	events := flag.Int("events", 600, "with -watch: objects patched per run (each another object)")
	rate := flag.Float64("rate", 20, "with -watch: patches per second")
	seenTimeout := flag.Duration("seen-timeout", time.Minute, "with -watch: bound on the wait for the last event to reach its hook")
	var extraEnv envList
	flag.Var(&extraEnv, "env", "with -cluster: KEY=VALUE added to both operators' environment (repeatable)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "opbench: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	if *watch {
		err := runWatch(clusterOptions{
			dir: *dir, count: *count, strata: *strata, addonOperator: *addonOperator, operators: splitList(*operators),
			fresh: *fresh, logLevel: *logLevel, timeout: *timeout, extraEnv: extraEnv, settle: *settle,
		}, watchOptions{objects: *objects, hooks: *hooks, events: *events, rate: *rate, seen: *seenTimeout})
		if err != nil {
			fmt.Fprintln(os.Stderr, "opbench:", err)
			os.Exit(1)
		}
		return
	}
	if *cluster {
		err := runCluster(clusterOptions{
			dir: *dir, modules: *modules, count: *count, sameOrder: *sameOrder,
			strata: *strata, addonOperator: *addonOperator, operators: splitList(*operators),
			fresh: *fresh, logLevel: *logLevel, timeout: *timeout, extraEnv: extraEnv, settle: *settle,
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "opbench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*dir, *modules, *count, *sameOrder, *strata, *fresh, *settle); err != nil {
		fmt.Fprintln(os.Stderr, "opbench:", err)
		os.Exit(1)
	}
}

func run(dir string, modules, count int, sameOrder bool, bin string, fresh bool, settle time.Duration) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if bin == "" {
		if bin, err = buildStrata(dir); err != nil {
			return err
		}
	}
	if !fresh {
		if err := evictPageCache(bin); err != nil {
			return err
		}
	}
	if err := writeTree(dir, modules, sameOrder); err != nil {
		return err
	}
	var cold, warm, coldCPU, warmCPU []time.Duration
	var rss, settled, anon []int64
	for i := range count {
		state := filepath.Join(dir, "state")
		if err := os.RemoveAll(state); err != nil {
			return err
		}
		c, err := once(bin, dir, settle)
		if err != nil {
			return fmt.Errorf("cold run %d: %w", i+1, err)
		}
		w, err := once(bin, dir, settle)
		if err != nil {
			return fmt.Errorf("no-op restart %d: %w", i+1, err)
		}
		cold, warm = append(cold, c.ready), append(warm, w.ready)
		coldCPU, warmCPU = append(coldCPU, c.cpu), append(warmCPU, w.cpu)
		rss, settled = append(rss, c.rssKB, w.rssKB), append(settled, c.settledRSSKB, w.settledRSSKB)
		anon = append(anon, c.peakAnon, w.peakAnon)
		fmt.Printf("round %d: cold %v, no-op restart %v, peak RssAnon %.1f MB / %.1f MB, peak RSS %.1f MB / %.1f MB, CPU %v / %v", i+1, c.ready.Round(time.Millisecond), w.ready.Round(time.Millisecond),
			anonMB(c.peakAnon), anonMB(w.peakAnon), mb(c.rssKB), mb(w.rssKB), c.cpu.Round(10*time.Millisecond), w.cpu.Round(10*time.Millisecond))
		if settle > 0 {
			fmt.Printf(", RSS %v after ready %.1f MB / %.1f MB", settle, mb(c.settledRSSKB), mb(w.settledRSSKB))
		}
		fmt.Println()
	}
	for _, d := range [][]time.Duration{cold, warm, coldCPU, warmCPU} {
		slices.Sort(d)
	}
	fmt.Printf("\n%d modules × 3 shell hooks + 1 global hook, %d rounds, GOMAXPROCS %d, tree in %s\n", modules, count, runtime.GOMAXPROCS(0), dir)
	fmt.Printf("%-28s %10s %10s\n", "", "median", "max")
	fmt.Printf("%-28s %10v %10v\n", "cold start → first converge", cold[len(cold)/2].Round(time.Millisecond), cold[len(cold)-1].Round(time.Millisecond))
	fmt.Printf("%-28s %10v %10v\n", "no-op restart → converge", warm[len(warm)/2].Round(time.Millisecond), warm[len(warm)-1].Round(time.Millisecond))
	fmt.Printf("%-28s %10v %10v\n", "CPU to first converge", coldCPU[len(coldCPU)/2].Round(10*time.Millisecond), coldCPU[len(coldCPU)-1].Round(10*time.Millisecond))
	fmt.Printf("%-28s %10v %10v\n", "CPU to no-op converge", warmCPU[len(warmCPU)/2].Round(10*time.Millisecond), warmCPU[len(warmCPU)-1].Round(10*time.Millisecond))
	fmt.Printf("%-28s %10s %9.1fMB\n", "peak RssAnon (operator)", "", anonMB(slices.Max(anon)))
	fmt.Printf("%-28s %10s %9.1fMB\n", "peak RSS (operator)", "", mb(slices.Max(rss)))
	if settle > 0 {
		slices.Sort(settled)
		fmt.Printf("%-28s %8.1fMB %8.1fMB\n", "RSS "+settle.String()+" after ready", mb(settled[len(settled)/2]), mb(settled[len(settled)-1]))
	}
	return nil
}

// buildStrata builds strata from the checkout holding the working
// directory into dir/bin.
func buildStrata(dir string) (string, error) {
	root, err := testbin.Root()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "bin", "strata")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/strata")
	build.Dir = root
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("building strata in %s: %w", root, err)
	}
	return bin, nil
}

// envList is a repeatable KEY=VALUE flag.
type envList []string

func (e *envList) String() string { return strings.Join(*e, " ") }
func (e *envList) Set(v string) error {
	if k, _, ok := strings.Cut(v, "="); !ok || k == "" {
		return fmt.Errorf("%q is not KEY=VALUE", v)
	}
	*e = append(*e, v)
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func mb(kb int64) float64 { return float64(kb) / 1024 }

func anonMB(b int64) float64 { return float64(b) / (1 << 20) }

// evictPageCache drops the binary's pages from the page cache, so that the
// runs read it from disk as a pod started from an image does. A binary just
// written by go build sits in the page cache in the large folios of the
// write path, and the kernel maps a whole folio into a process on one
// fault: the operator's peak RSS then counts tens of MB of the binary it
// never touched (on this machine 83 MB against 59 MB read from disk).
func evictPageCache(bin string) error {
	f, err := os.Open(bin)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("evicting %s from the page cache: %w", bin, err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("evicting %s from the page cache: %w", bin, err)
	}
	return nil
}

// once runs the operator until its first converge (and settle more) and
// returns what it measured.
func once(bin, dir string, settle time.Duration) (measurement, error) {
	port, err := freePort()
	if err != nil {
		return measurement{}, err
	}
	l := launch{
		name: "strata operator run",
		argv: []string{bin, "operator", "run", "--local",
			"--modules-dir", filepath.Join(dir, "modules"),
			"--global-hooks-dir", filepath.Join(dir, "global-hooks"),
			"--namespace", "bench",
			"--tmp-dir", filepath.Join(dir, "tmp"),
			"--state-dir", filepath.Join(dir, "state"),
			"--listen-address", "127.0.0.1", "--listen-port", strconv.Itoa(port),
			"--debug-unix-socket", "", "--log-level", "warn"},
		env:     os.Environ(),
		ready:   fmt.Sprintf("http://127.0.0.1:%d/readyz", port),
		timeout: 5 * time.Minute,
		settle:  settle,
	}
	return l.run(context.Background())
}

// writeTree writes the bench's modules and global hook under dir.
func writeTree(dir string, modules int, sameOrder bool) error {
	files := map[string]string{
		"global-hooks/hooks/000-startup.sh": hookScript(`{"configVersion":"v1","onStartup":1}`, ""),
	}
	values := ""
	for i := 1; i <= modules; i++ {
		name := fmt.Sprintf("mod%03d", i)
		order := i
		if sameOrder {
			order = 1
		}
		m := fmt.Sprintf("modules/%03d-%s/", order, name)
		values += name + "Enabled: true\n"
		files[m+"Chart.yaml"] = "apiVersion: v2\nname: " + name + "\nversion: 0.0.1\n"
		files[m+"values.yaml"] = name + ":\n  replicas: 1\n"
		files[m+"templates/configmap.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name +
			"\ndata:\n  replicas: {{ .Values." + name + ".replicas | quote }}\n  fromHook: {{ .Values." + name + ".fromHook | quote }}\n"
		files[m+"hooks/on-startup.sh"] = hookScript(`{"configVersion":"v1","onStartup":1}`, "")
		files[m+"hooks/before-helm.sh"] = hookScript(`{"configVersion":"v1","beforeHelm":1}`,
			`echo '[{"op":"add","path":"/`+name+`/fromHook","value":"set by before-helm"}]' > "$VALUES_JSON_PATCH_PATH"`)
		files[m+"hooks/after-helm.sh"] = hookScript(`{"configVersion":"v1","afterHelm":1}`, "")
	}
	files["modules/values.yaml"] = values
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if filepath.Ext(p) == ".sh" {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			return err
		}
	}
	return nil
}

func hookScript(config, body string) string {
	return "#!/bin/sh\nif [ \"$1\" = --config ]; then echo '" + config + "'; exit 0; fi\n" + body + "\n"
}
