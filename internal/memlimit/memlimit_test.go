package memlimit_test

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/memlimit"
)

// fsTree writes files under a new directory and returns it.
func fsTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, data := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestDetect(t *testing.T) {
	const gi = 1 << 30
	v2 := map[string]string{
		"proc/self/cgroup":                          "0::/kubepods/pod1/c1\n",
		"sys/fs/cgroup/kubepods/pod1/c1/memory.max": "1073741824\n",
		"sys/fs/cgroup/kubepods/pod1/memory.max":    "2147483648\n",
		"sys/fs/cgroup/kubepods/memory.max":         "max\n",
	}
	v2ns := map[string]string{ // a cgroup namespace: the container is the root
		"proc/self/cgroup":         "0::/\n",
		"sys/fs/cgroup/memory.max": "2684354560\n",
	}
	v2parent := map[string]string{ // the pod's limit is the smaller
		"proc/self/cgroup":                          "0::/kubepods/pod1/c1\n",
		"sys/fs/cgroup/kubepods/pod1/c1/memory.max": "max\n",
		"sys/fs/cgroup/kubepods/pod1/memory.max":    "536870912\n",
	}
	v1 := map[string]string{
		"proc/self/cgroup": "12:pids:/\n4:memory:/docker/abc\n1:cpu,cpuacct:/\n",
		"sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": "536870912\n",
		"sys/fs/cgroup/memory/memory.limit_in_bytes":            "9223372036854771712\n",
	}
	v1none := map[string]string{
		"proc/self/cgroup":                           "4:memory:/\n",
		"sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n",
	}
	tests := []struct {
		name    string
		env     []string
		files   map[string]string
		want    memlimit.Limit
		wantErr bool
	}{
		{name: "none", files: map[string]string{"proc/self/cgroup": "0::/\n"}, want: memlimit.Limit{}},
		{name: "no cgroup file", want: memlimit.Limit{}},
		{name: "env", env: []string{"STRATA_MEMORY_LIMIT=1073741824"}, files: v2,
			want: memlimit.Limit{Bytes: gi, Source: "STRATA_MEMORY_LIMIT", Go: frac(gi), GoSource: "85% of STRATA_MEMORY_LIMIT"}},
		{name: "empty env reads the cgroup", env: []string{"STRATA_MEMORY_LIMIT="}, files: v2ns,
			want: memlimit.Limit{Bytes: 2560 << 20, Source: "/sys/fs/cgroup/memory.max", Go: frac(2560 << 20), GoSource: "85% of /sys/fs/cgroup/memory.max"}},
		{name: "cgroup v2", files: v2,
			want: memlimit.Limit{Bytes: gi, Source: "/sys/fs/cgroup/kubepods/pod1/c1/memory.max", Go: frac(gi), GoSource: "85% of /sys/fs/cgroup/kubepods/pod1/c1/memory.max"}},
		{name: "cgroup v2 parent", files: v2parent,
			want: memlimit.Limit{Bytes: 512 << 20, Source: "/sys/fs/cgroup/kubepods/pod1/memory.max", Go: frac(512 << 20), GoSource: "85% of /sys/fs/cgroup/kubepods/pod1/memory.max"}},
		{name: "cgroup v1", files: v1,
			want: memlimit.Limit{Bytes: 512 << 20, Source: "/sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes", Go: frac(512 << 20), GoSource: "85% of /sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes"}},
		{name: "cgroup v1 unlimited", files: v1none, want: memlimit.Limit{}},
		{name: "GOMEMLIMIT wins", env: []string{"STRATA_MEMORY_LIMIT=1073741824", "GOMEMLIMIT=700MiB"},
			want: memlimit.Limit{Bytes: gi, Source: "STRATA_MEMORY_LIMIT", Go: 700 << 20, GoSource: "GOMEMLIMIT"}},
		{name: "GOMEMLIMIT without a limit", env: []string{"GOMEMLIMIT=123456"},
			want: memlimit.Limit{Go: 123456, GoSource: "GOMEMLIMIT"}},
		{name: "GOMEMLIMIT off", env: []string{"STRATA_MEMORY_LIMIT=1000", "GOMEMLIMIT=off"},
			want: memlimit.Limit{Bytes: 1000, Source: "STRATA_MEMORY_LIMIT"}},
		{name: "bad env", env: []string{"STRATA_MEMORY_LIMIT=1Gi"}, wantErr: true},
		{name: "negative env", env: []string{"STRATA_MEMORY_LIMIT=-1"}, wantErr: true},
		{name: "bad GOMEMLIMIT", env: []string{"GOMEMLIMIT=1G"}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := tc.env
			if env == nil {
				env = []string{}
			}
			got, err := memlimit.Detector{Environ: env, Root: fsTree(t, tc.files)}.Detect()
			if (err != nil) != tc.wantErr {
				t.Fatalf("Detect() error = %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Detect() (-want +got):\n%s", diff)
			}
		})
	}
}

// frac is the Go limit Detect derives from a limit of n bytes.
func frac(n int64) int64 { return int64(float64(n) * memlimit.GoFraction) }

func TestBudget(t *testing.T) {
	tests := []struct {
		goLimit, reserve, want int64
	}{
		{0, 100, 0},
		{1000, 100, 900},
		{1000, 900, 250}, // never under a quarter
		{math.MaxInt32, 0, math.MaxInt32},
	}
	for _, tc := range tests {
		if got := (memlimit.Limit{Go: tc.goLimit}).Budget(tc.reserve); got != tc.want {
			t.Errorf("Limit{Go: %d}.Budget(%d) = %d, want %d", tc.goLimit, tc.reserve, got, tc.want)
		}
	}
}
