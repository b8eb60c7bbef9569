package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/strata-dev/strata/internal/kube/kubetest"
	"github.com/strata-dev/strata/internal/testbin"
)

// The operators the cluster mode knows, as -operators names them.
const (
	opFlant  = "addon-operator"
	opStrata = "strata"
)

// clusterOptions are the cluster mode's flags.
type clusterOptions struct {
	dir           string
	modules       int
	count         int
	sameOrder     bool
	strata        string // strata binary; "" builds it
	addonOperator string // flant's binary; "" builds it with hack/testbin/build.sh
	operators     []string
	fresh         bool
	logLevel      string
	timeout       time.Duration
	extraEnv      []string // KEY=VALUE added to both operators' environment
	settle        time.Duration
}

// operator is one side of the comparison.
type operator struct {
	name string // opFlant or opStrata
	bin  string
	cold []measurement
	warm []measurement
	// newRevisions counts the release revisions the no-op restarts wrote
	// (0 when a restart leaves unchanged releases alone).
	newRevisions int
}

// runCluster starts a control plane and measures each operator on it, in
// interleaved rounds, each round in namespaces of its own.
func runCluster(o clusterOptions) error {
	ctx := context.Background()
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
	if err := writeTree(dir, o.modules, o.sameOrder); err != nil {
		return err
	}

	c, err := startControlPlane(ctx, dir)
	if err != nil {
		return err
	}
	defer c.Stop()
	fmt.Fprintf(os.Stderr, "opbench: control plane at %s (kubeconfig %s)\n", c.Config.Host, c.Kubeconfig)
	for _, op := range ops {
		fmt.Printf("%s: %s\n", op.name, op.bin)
	}

	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return err
	}
	loadStart := loadAvg()
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
			cold, warm, revs, err := o.measure(ctx, c, dir, op, round)
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", round, op.name, err)
			}
			op.cold, op.warm = append(op.cold, cold), append(op.warm, warm)
			op.newRevisions += revs
			fmt.Printf("round %d %-15s cold %8v  no-op restart %8v  peak RssAnon %6.1f / %6.1f MB  peak RSS %6.1f / %6.1f MB  CPU %6v / %6v  hooks' CPU %6v  API server+etcd CPU %6v / %6v\n",
				round, op.name, cold.ready.Round(time.Millisecond), warm.ready.Round(time.Millisecond),
				anonMB(cold.peakAnon), anonMB(warm.peakAnon), mb(cold.rssKB), mb(warm.rssKB), cold.cpu.Round(10*time.Millisecond), warm.cpu.Round(10*time.Millisecond),
				cold.hooksCPU.Round(10*time.Millisecond), cold.controlPlaneCPU.Round(10*time.Millisecond), warm.controlPlaneCPU.Round(10*time.Millisecond))
			if o.settle > 0 {
				fmt.Printf("round %d %-15s RSS %v after ready %6.1f / %6.1f MB\n", round, op.name, o.settle, mb(cold.settledRSSKB), mb(warm.settledRSSKB))
			}
		}
	}
	printTable(o, dir, ops)
	fmt.Printf("load average (1 min) %s at the start, %s at the end\n", loadStart, loadAvg())
	return nil
}

// loadAvg is the 1-minute load average, to tell an idle machine's figures
// from a shared one's.
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	if f := strings.Fields(string(data)); len(f) > 0 {
		return f[0]
	}
	return "unknown"
}

