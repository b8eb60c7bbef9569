// Command opload is a load and fault run of the addon operator (`strata
// operator run` on a cluster) under its shipped memory limit (make
// load-operator; see docs/benchmarks.md). It starts a real etcd and
// kube-apiserver (internal/kube/kubetest) and the operator with the
// environment of deploy/operator's Deployment (STRATA_MEMORY_LIMIT set to
// its 512Mi) as a child process; a watchdog samples its RssAnon every
// 5 ms and kills it past the limit, as the kernel would. Normal modules
// each have a hook watching a ConfigMap that copies the ConfigMap's round
// into the module's values, and a chart the operator installs as a Helm
// release; for -duration the run changes each watched ConfigMap and waits
// for the round to reach the ConfigMap the release renders. Hostile
// modules beside them, each on a queue of its own: a hook writing a 27 MB
// values patch (700,000 operations), a hook printing without end, a hook
// that sleeps while its 800 KB watched ConfigMap is changed again and
// again, and a hook that hangs past the hook timeout. It prints the
// normal modules' rounds seen through and errors (the goal is none), the
// hook runs by module and result (the operator's metrics), and the peak
// memory, and exits 1 when a normal module saw an error or the operator
// was killed or exited.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/strata-dev/strata/hack/internal/loadrun"
	"github.com/strata-dev/strata/internal/kube/kubetest"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "opload:", err)
		os.Exit(1)
	}
}

