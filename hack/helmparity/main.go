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
// directory), helm's flags as Argo CD's Helm source builds them (a kube
// version cut to its numbers, a values file pattern expanded). helm's output is read as Argo CD reads it (package
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
//
// With -glob, a chart with more than one ci values file is also rendered
// with the values-files pattern ci/*.yaml, helm getting each match in
// lexical order, as Argo CD expands a valueFiles pattern.
//
// With -unittest, each test of the charts' helm-unittest suites
// (tests/**/*_test.yaml) is a case too: its suite's and its own values files
// and set entries merged into one values file, written beside the chart
// (../unittest/NAME.yaml, as an Argo CD user names a values file outside
// the chart); the suites' release, capabilities and assertions are not
// used, nor is the suite's list of templates (every template is
// rendered, so a test may reach a chart's check its suite never renders).
// A test that expects the render to fail must fail with both.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	k8sversion "k8s.io/apimachinery/pkg/util/version"
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
	deps                   []string
	unittest, glob         bool
	skipCRDs, skipTests    bool
	release, kubeVersion   string
	apiVersions            []string
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
	flag.Func("deps", "a chart directory used only as a dependency of the charts swept (repeatable)", func(d string) error {
		c.deps = append(c.deps, d)
		return nil
	})
	flag.BoolVar(&c.unittest, "unittest", false, "also render with the values of each helm-unittest test of the charts (tests/**/*_test.yaml: the suite's and the test's values files and set)")
	flag.StringVar(&c.release, "release", "", "the release name, for both (default: the chart directory's name)")
	flag.StringVar(&c.kubeVersion, "kube-version", "", "the Kubernetes version, for both (helm --kube-version, strata's KUBE_VERSION)")
	flag.Func("api-versions", "an API version (GROUP/VERSION or GROUP/VERSION/Kind), for both (helm --api-versions, strata's KUBE_API_VERSIONS); repeatable", func(v string) error {
		c.apiVersions = append(c.apiVersions, v)
		return nil
	})
	flag.BoolVar(&c.glob, "glob", false, "also render each chart with all its ci values files at once, as the values-files pattern ci/*.yaml (helm gets each match, in order)")
	flag.BoolVar(&c.skipCRDs, "skip-crds", false, "render without the CRDs (helm without --include-crds, strata's skip-crds)")
	flag.BoolVar(&c.skipTests, "skip-tests", false, "render without the test hooks (helm --skip-tests, strata's skip-tests)")
	only := flag.String("run", "", "sweep only the charts whose directory name matches this regular expression (all are dependencies still)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: helmparity -helm BIN [-strata BIN] [-namespace NS] [-work DIR] [-v] [-unittest] [-glob] [-skip-crds] [-skip-tests] [-run REGEXP] [-deps DIR]... CHARTDIR...\n")
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
	}
	for _, d := range append(slices.Clone(dirs), c.deps...) {
		m, err := readMeta(d)
		if err != nil {
			continue // not a chart: said so below if swept
		}
		if _, ok := c.pool[m.Name]; !ok {
			c.pool[m.Name], _ = filepath.Abs(d)
		}
	}
	counts := map[string]int{}
	total, masked := 0, 0
	for i, dir := range dirs {
		name := filepath.Base(dir)
		release := name
		if c.release != "" {
			release = c.release
		}
		if c.only != nil && !c.only.MatchString(name) {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "Chart.yaml")); err != nil {
			fmt.Printf("%-44s %-34s not a chart (no Chart.yaml)\n", name, "*")
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
		if c.glob && len(cases) > 1 {
			cases = append(cases, "ci/*.yaml")
		}
		if c.unittest {
			more, err := unitTestValues(dst)
			if err != nil {
				return err
			}
			cases = append(cases, more...)
		}
		for _, vf := range append([]string{""}, cases...) {
			res, n, detail := c.compare(release, dst, vf)
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

// readMeta reads a chart's name and dependencies: Chart.yaml's, or for
// an apiVersion v1 chart requirements.yaml's, as helm reads them.
func readMeta(dir string) (*chartMeta, error) {
	b, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return nil, err
	}
	var m chartMeta
	if err := sigsyaml.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s/Chart.yaml: %w", dir, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "requirements.yaml")); err == nil && len(m.Dependencies) == 0 {
		if err := sigsyaml.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("%s/requirements.yaml: %w", dir, err)
		}
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
	args := []string{"template", name, ".", "--namespace", c.ns}
	if !c.skipCRDs {
		args = append(args, "--include-crds")
	}
	if c.skipTests {
		args = append(args, "--skip-tests")
	}
	if c.kubeVersion != "" {
		// As Argo CD passes it: its numbers only (v1.29.3-eks-x is 1.29.3).
		v, err := k8sversion.ParseGeneric(c.kubeVersion)
		if err != nil {
			return nil, fmt.Errorf("kube version %q: Argo CD refuses it: %w", c.kubeVersion, err)
		}
		args = append(args, "--kube-version", v.String())
	}
	for _, a := range c.apiVersions {
		args = append(args, "--api-versions", a)
	}
	if strings.ContainsAny(vf, "*?[") {
		// As Argo CD expands a valueFiles pattern: each match, in order.
		matches, err := filepath.Glob(filepath.Join(dir, vf))
		if err != nil {
			return nil, err
		}
		for _, m := range matches {
			args = append(args, "-f", m)
		}
	} else if vf != "" {
		args = append(args, "-f", vf)
	}
	cmd := exec.Command(c.helm, args...)
	cmd.Env, cmd.Dir = c.helmEnv, dir
	return output(cmd)
}

