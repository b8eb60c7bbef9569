// Command helmparity sweeps real charts through strata's built-in Helm
// plugin and the helm CLI and compares what Argo CD would read from each:
// for every chart given, the render with its default values and one with
// each of its own test values files (ci/*.yaml, ci/*.yml), as
//
//	helm template NAME DIR --include-crds --namespace NS [-f ci/x.yaml]
//	strata cmp generate DIR --builtin helm --app-name NAME --namespace NS \
//	    [--param-array values-files=ci/x.yaml] -o json
//
// (values files as an Argo CD user writes them: relative to the chart's
// directory). helm's output is read as Argo CD reads it (package
// hack/internal/argoread); strata's JSON list is what its sidecar sends.
// Where one fails, the other must fail too; both errors are printed.
//
//	go run ./hack/helmparity -helm "$(bash hack/testbin/build.sh helm)" -strata bin/strata [-v] CHARTDIR...
//
// Each chart is copied to a scratch directory first (-work, removed
// afterwards unless given). A dependency of Chart.yaml that charts/ lacks
// is taken from the charts given on the command line (the first with that
// name in Chart.yaml, its own dependencies vendored the same way), so a
// set of sibling charts renders with no network; a chart whose dependency
// is none of them is skipped, and said so. Values that differ from one
// helm run to the next (randAlphaNum, genCA, uuidv4, now) are found by
// rendering with helm a second time when the first comparison differs:
// the leaves that differ between the two helm runs are left out of the
// comparison, and counted.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/strata-dev/strata/hack/internal/argoread"
)

type chartMeta struct {
	Name         string `json:"name"`
	Dependencies []struct {
		Name       string `json:"name"`
		Repository string `json:"repository"`
		Alias      string `json:"alias"`
	} `json:"dependencies"`
}

type config struct {
	helm, strata, ns, work string
	helmEnv                []string
	verbose                bool
	only                   *regexp.Regexp
	pool                   map[string]string // chart name -> directory
}

// outcome of one case.
const (
	same       = "same"
	sameMasked = "same-masked" // same once the values differing between two helm runs are left out
	differ     = "differ"
	bothFail   = "both-fail"
	helmFail   = "helm-only-fail"
	strataFail = "strata-only-fail"
	skipped    = "skipped"
)

func main() {
	c := &config{}
	flag.StringVar(&c.helm, "helm", "", "the helm binary (hack/testbin/build.sh helm prints it)")
	flag.StringVar(&c.strata, "strata", "bin/strata", "the strata binary")
	flag.StringVar(&c.ns, "namespace", "parity", "the release namespace, for both")
	flag.StringVar(&c.work, "work", "", "scratch directory for the copied charts (default: a temporary one, removed)")
	flag.BoolVar(&c.verbose, "v", false, "print every differing document and both errors of failing cases")
	only := flag.String("run", "", "sweep only the charts whose directory name matches this regular expression (all are dependencies still)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: helmparity -helm BIN [-strata BIN] [-namespace NS] [-work DIR] [-v] [-run REGEXP] CHARTDIR...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 || c.helm == "" {
		flag.Usage()
		os.Exit(2)
	}
	if *only != "" {
		re, err := regexp.Compile(*only)
		if err != nil {
			fmt.Fprintln(os.Stderr, "helmparity: -run:", err)
			os.Exit(2)
		}
		c.only = re
	}
	if err := run(c, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "helmparity:", err)
		os.Exit(1)
	}
}

