package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/strata-dev/strata/internal/kube/kubetest"
	"github.com/strata-dev/strata/internal/rsswatch"
	"github.com/strata-dev/strata/internal/testbin"
)

// The watch scenario (-watch, issue 26's P10): -objects ConfigMaps in one
// namespace, split evenly among -hooks global shell hooks, each watching
// its share with a labelSelector and a jqFilter, in a queue of its own.
// Once an operator is ready (its hooks' Synchronization done), the bench
// patches -events distinct objects at -rate per second, each patch
// carrying its wall-clock time in data.ts; every hook run appends the ts
// values of its binding context and the time it started to a log. The
// event-to-hook latency of an event is the time from just before its
// patch was sent until the first run that saw it started: the API
// server's write and watch, the operator's informer, filter, queue and
// hook start. Memory is the operator process's anonymous resident memory
// (RssAnon: its heap, not the binary's pages) once the Synchronization
// is done and at its peak during the events, beside its peak RSS.

// objectsNamespace holds the watched objects, shared by every run.
const objectsNamespace = "opbench-objects"

// watchOptions are the watch scenario's flags.
type watchOptions struct {
	objects, hooks, events int
	rate                   float64
	// seen bounds the wait for the last event to reach its hook.
	seen time.Duration
}

// watchRun is what one run of an operator in the watch scenario gave.
type watchRun struct {
	m measurement
	// latencies are the event-to-hook latencies, sorted.
	latencies []time.Duration
	// syncAnon is RssAnon once ready (Synchronization done) and settled;
	// peakAnon its peak over the process's life.
	syncAnon, peakAnon int64
}

// runWatch starts a control plane, creates the objects and measures each
// operator on them in interleaved rounds.
func runWatch(o clusterOptions, w watchOptions) error {
	ctx := context.Background()
	if w.hooks < 1 || w.objects < w.hooks || w.events < 1 || w.events > w.objects || w.rate <= 0 {
		return fmt.Errorf("-watch needs 1 ≤ -hooks ≤ -objects, 1 ≤ -events ≤ -objects and -rate > 0 (got %d hooks, %d objects, %d events, rate %v)", w.hooks, w.objects, w.events, w.rate)
	}
	dir, err := filepath.Abs(o.dir)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	ops, err := o.binaries(ctx, dir)
	if err != nil {
		return err
	}
	if err := writeWatchTree(dir, w.hooks); err != nil {
		return err
	}
	c, err := startControlPlane(ctx, dir)
	if err != nil {
		return err
	}
	defer c.Stop()
	cfg := rest.CopyConfig(c.Config)
	cfg.QPS, cfg.Burst = 5000, 5000
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	t0 := time.Now()
	if err := createObjects(ctx, client, w.objects, w.hooks); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "opbench: %d ConfigMaps created in %v\n", w.objects, time.Since(t0).Round(time.Millisecond))
	for _, op := range ops {
		fmt.Printf("%s: %s\n", op.name, op.bin)
	}
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return err
	}
	runs := map[string][]watchRun{}
	loadStart := loadAvg()
	next := 0 // the next object to patch: each event patches another
	for round := 1; round <= o.count; round++ {
		order := slices.Clone(ops)
		if round%2 == 0 {
			slices.Reverse(order)
		}
		for _, op := range order {
			select {
			case <-c.Done():
				return fmt.Errorf("the control plane stopped:\n%s", c.Logs(30))
			default:
			}
			r, err := o.measureWatch(ctx, c, client, dir, op, round, w, &next)
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", round, op.name, err)
			}
			runs[op.name] = append(runs[op.name], r)
			fmt.Printf("round %d %-15s ready %8v  event→hook p50 %7v p99 %7v max %7v (%d events)  RssAnon synced %6.1f MB peak %6.1f MB  peak RSS %6.1f MB  CPU to ready %6v\n",
				round, op.name, r.m.ready.Round(time.Millisecond), pct(r.latencies, 50).Round(100*time.Microsecond),
				pct(r.latencies, 99).Round(100*time.Microsecond), r.latencies[len(r.latencies)-1].Round(100*time.Microsecond), len(r.latencies),
				float64(r.syncAnon)/(1<<20), float64(r.peakAnon)/(1<<20), mb(r.m.rssKB), r.m.cpu.Round(10*time.Millisecond))
		}
	}
	printWatchTable(o, w, ops, runs)
	fmt.Printf("load average (1 min) %s at the start, %s at the end\n", loadStart, loadAvg())
	return nil
}

// binaries returns the operators of o.operators, building those not given.
func (o clusterOptions) binaries(ctx context.Context, dir string) ([]*operator, error) {
	var ops []*operator
	for _, name := range o.operators {
		var bin string
		var err error
		switch name {
		case opFlant:
			if bin = o.addonOperator; bin == "" {
				bin, err = testbin.Build(ctx, "addon-operator", os.Stderr)
			}
		case opStrata:
			if bin = o.strata; bin == "" {
				bin, err = buildStrata(dir)
			}
		default:
			return nil, fmt.Errorf("-operators: unknown operator %q; known: %s, %s", name, opFlant, opStrata)
		}
		if err != nil {
			return nil, err
		}
		if !o.fresh {
			if err := evictPageCache(bin); err != nil {
				return nil, err
			}
		}
		ops = append(ops, &operator{name: name, bin: bin})
	}
	if len(ops) == 0 {
		return nil, errors.New("-operators: name at least one operator")
	}
	return ops, nil
}

