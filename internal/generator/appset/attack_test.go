package appset_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-dev/strata/internal/generator/appset"
)

// Environment of the child process TestAttacksUnderMemoryLimit starts: the
// test binary renders the file and exits.
const (
	childFileEnv = "STRATA_APPSET_ATTACK_FILE"
	childTimeEnv = "STRATA_APPSET_ATTACK_TEMPLATE_TIME"
)

// childAddressSpace is the address-space limit of the child process: far
// below what any of the attacks would take without the budgets (1 GiB is
// too little for the Go runtime's own reservations: its collector faults
// when an mmap fails); childPeakRSS bounds what the child may use.
const childPeakRSS = 512 << 20
const childAddressSpace = 2 << 30

func TestMain(m *testing.M) {
	if path := os.Getenv(childFileEnv); path != "" {
		os.Exit(renderChild(path))
	}
	os.Exit(m.Run())
}

// renderChild renders the ApplicationSets of path with the default
// budgets, under an address-space limit, and reports the error on stderr:
// exit status 1 for a render error, 2 for a setup failure.
func renderChild(path string) int {
	if !raceEnabled {
		lim := syscall.Rlimit{Cur: childAddressSpace, Max: childAddressSpace}
		if err := syscall.Setrlimit(syscall.RLIMIT_AS, &lim); err != nil {
			fmt.Fprintln(os.Stderr, "setrlimit:", err)
			return 2
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	sets, err := appset.ParseAll(data, filepath.Base(path))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var lim appset.Limits
	if d, err := time.ParseDuration(os.Getenv(childTimeEnv)); err == nil {
		lim.TemplateTime = d
	}
	f := appset.File{Renderer: &appset.Renderer{Limits: lim}, Timeout: -1}
	if _, err := f.Render(context.Background(), sets); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestAttacksUnderMemoryLimit renders hostile templates in a child
// process limited to 2 GiB of address space (not under the race detector,
// which cannot run so limited) and checks its peak RSS, with the default
// budgets: each must fail with a clear error, not be killed or run out of
// memory.
func TestAttacksUnderMemoryLimit(t *testing.T) {
	tests := []struct {
		name, tmpl   string
		templateTime string
		want         string
	}{
		{name: "nested repeat", tmpl: `{{ repeat 1000000 (repeat 1000000 "x") }}`, want: "output too large: count 1000000 is beyond the limit"},
		{name: "range over a huge integer", tmpl: `{{ range 100000000000 }}{{ end }}`, want: "range over 100000000000 items"},
		{name: "a long empty range", tmpl: `{{ range 8000000 }}{{ end }}`, templateTime: "1s", want: "template time limit exceeded: the templates ran for more than 1s"},
		{name: "doubling a string", tmpl: `{{ $x := "xx" }}{{ range 40 }}{{ $x = printf "%s%s" $x $x }}{{ end }}{{ len $x }}`, want: "holds more than 16777216 bytes"},
		{name: "doubling a list", tmpl: `{{ $l := list "xxxxxxxx" }}{{ range 64 }}{{ $l = concat $l $l }}{{ end }}{{ len $l }}`, want: "holds more than 16777216 bytes"},
		{name: "doubling a dict", tmpl: `{{ $d := dict "a" "b" }}{{ range 64 }}{{ $d = dict "l" $d "r" $d }}{{ end }}{{ toJson $d | len }}`, want: "holds more than 16777216 bytes"},
		{name: "a dict holding itself", tmpl: `{{ $d := dict }}{{ $_ := set $d "self" $d }}{{ toJson $d }}`, want: "does a dict or list hold itself?"},
		{name: "tpl recursion", tmpl: `{{ tpl "{{ tpl . . }}" "{{ tpl . . }}" }}`, want: `function "tpl" not defined`},
	}
	dir := t.TempDir()
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprintf("attack-%d.yaml", i))
			doc := "apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: attack, namespace: argocd}\nspec:\n  goTemplate: true\n" +
				"  generators:\n  - list:\n      elements: [{cluster: dev}]\n  template:\n    metadata:\n      name: '{{ .cluster }}'\n" +
				"      annotations:\n        attack: " + quote(tc.tmpl) + "\n    spec: {project: default}\n"
			if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childFileEnv+"="+path, childTimeEnv+"="+tc.templateTime)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("child: %v, want exit status 1; stderr:\n%s", err, clip(stderr.String()))
			}
			if !strings.Contains(stderr.String(), tc.want) || strings.Contains(stderr.String(), "fatal error") {
				t.Errorf("child's error:\n%s\nwant it to contain %q", clip(stderr.String()), tc.want)
			}
			peak := int64(childPeakRSS)
			if raceEnabled {
				peak *= 6 // the race detector's shadow memory
			}
			if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
				t.Logf("child's peak RSS: %d MiB", ru.Maxrss>>10)
				if ru.Maxrss<<10 > peak {
					t.Errorf("child's peak RSS is %d MiB, beyond %d MiB", ru.Maxrss>>10, peak>>20)
				}
			}
		})
	}
}

func clip(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "..."
	}
	return s
}