func (c *config) strataGenerate(name, dir, vf, format string) ([]byte, error) {
	args := []string{"cmp", "generate", dir, "--builtin", "helm", "--repo-root", filepath.Dir(dir),
		"--app-name", name, "--namespace", c.ns, "-o", format}
	if c.skipCRDs {
		args = append(args, "--param", "skip-crds=true")
	}
	if c.skipTests {
		args = append(args, "--param", "skip-tests=true")
	}
	if c.kubeVersion != "" {
		args = append(args, "--kube-version", c.kubeVersion)
	}
	for _, a := range c.apiVersions {
		args = append(args, "--api-versions", a)
	}
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
	yd, err := argoread.Docs(yout)
	if err != nil {
		return differ, 0, fmt.Sprintf(": strata's YAML output does not read as Argo CD reads it: %v", err)
	}
	text := ""
	if !bytes.Equal(yout, hout) {
		text = " (YAML text differs)"
	}
	diffs, self := docDiffs(ours, theirs), docDiffs(yd, ours)
	if len(diffs) == 0 && len(self) == 0 {
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
	var real, realSelf []string
	for _, p := range diffs {
		if !random[p] {
			real = append(real, p)
		}
	}
	for _, p := range self {
		if !random[p] {
			realSelf = append(realSelf, p)
		}
	}
	if len(realSelf) > 0 {
		return differ, 0, fmt.Sprintf(": strata's YAML output does not read as its JSON output at %s", clip(strings.Join(realSelf, " "), 300))
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

// A helm-unittest suite, the parts that choose values.
type suite struct {
	Values []string       `json:"values"`
	Set    map[string]any `json:"set"`
	Tests  []struct {
		It     string         `json:"it"`
		Values []string       `json:"values"`
		Set    map[string]any `json:"set"`
	} `json:"tests"`
}

// unitTestValues writes one values file for each test of the chart's
// helm-unittest suites that sets values, beside the chart, and returns
// their paths relative to the chart. Identical value sets are written once.
func unitTestValues(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(filepath.Join(dir, "tests"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && strings.HasSuffix(p, "_test.yaml") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil || len(files) == 0 {
		return nil, err
	}
	out := filepath.Join(filepath.Dir(dir), "unittest")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var cases []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var s suite
		if err := sigsyaml.Unmarshal(b, &s); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for i, t := range s.Tests {
			vals := map[string]any{}
			for _, vf := range append(slices.Clone(s.Values), t.Values...) {
				vb, err := os.ReadFile(filepath.Join(filepath.Dir(f), vf))
				if err != nil {
					return nil, fmt.Errorf("%s: test %q: %w", f, t.It, err)
				}
				var v map[string]any
				if err := sigsyaml.Unmarshal(vb, &v); err != nil {
					return nil, fmt.Errorf("%s: %w", vf, err)
				}
				merge(vals, v)
			}
			for _, set := range []map[string]any{s.Set, t.Set} {
				keys := slices.Sorted(maps.Keys(set))
				for _, k := range keys {
					if err := setPath(vals, k, set[k]); err != nil {
						return nil, fmt.Errorf("%s: test %q: set %q: %w", f, t.It, k, err)
					}
				}
			}
			if len(vals) == 0 {
				continue
			}
			yb, err := sigsyaml.Marshal(vals)
			if err != nil {
				return nil, err
			}
			if seen[string(yb)] {
				continue
			}
			seen[string(yb)] = true
			suiteName, _ := filepath.Rel(filepath.Join(dir, "tests"), f)
			suiteName = strings.ReplaceAll(strings.TrimSuffix(suiteName, "_test.yaml"), string(filepath.Separator), "-")
			name := fmt.Sprintf("%s-%d.yaml", suiteName, i)
			if err := os.WriteFile(filepath.Join(out, name), yb, 0o644); err != nil {
				return nil, err
			}
			cases = append(cases, "../unittest/"+name)
		}
	}
	return cases, nil
}

// merge merges src into dst as helm merges values files: maps key by key,
// anything else replaced.
func merge(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				merge(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}

// setPath sets a helm-unittest set key (a.b, a\.b for a dot in a key,
// a[0].b) in vals; a map value is merged.
func setPath(vals map[string]any, path string, v any) error {
	var segs []string
	cur := ""
	for i := 0; i < len(path); i++ {
		switch {
		case path[i] == '\\' && i+1 < len(path) && path[i+1] == '.':
			cur += "."
			i++
		case path[i] == '.':
			segs = append(segs, cur)
			cur = ""
		default:
			cur += string(path[i])
		}
	}
	segs = append(segs, cur)
	var node any = vals
	for n, seg := range segs {
		last := n == len(segs)-1
		key, rest, _ := strings.Cut(seg, "[")
		var idx []int
		for rest != "" {
			num, after, ok := strings.Cut(rest, "]")
			k, err := strconv.Atoi(num)
			if !ok || err != nil || k < 0 || k > 1000 {
				return fmt.Errorf("bad index in %q", seg)
			}
			idx = append(idx, k)
			rest = strings.TrimPrefix(after, "[")
		}
		m, ok := node.(map[string]any)
		if !ok {
			return fmt.Errorf("%q is not a map", key)
		}
		if len(idx) == 0 {
			if last {
				if sm, ok := v.(map[string]any); ok {
					if dm, ok := m[key].(map[string]any); ok {
						merge(dm, sm)
						return nil
					}
				}
				m[key] = v
				return nil
			}
			if _, ok := m[key].(map[string]any); !ok {
				m[key] = map[string]any{}
			}
			node = m[key]
			continue
		}
		// a[i][j]...: lists grown as needed.
		parent, pkey := any(m), any(key)
		for j, k := range idx {
			var list []any
			switch p := parent.(type) {
			case map[string]any:
				list, _ = p[pkey.(string)].([]any)
			case []any:
				list, _ = p[pkey.(int)].([]any)
			}
			for len(list) <= k {
				list = append(list, nil)
			}
			switch p := parent.(type) {
			case map[string]any:
				p[pkey.(string)] = list
			case []any:
				p[pkey.(int)] = list
			}
			if j == len(idx)-1 {
				if last {
					list[k] = v
					return nil
				}
				if _, ok := list[k].(map[string]any); !ok {
					list[k] = map[string]any{}
				}
				node = list[k]
			}
			parent, pkey = list, k
		}
	}
	return nil
}