// hookName is the name of watch hook i (0-based), also its label value
// and queue.
func hookName(i int) string { return fmt.Sprintf("w%02d", i+1) }

// watchHook is the shell hook watching the objects labelled with its name.
// A run appends "TS START" for each distinct non-zero ts of its binding
// context (objects and filter results carry the same one) to LOG.
const watchHook = `#!/bin/sh
if [ "$1" = --config ]; then cat <<'EOF'
configVersion: v1
kubernetes:
- name: objects
  apiVersion: v1
  kind: ConfigMap
  namespace: {nameSelector: {matchNames: [NAMESPACE]}}
  labelSelector: {matchLabels: {opbench-hook: NAME}}
  jqFilter: '{v: .data.v, ts: .data.ts}'
  queue: NAME
EOF
exit 0; fi
now=$(date +%s%N)
grep -o '"ts":"[1-9][0-9]*"' "$BINDING_CONTEXT_PATH" | sort -u | sed "s/^\"ts\":\"\([0-9]*\)\"$/\1 $now/" >> LOG
`

// writeWatchTree writes dir/watch: the tree of the cluster mode with one
// module (addon-operator does not converge without a module) and the
// watch hooks, global-hooks/hooks/wNN.sh.
func writeWatchTree(dir string, hooks int) error {
	root := filepath.Join(dir, "watch")
	if err := writeTree(root, 1, false); err != nil {
		return err
	}
	hdir := filepath.Join(root, "global-hooks", "hooks")
	if err := os.MkdirAll(hdir, 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(root, "seen"), 0o755); err != nil {
		return err
	}
	for i := range hooks {
		name := hookName(i)
		s := strings.NewReplacer("NAMESPACE", objectsNamespace, "NAME", name, "LOG", filepath.Join(root, "seen", name+".log")).Replace(watchHook)
		if err := os.WriteFile(filepath.Join(hdir, name+".sh"), []byte(s), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// createObjects creates the objects namespace and n ConfigMaps in it,
// object i labelled for hook i % hooks, with ts "0".
func createObjects(ctx context.Context, client kubernetes.Interface, n, hooks int) error {
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: objectsNamespace}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating namespace %s: %w", objectsNamespace, err)
	}
	var next atomic.Int64
	errs := make([]error, 32)
	var wg sync.WaitGroup
	for w := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				cm := &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: objectName(i), Namespace: objectsNamespace, Labels: map[string]string{"opbench-hook": hookName(i % hooks)}},
					Data:       map[string]string{"v": "0", "ts": "0", "payload": strings.Repeat("x", 256)},
				}
				if _, err := client.CoreV1().ConfigMaps(objectsNamespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
					errs[w] = fmt.Errorf("creating ConfigMap %s: %w", cm.Name, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func objectName(i int) string { return fmt.Sprintf("obj-%05d", i) }

// measureWatch runs op on the objects: ready once its hooks' Synchronization
// is done, then the events, then stop.
func (o clusterOptions) measureWatch(ctx context.Context, c *kubetest.Cluster, client kubernetes.Interface, dir string, op *operator, round int, w watchOptions, next *int) (watchRun, error) {
	var r watchRun
	ns := fmt.Sprintf("opbench-%s-%d", op.name, round)
	if err := createNamespace(ctx, c, ns); err != nil {
		return r, err
	}
	tmp := filepath.Join(dir, "tmp", ns)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return r, err
	}
	seenDir := filepath.Join(dir, "watch", "seen")
	if err := os.RemoveAll(seenDir); err != nil {
		return r, err
	}
	if err := os.MkdirAll(seenDir, 0o755); err != nil {
		return r, err
	}
	wo := o
	wo.dir = filepath.Join(dir, "watch")
	l, err := wo.launch(c, wo.dir, op, ns, tmp, fmt.Sprintf("%s-%d-watch.log", op.name, round))
	if err != nil {
		return r, err
	}
	l.log = filepath.Join(dir, "logs", fmt.Sprintf("%s-%d-watch.log", op.name, round))
	if l.settle <= 0 {
		l.settle = 2 * time.Second
	}
	var sent map[string]time.Time
	l.during = func(ctx context.Context, pid int) error {
		anon, ok := rsswatch.RssAnon(pid)
		if !ok {
			return fmt.Errorf("reading RssAnon of %s", op.name)
		}
		r.syncAnon = anon
		var err error
		sent, err = sendEvents(ctx, client, w, next)
		if err != nil {
			return err
		}
		deadline := time.Now().Add(w.seen)
		for {
			seen, err := readSeen(seenDir)
			if err != nil {
				return err
			}
			missing := 0
			for ts := range sent {
				if _, ok := seen[ts]; !ok {
					missing++
				}
			}
			if missing == 0 {
				r.latencies = latencies(sent, seen)
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%d of %d events had not reached their hook %v after the last was sent", missing, len(sent), w.seen)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if r.m, err = l.run(ctx); err != nil {
		return r, err
	}
	r.peakAnon = r.m.peakAnon
	return r, nil
}

// sendEvents patches w.events distinct objects at w.rate per second, each
// with its send time (Unix ns) in data.ts, and returns the ts values with
// their send times.
func sendEvents(ctx context.Context, client kubernetes.Interface, w watchOptions, next *int) (map[string]time.Time, error) {
	sent := make(map[string]time.Time, w.events)
	every := time.Duration(float64(time.Second) / w.rate)
	start := time.Now()
	for i := range w.events {
		if d := time.Until(start.Add(time.Duration(i) * every)); d > 0 {
			time.Sleep(d)
		}
		obj := objectName(*next % w.objects)
		*next++
		now := time.Now()
		ts := strconv.FormatInt(now.UnixNano(), 10)
		patch := fmt.Sprintf(`{"data":{"ts":%q,"v":%q}}`, ts, strconv.Itoa(i+1))
		if _, err := client.CoreV1().ConfigMaps(objectsNamespace).Patch(ctx, obj, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return nil, fmt.Errorf("patching ConfigMap %s: %w", obj, err)
		}
		sent[ts] = now
	}
	return sent, nil
}

// readSeen reads the hooks' logs: for each ts, when a hook run that saw
// it first started.
func readSeen(dir string) (map[string]time.Time, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return nil, err
	}
	seen := map[string]time.Time{}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			ts, at, ok := strings.Cut(sc.Text(), " ")
			if !ok {
				continue // a line the hook is still writing
			}
			n, err := strconv.ParseInt(at, 10, 64)
			if err != nil {
				continue
			}
			t := time.Unix(0, n)
			if old, ok := seen[ts]; !ok || t.Before(old) {
				seen[ts] = t
			}
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	return seen, nil
}

// latencies returns, sorted, for each sent ts the time from its send to
// the first hook run that saw it.
func latencies(sent, seen map[string]time.Time) []time.Duration {
	out := make([]time.Duration, 0, len(sent))
	for ts, at := range sent {
		if s, ok := seen[ts]; ok {
			out = append(out, s.Sub(at))
		}
	}
	slices.Sort(out)
	return out
}

// pct is the p-th percentile (nearest rank) of sorted d.
func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(d)))) - 1
	return d[min(max(i, 0), len(d)-1)]
}