type options struct {
	strata      string
	limit       int64
	duration    time.Duration
	modules     int
	hookTimeout time.Duration
	quick       bool
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("opload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.strata, "strata", "", "the strata binary (required)")
	fs.Int64Var(&o.limit, "limit", 512<<20, "the operator's memory limit, bytes (deploy/operator: 512Mi)")
	fs.DurationVar(&o.duration, "duration", time.Minute, "how long to run")
	fs.IntVar(&o.modules, "modules", 4, "normal modules")
	fs.DurationVar(&o.hookTimeout, "hook-timeout", 10*time.Second, "the operator's --hook-timeout (deploy/operator keeps the default, 10m: shortened so that the hanging hook passes it within the run)")
	fs.BoolVar(&o.quick, "quick", false, "a smoke run: 10 s, 2 normal modules (overrides -duration and -modules)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	case o.strata == "":
		return errors.New("-strata is required")
	case o.modules < 1 || o.modules > 50:
		return errors.New("-modules must be 1 to 50")
	case o.limit < 1:
		return errors.New("-limit must be positive")
	case o.hookTimeout <= 0:
		return errors.New("-hook-timeout must be positive")
	}
	if o.quick {
		o.duration, o.modules = 10*time.Second, 2
	}
	return load(ctx, o, stdout)
}

// ns is the operator's namespace: its ConfigMap, the watched objects and
// the releases.
const ns = "addon-operator"

// opTimeout bounds the wait for one round to reach a release.
const opTimeout = 90 * time.Second

// hook is a shell hook: its --config answer and its body.
func hook(config, body string) string {
	return "#!/bin/sh\nif [ \"$1\" = --config ]; then cat <<'EOF'\n" + config + "\nEOF\nexit 0; fi\n" + body + "\n"
}

// normalName is the name of normal module i.
func normalName(i int) string { return fmt.Sprintf("norm%02d", i) }

// writeTree writes the modules, each enabled in modules/values.yaml.
func writeTree(dir string, modules int) error {
	files := map[string]string{}
	values := ""
	add := func(name string, order int, chart bool) string {
		m := fmt.Sprintf("modules/%03d-%s/", order, name)
		values += name + "Enabled: true\n"
		files[m+"Chart.yaml"] = "apiVersion: v2\nname: " + name + "\nversion: 0.0.1\n"
		files[m+"values.yaml"] = name + ":\n  round: \"0\"\n"
		if chart {
			files[m+"templates/configmap.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name +
				"\ndata:\n  round: {{ .Values." + name + ".round | quote }}\n"
		}
		return m
	}
	for i := range modules {
		name := normalName(i)
		m := add(name, 10+i, true)
		// The hook copies the watched ConfigMap's round into the values.
		files[m+"hooks/watch.sh"] = hook(`{"configVersion":"v1","kubernetes":[{"name":"watched","apiVersion":"v1","kind":"ConfigMap",
"nameSelector":{"matchNames":["watched-`+name+`"]},"namespace":{"nameSelector":{"matchNames":["`+ns+`"]}},
"executeHookOnEvent":["Added","Modified"]}]}`,
			`round=$(tr -d ' \n' < "$BINDING_CONTEXT_PATH" | grep -o '"round":"[0-9]*"' | tail -n 1 | grep -o '[0-9][0-9]*')
[ -n "$round" ] || exit 0
echo '[{"op":"add","path":"/`+name+`/round","value":"'"$round"'"}]' > "$VALUES_JSON_PATCH_PATH"`)
	}
	// A 27 MB values patch of 700,000 operations, every 3 s.
	// The patch lies outside the module's directory: Helm would put
	// the module's files into its release.
	m := add("hostilepatch", 90, false)
	files[m+"hooks/patch.sh"] = hook(`{"configVersion":"v1","schedule":[{"name":"patch","crontab":"*/3 * * * * *","queue":"hostile-patch"}]}`,
		`cat "`+filepath.Join(dir, "patch.json")+`" > "$VALUES_JSON_PATCH_PATH"`)
	files["patch.json"] = valuesPatch(700_000)
	// Endless output, every 3 s.
	m = add("hostileendless", 91, false)
	files[m+"hooks/endless.sh"] = hook(`{"configVersion":"v1","schedule":[{"name":"endless","crontab":"*/3 * * * * *","queue":"hostile-endless"}]}`,
		`yes 'the hook says this again and again'`)
	// A slow hook watching an 800 KB ConfigMap the run changes again and
	// again while it runs.
	m = add("hostilechurn", 92, false)
	files[m+"hooks/churn.sh"] = hook(`{"configVersion":"v1","kubernetes":[{"name":"big","apiVersion":"v1","kind":"ConfigMap",
"nameSelector":{"matchNames":["big-watched"]},"namespace":{"nameSelector":{"matchNames":["`+ns+`"]}},
"executeHookOnEvent":["Added","Modified"],"queue":"hostile-churn"}]}`, `sleep 5`)
	// A hook that hangs past the hook timeout, every 3 s.
	m = add("hostilehang", 93, false)
	files[m+"hooks/hang.sh"] = hook(`{"configVersion":"v1","schedule":[{"name":"hang","crontab":"*/3 * * * * *","queue":"hostile-hang"}]}`,
		`sleep 3600`)
	files["modules/values.yaml"] = values
	files["global-hooks/.keep"] = ""
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

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func load(ctx context.Context, o options, stdout io.Writer) error {
	dir, err := os.MkdirTemp("", "opload")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := writeTree(dir, o.modules); err != nil {
		return err
	}
	began := time.Now()
	progress := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "opload: %5.1fs: %s\n", time.Since(began).Seconds(), fmt.Sprintf(format, args...))
	}
	progress("starting etcd and kube-apiserver")
	c, err := kubetest.StartCluster(ctx, kubetest.Options{Dir: filepath.Join(dir, "cluster"), BuildOutput: os.Stderr,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	defer c.Stop()
	kc := &k{c: c}
	if err := kc.setup(o.modules); err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	modules := filepath.Join(dir, "modules")
	srv, err := loadrun.Start(dir, "operator", o.limit, []string{o.strata, "operator", "run", "--hook-timeout", o.hookTimeout.String()},
		"HOME="+tmp, "TMPDIR="+tmp,
		"KUBE_CONFIG="+c.Kubeconfig, "KUBECONFIG="+c.Kubeconfig,
		"MODULES_DIR="+modules, "GLOBAL_HOOKS_DIR="+filepath.Join(dir, "global-hooks"),
		"ADDON_OPERATOR_NAMESPACE="+ns, "ADDON_OPERATOR_CONFIG_MAP=addon-operator",
		"ADDON_OPERATOR_LISTEN_ADDRESS=127.0.0.1", "ADDON_OPERATOR_LISTEN_PORT="+strconv.Itoa(port),
		"ADDON_OPERATOR_TMP_DIR="+filepath.Join(tmp, "work"), "DEBUG_UNIX_SOCKET="+filepath.Join(tmp, "debug.socket"),
		"HELM_HISTORY_MAX=10", "LOG_TYPE=json", "KUBE_CLIENT_QPS=50", "KUBE_CLIENT_BURST=100")
	if err != nil {
		return err
	}
	defer srv.Stop(30 * time.Second)
	progress("the operator runs (log %s); %s of load", srv.Log, o.duration)

	runCtx, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	var (
		wg      sync.WaitGroup
		normal  loadrun.Errors
		churned atomic.Int64
		churnEr loadrun.Tally
	)
	for i := range o.modules {
		wg.Go(func() {
			// The first round: the release the first converge installs.
			normal.Done(kc.waitRound(normalName(i), 0))
			for round := 1; runCtx.Err() == nil; round++ {
				normal.Done(kc.step(normalName(i), round))
			}
		})
	}
	wg.Go(func() {
		for round := 1; runCtx.Err() == nil; round++ {
			if err := kc.applyConfigMap("big-watched", bigData(round)); err != nil && runCtx.Err() == nil {
				churnEr.Add("800 KB watched object", "error: "+err.Error())
				continue
			}
			churned.Add(1)
			time.Sleep(50 * time.Millisecond)
		}
	})
	start := time.Now()
	wg.Wait()
	elapsed := time.Since(start)
	progress("load done")
	if srv.Failure() == "" {
		// The operator still serves a normal module after the run.
		normal.Done(kc.step(normalName(0), 1_000_000))
	}
	runs, metricsErr := hookRuns(port)
	failure := srv.Failure()
	srv.Stop(30 * time.Second)
	progress("the operator stopped")

	ok, errs := normal.Counts()
	fmt.Fprintf(stdout, "operator: strata operator run --hook-timeout %s, STRATA_MEMORY_LIMIT=%d (%d MiB), %s\n", o.hookTimeout, o.limit, o.limit>>20, elapsed.Round(time.Second))
	fmt.Fprintf(stdout, "normal modules: %d (a kubernetes hook copying its ConfigMap's round into the values, a Helm release), rounds seen in the releases: %d, errors: %d\n",
		o.modules, ok, len(errs))
	for i, e := range errs {
		if i == 5 {
			fmt.Fprintf(stdout, "  ... %d more\n", len(errs)-5)
			break
		}
		fmt.Fprintf(stdout, "  %s\n", e)
	}
	if metricsErr != nil {
		fmt.Fprintf(stdout, "hook runs: the operator's metrics: %v\n", metricsErr)
	} else {
		fmt.Fprintf(stdout, "hook runs by module (the operator's module_hook_run_*_total):\n%s", runs.String())
	}
	fmt.Fprintf(stdout, "failed hook runs by reason (the operator's log):\n%s", failures(srv.Log).String())
	fmt.Fprintf(stdout, "800 KB watched object: %d changes while its hook ran\n%s", churned.Load(), churnEr.String())
	fmt.Fprintf(stdout, "peak RssAnon: %d MiB of %d MiB\n", srv.Peak()>>20, o.limit>>20)
	if failure != "" {
		return fmt.Errorf("the operator %s; its log's end:\n%s", failure, srv.LogTail(20))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d errors seen by normal modules", len(errs))
	}
	return nil
}

// valuesPatch is a JSON patch of n operations: 27 MB for 700,000 (the
// issue's input).
func valuesPatch(n int) string {
	var patch strings.Builder
	patch.WriteString("[")
	for i := range n {
		if i > 0 {
			patch.WriteString(",")
		}
		fmt.Fprintf(&patch, `{"op":"add","path":"/%05d","value":1}`, i%100_000)
	}
	patch.WriteString("]")
	return patch.String()
}

// bigData is the 800 KB ConfigMap's data of a round.
func bigData(round int) map[string]string {
	return map[string]string{"round": strconv.Itoa(round), "blob": strings.Repeat("x", 800_000)}
}

// hookRuns reads the operator's module hook run counters by module and
// result.
func hookRuns(port int) (*loadrun.Tally, error) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var t loadrun.Tally
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for metric, result := range map[string]string{
			"addon_operator_module_hook_run_success_total{":        "ok",
			"addon_operator_module_hook_run_errors_total{":         "error",
			"addon_operator_module_hook_run_allowed_errors_total{": "allowed error",
		} {
			if !strings.HasPrefix(line, metric) {
				continue
			}
			module := label(line, "module")
			n, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			if err != nil {
				continue
			}
			for range int(n) {
				t.Add(module, result)
			}
		}
	}
	return &t, sc.Err()
}

// duration matches the durations in errors, which differ run by run.
var duration = regexp.MustCompile(`\b\d+(\.\d+)?(ms|s)\b`)

// failures tallies the failed hook runs in the operator's JSON log by
// hook and the start of their error.
func failures(log string) *loadrun.Tally {
	var t loadrun.Tally
	f, err := os.Open(log)
	if err != nil {
		t.Add("the log", err.Error())
		return &t
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var line struct {
			Msg, Hook, Outcome, Error string
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.Msg != "hook run" || line.Outcome != "failed" {
			continue
		}
		// The error after the hook's name and its command's path.
		reason := line.Error
		for _, sep := range []string{".sh: ", ".sh` "} {
			if _, after, ok := strings.Cut(reason, sep); ok {
				reason = after
			}
		}
		reason = strings.TrimSpace(duration.ReplaceAllString(reason, "T"))
		if len(reason) > 120 {
			reason = reason[:120] + "..."
		}
		t.Add(strings.TrimPrefix(line.Hook, "module "), reason)
	}
	return &t
}

// label returns a label's value in a metric line.
func label(line, name string) string {
	_, rest, ok := strings.Cut(line, name+`="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// k are the run's clients.
type k struct {
	c *kubetest.Cluster
}

func (k *k) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// setup creates the operator's namespace, its ConfigMap and the watched
// objects.
func (k *k) setup(modules int) error {
	ctx, cancel := k.ctx()
	defer cancel()
	if _, err := k.c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := k.applyConfigMap("addon-operator", nil); err != nil {
		return err
	}
	for i := range modules {
		if err := k.applyConfigMap("watched-"+normalName(i), map[string]string{"round": "0"}); err != nil {
			return err
		}
	}
	return k.applyConfigMap("big-watched", bigData(0))
}

// applyConfigMap creates or replaces a ConfigMap's data.
func (k *k) applyConfigMap(name string, data map[string]string) error {
	ctx, cancel := k.ctx()
	defer cancel()
	cms := k.c.Client.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	cm.Data = data
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	return err
}

// step changes a normal module's watched ConfigMap to round and waits for
// the round to reach its release.
func (k *k) step(module string, round int) error {
	if err := k.applyConfigMap("watched-"+module, map[string]string{"round": strconv.Itoa(round)}); err != nil {
		return fmt.Errorf("%s: round %d: %w", module, round, err)
	}
	return k.waitRound(module, round)
}

// waitRound waits until the ConfigMap a module's release renders holds
// round.
func (k *k) waitRound(module string, round int) error {
	deadline := time.Now().Add(opTimeout)
	last := ""
	for time.Now().Before(deadline) {
		ctx, cancel := k.ctx()
		cm, err := k.c.Client.CoreV1().ConfigMaps(ns).Get(ctx, module, metav1.GetOptions{})
		cancel()
		switch {
		case err != nil:
			last = err.Error()
		case cm.Data["round"] == strconv.Itoa(round):
			return nil
		default:
			last = fmt.Sprintf("its round is %q", cm.Data["round"])
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s: round %d not in its release's ConfigMap after %s: %s", module, round, opTimeout, last)
}
