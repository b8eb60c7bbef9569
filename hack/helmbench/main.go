// Command helmbench times strata's local CLI against the helm CLI on real
// charts, in the same run: `strata cmp generate DIR --builtin helm` beside
// `helm template NAME DIR --include-crds` (what a user compares on a
// laptop), and `strata cmp parameters DIR --builtin helm` beside the
// `yq e -o=p values.yaml | jq` announcement pipeline when the Go yq and jq
// are on PATH. Each round runs every command once per chart, in an order
// that rotates from round to round, each a fresh process; it prints the
// medians of the wall-clock and CPU (user+system) times and the ratios.
//
//	go run ./hack/helmbench [-n 10] [-strata bin/strata] [-baseline OLDBIN] [-helm PATH] [-compare] CHARTDIR...
//
// With -compare it also renders each chart once with both and compares
// the documents as Argo CD reads helm's output (one line break dropped from
// its end, split by Kubernetes' YAML reader, empty documents dropped, Lists
// unpacked), printing every difference, and strata's YAML output with
// helm's output line by line. With -baseline it also times an earlier
// strata binary, interleaved. `make bench-helm-cli CHARTS="..."`
// runs it (docs/benchmarks.md).
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/strata-dev/strata/hack/internal/argoread"
)

// The announcement pipeline of Argo CD's CMP proposal (as in
// internal/helmplugin's BenchmarkYqJqAnnounce5000).
const yqJQ = `
  [{
    name: "helm-parameters",
    title: "Helm Parameters",
    collectionType: "map",
    map: split("\n") | map(capture("(?<key>.*) = (?<value>.*)")) | from_entries
  }]`

type sample struct{ wall, cpu time.Duration }

type command struct {
	name string
	run  func(dir string) (sample, error)
}

func main() {
	rounds := flag.Int("n", 10, "rounds")
	strata := flag.String("strata", "bin/strata", "the strata binary")
	helm := flag.String("helm", "", "the helm binary (hack/testbin/build.sh helm prints it)")
	compare := flag.Bool("compare", false, "also compare strata's documents with helm template's")
	baseline := flag.String("baseline", "", "another strata binary (an earlier build) to time beside -strata, interleaved")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: helmbench [-n N] [-strata BIN] -helm BIN [-compare] CHARTDIR...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 || *helm == "" || *rounds < 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*strata, *baseline, *helm, *rounds, *compare, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "helmbench:", err)
		os.Exit(1)
	}
}

func run(strata, baseline, helm string, rounds int, compare bool, dirs []string) error {
	home, err := os.MkdirTemp("", "helmbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	// helm with a private HOME: no user configuration or plugin is read.
	helmEnv := []string{"HOME=" + home, "PATH=/usr/bin:/bin", "HELM_CACHE_HOME=" + home + "/cache",
		"HELM_CONFIG_HOME=" + home + "/config", "HELM_DATA_HOME=" + home + "/data", "KUBECONFIG=" + home + "/kubeconfig"}
	cmds := []command{
		{"strata cmp generate", func(dir string) (sample, error) {
			return timed(nil, "", strata, "cmp", "generate", dir, "--builtin", "helm")
		}},
		{"helm template", func(dir string) (sample, error) {
			return timed(helmEnv, "", helm, "template", filepath.Base(dir), dir, "--include-crds")
		}},
		{"strata cmp parameters", func(dir string) (sample, error) {
			return timed(nil, "", strata, "cmp", "parameters", dir, "--builtin", "helm")
		}},
	}
	if baseline != "" {
		cmds = append(cmds,
			command{"baseline cmp generate", func(dir string) (sample, error) {
				return timed(nil, "", baseline, "cmp", "generate", dir, "--builtin", "helm")
			}},
			command{"baseline cmp parameters", func(dir string) (sample, error) {
				return timed(nil, "", baseline, "cmp", "parameters", dir, "--builtin", "helm")
			}})
	}
	yq, jq := goYQ(), ""
	if p, err := exec.LookPath("jq"); err == nil {
		jq = p
	}
	if yq != "" && jq != "" {
		cmds = append(cmds, command{"yq | jq", func(dir string) (sample, error) { return pipeline(yq, jq, dir) }})
	} else {
		fmt.Println("# the Go yq (mikefarah) or jq is not on PATH: no yq | jq column")
	}
	for i, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return err
		}
		dirs[i] = abs
	}
	if compare {
		for _, dir := range dirs {
			if err := compareDocs(strata, helm, helmEnv, dir); err != nil {
				return err
			}
		}
	}
	results := map[string][]sample{}
	for r := range rounds {
		for i, dir := range dirs {
			for k := range cmds {
				c := cmds[(k+r+i)%len(cmds)]
				s, err := c.run(dir)
				if err != nil {
					return fmt.Errorf("%s %s: %w", c.name, dir, err)
				}
				results[dir+"\x00"+c.name] = append(results[dir+"\x00"+c.name], s)
			}
		}
	}
	fmt.Printf("# %d rounds, each command a fresh process; medians\n", rounds)
	fmt.Printf("%-28s %-24s %10s %10s\n", "chart", "command", "wall", "cpu")
	for _, dir := range dirs {
		med := map[string]sample{}
		for _, c := range cmds {
			med[c.name] = median(results[dir+"\x00"+c.name])
			fmt.Printf("%-28s %-24s %10s %10s\n", filepath.Base(dir), c.name, round(med[c.name].wall), round(med[c.name].cpu))
		}
		ratio := func(peer, ours string) {
			p, o := med[peer], med[ours]
			if o.wall > 0 && o.cpu > 0 && p.wall > 0 {
				fmt.Printf("%-28s %-24s %9.2fx %9.2fx  (%s / %s)\n", filepath.Base(dir), "speedup", float64(p.wall)/float64(o.wall), float64(p.cpu)/float64(o.cpu), peer, ours)
			}
		}
		ratio("helm template", "strata cmp generate")
		if baseline != "" {
			ratio("helm template", "baseline cmp generate")
			ratio("baseline cmp generate", "strata cmp generate")
		}
		if _, ok := med["yq | jq"]; ok {
			ratio("yq | jq", "strata cmp parameters")
		}
	}
	return nil
}