func run(c *config, dirs []string) error {
	home, err := os.MkdirTemp("", "helmparity-home-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	// Both with a private HOME: no user configuration, plugin or repository.
	c.helmEnv = []string{"HOME=" + home, "PATH=/usr/bin:/bin", "HELM_CACHE_HOME=" + home + "/cache",
		"HELM_CONFIG_HOME=" + home + "/config", "HELM_DATA_HOME=" + home + "/data", "KUBECONFIG=" + home + "/kubeconfig"}
	if c.work == "" {
		if c.work, err = os.MkdirTemp("", "helmparity-"); err != nil {
			return err
		}
		defer os.RemoveAll(c.work)
	}
	c.pool = map[string]string{}
	for i, d := range dirs {
		if dirs[i], err = filepath.Abs(d); err != nil {
			return err
		}
		m, err := readMeta(dirs[i])
		if err != nil {
			continue // said so below
		}
		if _, ok := c.pool[m.Name]; !ok {
			c.pool[m.Name] = dirs[i]
		}
	}
	counts := map[string]int{}
	total, masked := 0, 0
	for i, dir := range dirs {
		name := filepath.Base(dir)
		if c.only != nil && !c.only.MatchString(name) {
			continue
		}
		dst := filepath.Join(c.work, strconv.Itoa(i), name)
		if err := c.prepare(dir, dst, nil); err != nil {
			cases, _ := valuesFiles(dir)
			fmt.Printf("%-44s %-34s %s: %v\n", name, "*", skipped, err)
			counts[skipped] += len(cases) + 1
			continue
		}
		cases, err := valuesFiles(dst)
		if err != nil {
			return err
		}
		for _, vf := range append([]string{""}, cases...) {
			res, n, detail := c.compare(name, dst, vf)
			counts[res]++
			total++
			masked += n
			label := vf
			if label == "" {
				label = "(defaults)"
			}
			fmt.Printf("%-44s %-34s %s%s\n", name, label, res, detail)
		}
	}
	fmt.Printf("# %d cases compared (%d skipped): ", total, counts[skipped])
	for _, k := range []string{same, sameMasked, bothFail, differ, helmFail, strataFail} {
		fmt.Printf("%s %d, ", k, counts[k])
	}
	fmt.Printf("%d values left out as differing between two helm runs\n", masked)
	return nil
}

func readMeta(dir string) (*chartMeta, error) {
	b, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return nil, err
	}
	var m chartMeta
	if err := sigsyaml.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s/Chart.yaml: %w", dir, err)
	}
	return &m, nil
}

// prepare copies the chart src to dst and vendors the dependencies its
// charts/ lacks from the pool; seen guards against cycles.
func (c *config) prepare(src, dst string, seen []string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		return err
	}
	m, err := readMeta(dst)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	entries, _ := os.ReadDir(filepath.Join(dst, "charts"))
	for _, e := range entries {
		if e.IsDir() {
			if sub, err := readMeta(filepath.Join(dst, "charts", e.Name())); err == nil {
				have[sub.Name] = true
			}
		} else if n, ok := strings.CutSuffix(e.Name(), ".tgz"); ok {
			// name-version.tgz, as helm package names archives.
			if i := strings.LastIndexByte(n, '-'); i > 0 {
				have[n[:i]] = true
			}
		}
	}
	for _, d := range m.Dependencies {
		if have[d.Name] {
			continue
		}
		from, ok := c.pool[d.Name]
		if !ok || slices.Contains(seen, d.Name) {
			return fmt.Errorf("dependency %q (%s) is not vendored and not among the charts given", d.Name, d.Repository)
		}
		if err := c.prepare(from, filepath.Join(dst, "charts", d.Name), append(seen, m.Name)); err != nil {
			return fmt.Errorf("dependency %q: %w", d.Name, err)
		}
		have[d.Name] = true
	}
	return nil
}

func valuesFiles(dir string) ([]string, error) {
	var out []string
	for _, pat := range []string{"ci/*.yaml", "ci/*.yml"} {
		m, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			return nil, err
		}
		for _, f := range m {
			out = append(out, filepath.ToSlash(strings.TrimPrefix(f, dir+string(filepath.Separator))))
		}
	}
	sort.Strings(out)
	return out, nil
}

func (c *config) helmTemplate(name, dir, vf string) ([]byte, error) {
	args := []string{"template", name, ".", "--include-crds", "--namespace", c.ns}
	if vf != "" {
		args = append(args, "-f", vf)
	}
	cmd := exec.Command(c.helm, args...)
	cmd.Env, cmd.Dir = c.helmEnv, dir
	return output(cmd)
}

func (c *config) strataGenerate(name, dir, vf, format string) ([]byte, error) {
	args := []string{"cmp", "generate", dir, "--builtin", "helm", "--repo-root", dir,
		"--app-name", name, "--namespace", c.ns, "-o", format}
	if vf != "" {
		args = append(args, "--param-array", "values-files="+vf)
	}
	cmd := exec.Command(c.strata, args...)
	cmd.Env = c.helmEnv
	return output(cmd)
}

