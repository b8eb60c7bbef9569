package stamp_test

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/strata-dev/strata/internal/stamp"
)

func vcs(rev, tm, modified string) *debug.BuildInfo {
	return &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/strata-dev/strata", Version: "(devel)"},
		Settings: []debug.BuildSetting{
			{Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "arm64"},
			{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev},
			{Key: "vcs.time", Value: tm}, {Key: "vcs.modified", Value: modified},
		},
	}
}

func TestResolve(t *testing.T) {
	const rev = "0123456789abcdef0123456789abcdef01234567"
	tests := []struct {
		name   string
		bi     *debug.BuildInfo
		linked stamp.Linked
		want   stamp.Info
	}{
		{
			name: "no build info",
			want: stamp.Info{Version: "devel", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH},
		},
		{
			name: "go build in a clean checkout",
			bi:   vcs(rev, "2026-11-27T10:00:00Z", "false"),
			want: stamp.Info{Version: "devel", Commit: rev, Date: "2026-11-27T10:00:00Z", GoVersion: "go1.26.8", Platform: "linux/arm64"},
		},
		{
			name: "go build in a modified checkout, a time with an offset",
			bi:   vcs(rev, "2026-11-27T12:00:00+02:00", "true"),
			want: stamp.Info{Version: "devel", Commit: rev, Date: "2026-11-27T10:00:00Z", Dirty: true, GoVersion: "go1.26.8", Platform: "linux/arm64"},
		},
		{
			name: "go install at a tag",
			bi: &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"},
				Settings: []debug.BuildSetting{{Key: "GOOS", Value: "darwin"}, {Key: "GOARCH", Value: "amd64"}}},
			want: stamp.Info{Version: "v1.2.3", GoVersion: "go1.26.8", Platform: "darwin/amd64"},
		},
		{
			name:   "the linker's values win",
			bi:     vcs(rev, "2026-11-27T10:00:00Z", "true"),
			linked: stamp.Linked{Version: "v0.1.0-dev", Commit: "fedcba", Date: "2026-01-02T03:04:05Z", Dirty: "false"},
			want:   stamp.Info{Version: "v0.1.0-dev", Commit: "fedcba", Date: "2026-01-02T03:04:05Z", GoVersion: "go1.26.8", Platform: "linux/arm64"},
		},
		{
			name:   "linker only (release build, -buildvcs=false)",
			bi:     &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
			linked: stamp.Linked{Version: "v1.0.0", Commit: rev, Date: "2026-11-27T10:00:00Z", Dirty: "true"},
			want:   stamp.Info{Version: "v1.0.0", Commit: rev, Date: "2026-11-27T10:00:00Z", Dirty: true, GoVersion: "go1.26.8", Platform: runtime.GOOS + "/" + runtime.GOARCH},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := stamp.Resolve(tc.bi, tc.linked)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Resolve() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestString(t *testing.T) {
	tests := []struct {
		info stamp.Info
		want string
	}{
		{stamp.Info{Version: "devel", GoVersion: "go1.26.8", Platform: "linux/amd64"}, "strata devel (go1.26.8, linux/amd64)"},
		{stamp.Info{Version: "v1.2.3", Commit: "0123456789abcdef", Date: "2026-11-27T10:00:00Z", GoVersion: "go1.26.8", Platform: "linux/amd64"},
			"strata v1.2.3 (commit 0123456789ab, 2026-11-27T10:00:00Z, go1.26.8, linux/amd64)"},
		{stamp.Info{Version: "v1.3.0-dev", Commit: "0123456789abcdef", Dirty: true, GoVersion: "go1.26.8", Platform: "darwin/arm64"},
			"strata v1.3.0-dev (commit 0123456789ab-dirty, go1.26.8, darwin/arm64)"},
	}
	for _, tc := range tests {
		if got := tc.info.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.info, got, tc.want)
		}
	}
}

func TestCollector(t *testing.T) {
	info := stamp.Info{Version: "v1.2.3", Commit: "abc", Date: "2026-11-27T10:00:00Z", Dirty: true, GoVersion: "go1.26.8", Platform: "linux/amd64"}
	reg := prometheus.NewRegistry()
	reg.MustRegister(info.Collector())
	want := `
# HELP strata_build_info Always 1; the labels say which strata build runs: version, commit, date (the commit's time), dirty, goversion, platform.
# TYPE strata_build_info gauge
strata_build_info{commit="abc",date="2026-11-27T10:00:00Z",dirty="true",goversion="go1.26.8",platform="linux/amd64",version="v1.2.3"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "strata_build_info"); err != nil {
		t.Error(err)
	}
	if err := reg.Register(info.Collector()); err == nil {
		t.Error("registering the build info twice succeeded; want an AlreadyRegisteredError so servers sharing a registry keep one")
	}
}