// measure runs op cold (a new namespace, no releases) and then again on
// the releases the cold run left (the no-op restart), and checks that the
// releases are there. It returns the count of release revisions the
// restart added.
func (o clusterOptions) measure(ctx context.Context, c *kubetest.Cluster, dir string, op *operator, round int) (cold, warm measurement, newRevisions int, err error) {
	ns := fmt.Sprintf("opbench-%s-%d", op.name, round)
	if err = createNamespace(ctx, c, ns); err != nil {
		return
	}
	tmp := filepath.Join(dir, "tmp", ns)
	if err = os.MkdirAll(tmp, 0o755); err != nil {
		return
	}
	for i, phase := range []string{"cold", "no-op restart"} {
		var l launch
		if l, err = o.launch(c, dir, op, ns, tmp, fmt.Sprintf("%s-%d-%s.log", op.name, round, strings.ReplaceAll(phase, " ", "-"))); err != nil {
			return
		}
		// The control plane's CPU time while the operator starts and
		// converges: what its requests cost the API server and etcd.
		var cpBefore, cpAfter time.Duration
		var cpErr error
		l.atStart = func() { cpBefore, cpErr = pidsCPU(c.PIDs()) }
		l.atReady = func() {
			var e error
			cpAfter, e = pidsCPU(c.PIDs())
			cpErr = errors.Join(cpErr, e)
		}
		var m measurement
		m, err = l.run(ctx)
		if err == nil && cpErr != nil {
			err = cpErr
		}
		m.controlPlaneCPU = cpAfter - cpBefore
		if err != nil {
			err = fmt.Errorf("%s run: %w", phase, err)
			return
		}
		var revs int
		if revs, err = checkReleases(ctx, c, ns, o.modules); err != nil {
			err = fmt.Errorf("after the %s run: %w", phase, err)
			return
		}
		if i == 0 {
			cold = m
			newRevisions = -revs
		} else {
			warm = m
			newRevisions += revs
		}
	}
	return
}

// launch describes op's process for namespace ns. Both operators get the
// same environment — the variables flant's addon-operator reads, which
// strata reads too — so each runs as it would in the same Deployment.
func (o clusterOptions) launch(c *kubetest.Cluster, dir string, op *operator, ns, tmp, log string) (launch, error) {
	port, err := freePort()
	if err != nil {
		return launch{}, err
	}
	modules, hooks := filepath.Join(dir, "modules"), filepath.Join(dir, "global-hooks")
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + tmp,
		"TMPDIR=" + tmp,
		"KUBE_CONFIG=" + c.Kubeconfig,
		// addon-operator's Helm client (helm3lib) ignores KUBE_CONFIG: it
		// takes Helm's own settings, KUBECONFIG (or the pod's service
		// account); without it every release fails on localhost:8080.
		"KUBECONFIG=" + c.Kubeconfig,
		// addon-operator v1.24 reads the ADDON_OPERATOR_ names; its image
		// still sets the short ones, which strata reads too.
		"ADDON_OPERATOR_MODULES_DIR=" + modules,
		"MODULES_DIR=" + modules,
		"ADDON_OPERATOR_GLOBAL_HOOKS_DIR=" + hooks,
		"GLOBAL_HOOKS_DIR=" + hooks,
		"ADDON_OPERATOR_NAMESPACE=" + ns,
		"ADDON_OPERATOR_CONFIG_MAP=addon-operator",
		"ADDON_OPERATOR_LISTEN_ADDRESS=127.0.0.1",
		"ADDON_OPERATOR_LISTEN_PORT=" + strconv.Itoa(port),
		"ADDON_OPERATOR_TMP_DIR=" + filepath.Join(tmp, "work"),
		"DEBUG_UNIX_SOCKET=" + filepath.Join(tmp, "debug.socket"),
		"LOG_LEVEL=" + o.logLevel,
		"LOG_TYPE=json",
	}
	env = append(env, o.extraEnv...)
	argv := []string{op.bin, "start"}
	if op.name == opStrata {
		argv = []string{op.bin, "operator", "run"}
	}
	return launch{
		name:    op.name,
		argv:    argv,
		env:     env,
		log:     filepath.Join(dir, "logs", log),
		ready:   fmt.Sprintf("http://127.0.0.1:%d/readyz", port),
		timeout: o.timeout,
		settle:  o.settle,
	}, nil
}

