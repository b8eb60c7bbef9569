// Package memlimit finds the memory limit a server runs under and sets the
// Go runtime's soft memory limit from it.
//
// The limit is read, in order, from the environment variable
// STRATA_MEMORY_LIMIT (bytes, as the Kubernetes downward API gives a
// container's limits.memory), from the process's cgroup (v2 memory.max,
// v1 memory.limit_in_bytes, the smallest along the path to the root), or
// is none. Unless GOMEMLIMIT is set, the Go soft memory limit becomes
// GoFraction of it: the collector works harder as the heap nears it, and
// the rest is room for what the Go limit does not count (memory the
// kernel holds for the process, other processes in the container, the
// collector's lag). A server derives its per-request budgets from
// Limit.Budget, the Go limit less what the server itself holds, and
// bounds the memory its requests hold at once with a Budget (budget.go),
// which the sidecar and the generator server share.
package memlimit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// Env names the variable that gives the container's memory limit in
// bytes; the deploy manifests set it with the downward API
// (resourceFieldRef limits.memory).
const Env = "STRATA_MEMORY_LIMIT"

// GoFraction is the share of the memory limit the Go soft memory limit is
// set to when GOMEMLIMIT is not set.
const GoFraction = 0.85

// unlimited is the least value a cgroup v1 reports for "no limit" (the
// largest page-aligned int64; kernels print 9223372036854771712).
const unlimited = 1 << 62

// A Limit is the memory limit found and the Go memory limit derived from
// it.
type Limit struct {
	// Bytes is the memory limit; 0 when none was found.
	Bytes int64
	// Source says where Bytes came from: Env, a cgroup file, or "" for none.
	Source string
	// Go is the Go soft memory limit: GoFraction of Bytes, or GOMEMLIMIT
	// when that is set (GoSource "GOMEMLIMIT"); 0 for none.
	Go       int64
	GoSource string
}

// A Detector finds the memory limit. Its zero value reads this process's
// environment and cgroup.
type Detector struct {
	// Environ is the environment (NAME=value entries); nil is os.Environ().
	Environ []string
	// Root is where the file system is for the cgroup files; "" is "/".
	Root string
}

// Detect finds the memory limit and computes the Go memory limit, without
// setting it. An error says that STRATA_MEMORY_LIMIT or GOMEMLIMIT is
// not a size.
func (d Detector) Detect() (Limit, error) {
	env := d.Environ
	if env == nil {
		env = os.Environ()
	}
	var l Limit
	if v, ok := lookup(env, Env); ok && v != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n <= 0 {
			return Limit{}, fmt.Errorf("%s=%q: set it to the container's memory limit in bytes (the downward API's resourceFieldRef limits.memory), or leave it unset to read the cgroup's", Env, v)
		}
		l.Bytes, l.Source = n, Env
	} else {
		l.Bytes, l.Source = d.cgroup()
	}
	if v, ok := lookup(env, "GOMEMLIMIT"); ok && v != "" {
		n, err := parseGoLimit(v)
		if err != nil {
			return Limit{}, fmt.Errorf("GOMEMLIMIT=%q: %w", v, err)
		}
		if n < math.MaxInt64 {
			l.Go, l.GoSource = n, "GOMEMLIMIT"
		}
		return l, nil
	}
	if l.Bytes > 0 {
		l.Go, l.GoSource = int64(float64(l.Bytes)*GoFraction), fmt.Sprintf("%d%% of %s", int(GoFraction*100), l.Source)
	}
	return l, nil
}

// Apply sets the Go soft memory limit to l.Go when it was derived from the
// limit (GOMEMLIMIT is applied by the runtime itself).
func (l Limit) Apply() {
	if l.Go > 0 && l.GoSource != "GOMEMLIMIT" {
		debug.SetMemoryLimit(l.Go)
	}
}

// Budget is what the requests of a server may use together: the Go
// memory limit less reserve, what the server holds besides them (its
// runtime, connections, caches), and never less than a quarter of the Go
// limit. It is 0 when there is no limit.
func (l Limit) Budget(reserve int64) int64 {
	if l.Go <= 0 {
		return 0
	}
	return max(l.Go-reserve, l.Go/4)
}

// LogAttrs are the attributes a server logs the limit with at start.
func (l Limit) LogAttrs() []any {
	if l.Bytes == 0 && l.Go == 0 {
		return []any{"memoryLimit", "none", "goMemoryLimit", "none"}
	}
	a := []any{}
	if l.Bytes > 0 {
		a = append(a, "memoryLimit", l.Bytes, "memoryLimitFrom", l.Source)
	} else {
		a = append(a, "memoryLimit", "none")
	}
	if l.Go > 0 {
		a = append(a, "goMemoryLimit", l.Go, "goMemoryLimitFrom", l.GoSource)
	}
	return a
}

// Setup detects the limit, applies it and logs it with the server's
// budgets (attrs, key/value pairs); the servers call it at start.
func Setup(log *slog.Logger, server string, budgets func(Limit) []any) (Limit, error) {
	l, err := Detector{}.Detect()
	if err != nil {
		return Limit{}, err
	}
	l.Apply()
	attrs := append([]any{"server", server}, l.LogAttrs()...)
	if budgets != nil {
		attrs = append(attrs, budgets(l)...)
	}
	log.Info("memory limit", attrs...)
	return l, nil
}

func lookup(env []string, name string) (string, bool) {
	v, found := "", false
	for _, kv := range env {
		if s, ok := strings.CutPrefix(kv, name+"="); ok {
			v, found = s, true
		}
	}
	return v, found
}

// parseGoLimit reads GOMEMLIMIT as the runtime does: a number of bytes
// with an optional B, KiB, MiB, GiB or TiB suffix, or "off".
func parseGoLimit(s string) (int64, error) {
	if s == "off" {
		return math.MaxInt64, nil
	}
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}} {
		if t, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = t, u.m
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, errors.New("not a size the Go runtime reads: a number of bytes with an optional KiB, MiB, GiB or TiB suffix, or off")
	}
	return n * mult, nil
}

// cgroup returns the smallest memory limit on the path of this process's
// cgroup to the root, and the file it is in.
func (d Detector) cgroup() (int64, string) {
	root := d.Root
	if root == "" {
		root = "/"
	}
	data, err := os.ReadFile(filepath.Join(root, "proc/self/cgroup"))
	if err != nil {
		return 0, ""
	}
	best, from := int64(0), ""
	consider := func(file string) {
		n, ok := readLimit(filepath.Join(root, file))
		if ok && (best == 0 || n < best) {
			best, from = n, file
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		var dir, file string
		switch {
		case parts[0] == "0" && parts[1] == "":
			dir, file = "sys/fs/cgroup", "memory.max"
		case hasController(parts[1], "memory"):
			dir, file = "sys/fs/cgroup/memory", "memory.limit_in_bytes"
		default:
			continue
		}
		// The path as the process's cgroup namespace shows it, and, for
		// a container whose own cgroup is mounted at the root without a
		// namespace, the root itself.
		for p := filepath.Clean("/" + parts[2]); ; p = filepath.Dir(p) {
			consider(filepath.Join(dir, p, file))
			if p == "/" {
				break
			}
		}
	}
	if best == 0 {
		return 0, ""
	}
	return best, "/" + from
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// readLimit reads a cgroup memory limit file: a number of bytes, or "max"
// (v2) or a huge number (v1) for none.
func readLimit(path string) (int64, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	s := strings.TrimSpace(string(data))
	if s == "max" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n >= unlimited {
		return 0, false
	}
	return n, true
}