func output(cmd *exec.Cmd) ([]byte, error) {
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// compare runs one case and returns its outcome, the values masked as
// random, and a detail for the report line.
func (c *config) compare(name, dir, vf string) (string, int, string) {
	hout, herr := c.helmTemplate(name, dir, vf)
	sout, serr := c.strataGenerate(name, dir, vf, "json")
	switch {
	case herr != nil && serr != nil:
		if c.verbose {
			return bothFail, 0, fmt.Sprintf("\n    helm:   %s\n    strata: %s", oneLine(herr), oneLine(serr))
		}
		return bothFail, 0, ""
	case herr != nil:
		return helmFail, 0, fmt.Sprintf("\n    helm: %s", oneLine(herr))
	case serr != nil:
		return strataFail, 0, fmt.Sprintf("\n    strata: %s", oneLine(serr))
	}
	theirs, err := argoread.Docs(hout)
	if err != nil {
		return differ, 0, fmt.Sprintf(": helm's output does not read as Argo CD reads it: %v", err)
	}
	ours, err := argoread.JSONList(sout)
	if err != nil {
		return differ, 0, fmt.Sprintf(": strata's JSON: %v", err)
	}
	// strata's YAML output must read as its JSON output.
	yout, err := c.strataGenerate(name, dir, vf, "yaml")
	if err != nil {
		return strataFail, 0, fmt.Sprintf(": YAML output: %s", oneLine(err))
	}
	if yd, err := argoread.Docs(yout); err != nil || !slices.Equal(yd, ours) {
		return differ, 0, fmt.Sprintf(": strata's YAML output does not read as its JSON output (%v)", err)
	}
	text := ""
	if !bytes.Equal(yout, hout) {
		text = " (YAML text differs)"
	}
	diffs := docDiffs(ours, theirs)
	if len(diffs) == 0 {
		return same, 0, text
	}
	// A second helm run tells which values change at every render.
	again, err := c.helmTemplate(name, dir, vf)
	if err != nil {
		return differ, 0, fmt.Sprintf(": helm's second run failed: %v", err)
	}
	second, err := argoread.Docs(again)
	if err != nil {
		return differ, 0, err.Error()
	}
	random := map[string]bool{}
	for _, p := range docDiffs(theirs, second) {
		random[p] = true
	}
	var real []string
	for _, p := range diffs {
		if !random[p] {
			real = append(real, p)
		}
	}
	if len(real) == 0 {
		return sameMasked, len(diffs), fmt.Sprintf(" (%d random values: %s)", len(diffs), clip(strings.Join(diffs, " "), 200))
	}
	detail := fmt.Sprintf(": %d documents from strata, %d from helm; %d values differ: %s", len(ours), len(theirs), len(real), clip(strings.Join(real, " "), 300))
	if c.verbose {
		for _, p := range real {
			detail += "\n    " + p + "\n      helm:   " + clip(at(theirs, p), 300) + "\n      strata: " + clip(at(ours, p), 300)
		}
	}
	return differ, 0, detail
}

// docDiffs lists the JSON paths (document index first) where a and b
// differ: leaves, or a whole document one side lacks.
func docDiffs(a, b []string) []string {
	var out []string
	for i := range max(len(a), len(b)) {
		if i >= len(a) || i >= len(b) {
			out = append(out, fmt.Sprintf("[%d]", i))
			continue
		}
		if a[i] == b[i] {
			continue
		}
		va, err1 := argoread.Decode([]byte(a[i]))
		vb, err2 := argoread.Decode([]byte(b[i]))
		if err := errors.Join(err1, err2); err != nil {
			out = append(out, fmt.Sprintf("[%d]", i))
			continue
		}
		walk(va, vb, fmt.Sprintf("[%d]", i), &out)
	}
	return out
}

func walk(a, b any, path string, out *[]string) {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			*out = append(*out, path)
			return
		}
		keys := map[string]bool{}
		for k := range x {
			keys[k] = true
		}
		for k := range y {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			walk(x[k], y[k], path+"."+k, out)
		}
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			*out = append(*out, path)
			return
		}
		for i := range x {
			walk(x[i], y[i], fmt.Sprintf("%s[%d]", path, i), out)
		}
	default:
		if fmt.Sprintf("%T%v", a, a) != fmt.Sprintf("%T%v", b, b) {
			*out = append(*out, path)
		}
	}
}

// at shows the value at path in docs (the document, when path names one).
func at(docs []string, path string) string {
	i := strings.IndexByte(path, ']')
	n, err := strconv.Atoi(path[1:i])
	if err != nil || n >= len(docs) {
		return "(none)"
	}
	v, err := argoread.Decode([]byte(docs[n]))
	if err != nil {
		return docs[n]
	}
	rest := path[i+1:]
	for rest != "" {
		if rest[0] == '[' {
			j := strings.IndexByte(rest, ']')
			k, _ := strconv.Atoi(rest[1:j])
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return "(none)"
			}
			v, rest = l[k], rest[j+1:]
			continue
		}
		rest = rest[1:]
		j := strings.IndexAny(rest, ".[")
		if j < 0 {
			j = len(rest)
		}
		m, ok := v.(map[string]any)
		if !ok {
			return "(none)"
		}
		if v, ok = m[rest[:j]]; !ok {
			return "(none)"
		}
		rest = rest[j:]
	}
	return strconv.Quote(fmt.Sprint(v))
}

func oneLine(err error) string {
	return clip(strings.Join(strings.Fields(err.Error()), " "), 400)
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