// createNamespace creates ns and an empty ConfigMap addon-operator in it
// (the modules are enabled by modules/values.yaml).
func createNamespace(ctx context.Context, c *kubetest.Cluster, ns string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "addon-operator", Namespace: ns}}
	if _, err := c.Client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating ConfigMap %s/addon-operator: %w", ns, err)
	}
	return nil
}

// chartConfigMap is the name of the object each module's chart renders.
var chartConfigMap = regexp.MustCompile(`^mod[0-9]{3}$`)

// checkReleases checks that ns holds a deployed Helm release of every
// module (Helm's storage: Secrets labelled owner=helm) and the ConfigMap
// its chart renders, with the value the module's beforeHelm hook set, and
// returns the number of release revisions stored.
func checkReleases(ctx context.Context, c *kubetest.Cluster, ns string, modules int) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	secrets, err := c.Client.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm"})
	if err != nil {
		return 0, err
	}
	deployed := map[string]bool{}
	for _, s := range secrets.Items {
		if s.Labels["status"] == "deployed" {
			deployed[s.Labels["name"]] = true
		}
	}
	var missing []string
	for i := 1; i <= modules; i++ {
		if name := fmt.Sprintf("mod%03d", i); !deployed[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return 0, fmt.Errorf("%d of %d modules have no deployed release in %s (Secrets owner=helm): %s",
			len(missing), modules, ns, strings.Join(missing, " "))
	}
	cms, err := c.Client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	good := 0
	for _, cm := range cms.Items {
		if chartConfigMap.MatchString(cm.Name) && cm.Data["fromHook"] == "set by before-helm" {
			good++
		}
	}
	if good != modules {
		return 0, fmt.Errorf("%d of %d charts' ConfigMaps in %s carry the value their beforeHelm hook set", good, modules, ns)
	}
	return len(secrets.Items), nil
}

// printTable prints the medians of each operator and their ratios.
func printTable(o clusterOptions, dir string, ops []*operator) {
	fmt.Printf("\n%d modules × 3 shell hooks + 1 global hook on kube-apiserver (kubetest), %d rounds, medians, GOMAXPROCS %d, %d CPUs, tree in %s\n",
		o.modules, o.count, runtime.GOMAXPROCS(0), runtime.NumCPU(), dir)
	rows := []struct {
		label string
		get   func(op *operator) float64
		unit  string
	}{
		{"cold start → first converge", func(op *operator) float64 { return medianOf(op.cold, readySeconds) }, "s"},
		{"no-op restart → converge", func(op *operator) float64 { return medianOf(op.warm, readySeconds) }, "s"},
		{"peak RssAnon, max of all runs", func(op *operator) float64 { return maxAnon(op) }, "MB"},
		{"peak RssAnon, cold (median)", func(op *operator) float64 {
			return medianOf(op.cold, func(m measurement) float64 { return anonMB(m.peakAnon) })
		}, "MB"},
		{"peak RSS, max of all runs", func(op *operator) float64 { return maxRSS(op) }, "MB"},
		{"peak RSS, cold (median)", func(op *operator) float64 { return medianOf(op.cold, rssMB) }, "MB"},
		{"CPU to first converge", func(op *operator) float64 { return medianOf(op.cold, cpuSeconds) }, "s"},
		{"CPU to no-op converge", func(op *operator) float64 { return medianOf(op.warm, cpuSeconds) }, "s"},
		{"hooks' CPU, first converge", func(op *operator) float64 { return medianOf(op.cold, hooksSeconds) }, "s"},
		{"API server+etcd CPU, first", func(op *operator) float64 { return medianOf(op.cold, controlPlaneSeconds) }, "s"},
		{"API server+etcd CPU, no-op", func(op *operator) float64 { return medianOf(op.warm, controlPlaneSeconds) }, "s"},
	}
	if o.settle > 0 {
		rows = append(rows, struct {
			label string
			get   func(op *operator) float64
			unit  string
		}{"RSS " + o.settle.String() + " after ready (med)", func(op *operator) float64 {
			return medianOf(append(slices.Clone(op.cold), op.warm...), settledMB)
		}, "MB"})
	}
	names := make([]string, len(ops))
	for i, op := range ops {
		names[i] = op.name
	}
	table := make([]comparisonRow, len(rows))
	for i, r := range rows {
		table[i] = comparisonRow{label: r.label, unit: r.unit}
		for _, op := range ops {
			table[i].vals = append(table[i].vals, r.get(op))
		}
	}
	printComparison(names, table)
	for _, op := range ops {
		fmt.Printf("%s: %d release revisions written by %d no-op restarts (0 = releases left alone)\n", op.name, op.newRevisions, len(op.warm))
	}
	fmt.Printf("RssAnon and peak RSS are the operator process's alone (hooks not included); peak RSS also counts the binary's file pages it touched; logs in %s\n", filepath.Join(dir, "logs"))
}