// timed runs a command to completion, its output discarded, and returns
// its wall-clock and CPU time.
func timed(env []string, dir, name string, args ...string) (sample, error) {
	cmd := exec.Command(name, args...)
	cmd.Env, cmd.Dir = env, dir
	cmd.Stdout = io.Discard
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return sample{}, fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return sample{wall, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}, nil
}

// pipeline runs `yq e -o=p values.yaml | jq --slurp --raw-input PROGRAM`
// in dir: two processes joined by a pipe, no shell.
func pipeline(yq, jq, dir string) (sample, error) {
	y := exec.Command(yq, "e", "-o=p", "values.yaml")
	j := exec.Command(jq, "--slurp", "--raw-input", yqJQ)
	y.Dir, j.Dir = dir, dir
	r, w, err := os.Pipe()
	if err != nil {
		return sample{}, err
	}
	y.Stdout, j.Stdin, j.Stdout = w, r, io.Discard
	start := time.Now()
	if err := y.Start(); err != nil {
		return sample{}, err
	}
	if err := j.Start(); err != nil {
		return sample{}, err
	}
	w.Close()
	r.Close()
	yerr, jerr := y.Wait(), j.Wait()
	wall := time.Since(start)
	if err := errors.Join(yerr, jerr); err != nil {
		return sample{}, err
	}
	cpu := y.ProcessState.UserTime() + y.ProcessState.SystemTime() + j.ProcessState.UserTime() + j.ProcessState.SystemTime()
	return sample{wall, cpu}, nil
}

// goYQ finds the Go yq (github.com/mikefarah/yq/v4); Debian's yq is
// another program.
func goYQ() string {
	yq, err := exec.LookPath("yq")
	if err != nil {
		return ""
	}
	if out, _ := exec.Command(yq, "--version").Output(); strings.Contains(string(out), "mikefarah") {
		return yq
	}
	return ""
}

func median(s []sample) sample {
	walls := make([]time.Duration, len(s))
	cpus := make([]time.Duration, len(s))
	for i, x := range s {
		walls[i], cpus[i] = x.wall, x.cpu
	}
	slices.Sort(walls)
	slices.Sort(cpus)
	return sample{walls[len(walls)/2], cpus[len(cpus)/2]}
}

func round(d time.Duration) string { return d.Round(time.Millisecond).String() }

// compareDocs renders dir with both and prints where the documents differ.
func compareDocs(strata, helm string, helmEnv []string, dir string) error {
	out, err := exec.Command(strata, "cmp", "generate", dir, "--builtin", "helm", "-o", "json").Output()
	if err != nil {
		return fmt.Errorf("strata cmp generate %s: %w", dir, stderrOf(err))
	}
	ours, err := argoread.JSONList(out)
	if err != nil {
		return err
	}
	cmd := exec.Command(helm, "template", filepath.Base(dir), dir, "--include-crds")
	cmd.Env = helmEnv
	hout, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("helm template %s: %w", dir, stderrOf(err))
	}
	theirs, err := argoread.Docs(hout)
	if err != nil {
		return err
	}
	diffs := 0
	for i := range max(len(ours), len(theirs)) {
		var o, t string
		if i < len(ours) {
			o = ours[i]
		}
		if i < len(theirs) {
			t = theirs[i]
		}
		if o != t {
			diffs++
			fmt.Printf("# %s: document %d differs:\n#   helm:   %s\n#   strata: %s\n", filepath.Base(dir), i, clip(t, firstDiff(o, t)), clip(o, firstDiff(o, t)))
		}
	}
	fmt.Printf("# %s: %d documents from strata, %d from helm, %d differ\n", filepath.Base(dir), len(ours), len(theirs), diffs)
	// strata's YAML output is helm template's own text: count the lines
	// that differ (what differs at every render, such as randAlphaNum).
	text, err := exec.Command(strata, "cmp", "generate", dir, "--builtin", "helm").Output()
	if err != nil {
		return fmt.Errorf("strata cmp generate %s: %w", dir, stderrOf(err))
	}
	a, b := strings.Split(string(text), "\n"), strings.Split(string(hout), "\n")
	differ := 0
	for i := range max(len(a), len(b)) {
		if i >= len(a) || i >= len(b) || a[i] != b[i] {
			differ++
		}
	}
	fmt.Printf("# %s: YAML output %d bytes, helm's %d bytes, %d of %d lines differ\n", filepath.Base(dir), len(text), len(hout), differ, len(b))
	return nil
}

func firstDiff(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// clip shows s around offset i.
func clip(s string, i int) string {
	from, to := max(0, i-60), min(len(s), i+60)
	return s[from:to]
}

func stderrOf(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
	}
	return err
}