// printWatchTable prints the medians over rounds of each operator and
// their ratios.
func printWatchTable(o clusterOptions, w watchOptions, ops []*operator, runs map[string][]watchRun) {
	fmt.Printf("\n%d ConfigMaps watched by %d global shell hooks (jqFilter, a queue each) on kube-apiserver (kubetest); %d events at %v/s per run, %d rounds, medians of the rounds; GOMAXPROCS %d, %d CPUs\n",
		w.objects, w.hooks, w.events, w.rate, o.count, runtime.GOMAXPROCS(0), runtime.NumCPU())
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	rows := []struct {
		label string
		unit  string
		get   func(r watchRun) float64
	}{
		{"start → ready (synchronized)", "s", func(r watchRun) float64 { return r.m.ready.Seconds() }},
		{"CPU to ready", "s", func(r watchRun) float64 { return r.m.cpu.Seconds() }},
		{"event → hook p50", "ms", func(r watchRun) float64 { return ms(pct(r.latencies, 50)) }},
		{"event → hook p99", "ms", func(r watchRun) float64 { return ms(pct(r.latencies, 99)) }},
		{"event → hook max", "ms", func(r watchRun) float64 { return ms(r.latencies[len(r.latencies)-1]) }},
		{"RssAnon once synchronized", "MB", func(r watchRun) float64 { return float64(r.syncAnon) / (1 << 20) }},
		{"RssAnon peak", "MB", func(r watchRun) float64 { return float64(r.peakAnon) / (1 << 20) }},
		{"peak RSS (ru_maxrss)", "MB", func(r watchRun) float64 { return mb(r.m.rssKB) }},
	}
	names := make([]string, len(ops))
	for i, op := range ops {
		names[i] = op.name
	}
	table := make([]comparisonRow, len(rows))
	for i, row := range rows {
		table[i] = comparisonRow{label: row.label, unit: row.unit}
		for _, op := range ops {
			var xs []float64
			for _, r := range runs[op.name] {
				xs = append(xs, row.get(r))
			}
			slices.Sort(xs)
			med := 0.0
			if len(xs) > 0 {
				med = xs[len(xs)/2]
			}
			table[i].vals = append(table[i].vals, med)
		}
	}
	printComparison(names, table)
}