func readySeconds(m measurement) float64 { return m.ready.Seconds() }
func cpuSeconds(m measurement) float64   { return m.cpu.Seconds() }
func hooksSeconds(m measurement) float64 { return m.hooksCPU.Seconds() }
func rssMB(m measurement) float64        { return mb(m.rssKB) }
func settledMB(m measurement) float64    { return mb(m.settledRSSKB) }
func controlPlaneSeconds(m measurement) float64 {
	return m.controlPlaneCPU.Seconds()
}

// pidsCPU is the CPU time the processes pids have used.
func pidsCPU(pids []int) (time.Duration, error) {
	var sum time.Duration
	for _, pid := range pids {
		cpu, err := procCPU(pid)
		if err != nil {
			return 0, err
		}
		sum += cpu[0]
	}
	return sum, nil
}

func medianOf(ms []measurement, f func(measurement) float64) float64 {
	if len(ms) == 0 {
		return 0
	}
	v := make([]float64, len(ms))
	for i, m := range ms {
		v[i] = f(m)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

func maxRSS(op *operator) float64 {
	var kb int64
	for _, m := range append(slices.Clone(op.cold), op.warm...) {
		kb = max(kb, m.rssKB)
	}
	return mb(kb)
}

// startControlPlane starts etcd and kube-apiserver (built by testbin, as
// the tests run them) with their data under dir/cluster.
func startControlPlane(ctx context.Context, dir string) (*kubetest.Cluster, error) {
	co := kubetest.Options{Dir: filepath.Join(dir, "cluster"), Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))}
	for _, b := range []struct {
		name string
		path *string
	}{{"etcd", &co.EtcdPath}, {"kube-apiserver", &co.APIServerPath}} {
		var err error
		if *b.path, err = testbin.Build(ctx, b.name, os.Stderr); err != nil {
			return nil, err
		}
	}
	return kubetest.StartCluster(ctx, co)
}

// comparisonRow is one line of a side-by-side table: a value per operator.
type comparisonRow struct {
	label, unit string
	vals        []float64
}

// printComparison prints rows with a column per operator name and, for
// two operators, the ratio of the second's value to the first's.
func printComparison(names []string, rows []comparisonRow) {
	fmt.Printf("%-30s", "")
	for _, n := range names {
		fmt.Printf(" %15s", n)
	}
	if len(names) == 2 {
		fmt.Printf(" %22s", names[1]+"/"+names[0])
	}
	fmt.Println()
	for _, r := range rows {
		fmt.Printf("%-30s", r.label)
		for _, v := range r.vals {
			fmt.Printf(" %12.2f %-2s", v, r.unit)
		}
		if len(r.vals) == 2 && r.vals[0] > 0 {
			fmt.Printf(" %21.2f×", r.vals[1]/r.vals[0])
		}
		fmt.Println()
	}
}

func maxAnon(op *operator) float64 {
	var b int64
	for _, m := range append(slices.Clone(op.cold), op.warm...) {
		b = max(b, m.peakAnon)
	}
	return anonMB(b)
}
