// Package stamp is the running binary's build stamp: the release version,
// the commit and its time, whether the tree was modified, and the Go
// version. Release builds set the first four with the linker
// (-X github.com/strata-dev/strata/internal/stamp.version=v1.2.3, and
// commit, date, dirty); a plain `go build` or `go install` gets them from
// the build information the go command records (vcs.revision, vcs.time,
// vcs.modified, the main module's version). `strata version` prints it,
// every server logs it when it starts and exports it as strata_build_info.
package stamp

import (
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Set by the linker in release builds (see the Makefile and hack/image).
var (
	version string // the release version, v1.2.3 or v1.3.0-dev
	commit  string // the full commit hash
	date    string // the commit time, RFC 3339
	dirty   string // "true" when the tree had uncommitted changes
)

// Info describes a build.
type Info struct {
	// Version is the release version: the linker's, else the main module's
	// version as the go command stamped it, else "devel".
	Version string `json:"version"`
	// Commit is the full commit hash, empty when unknown.
	Commit string `json:"commit,omitempty"`
	// Date is the commit's time (not the build's), RFC 3339 in UTC, empty
	// when unknown.
	Date string `json:"date,omitempty"`
	// Dirty reports whether the tree had uncommitted changes.
	Dirty bool `json:"dirty"`
	// GoVersion is the Go toolchain that built the binary.
	GoVersion string `json:"goVersion"`
	// Platform is GOOS/GOARCH.
	Platform string `json:"platform"`
}

// Linked holds what the linker set; an empty field is not set.
type Linked struct {
	Version, Commit, Date, Dirty string
}

// Get returns the running binary's build stamp.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return Resolve(bi, Linked{Version: version, Commit: commit, Date: date, Dirty: dirty})
}

// Resolve joins the linker's values with the go command's build
// information bi (nil when the binary has none): a linker value wins.
func Resolve(bi *debug.BuildInfo, l Linked) Info {
	info := Info{GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	var modified string
	if bi != nil {
		if bi.GoVersion != "" {
			info.GoVersion = bi.GoVersion
		}
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			info.Version = v
		}
		var goos, goarch string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Commit = s.Value
			case "vcs.time":
				info.Date = s.Value
			case "vcs.modified":
				modified = s.Value
			case "GOOS":
				goos = s.Value
			case "GOARCH":
				goarch = s.Value
			}
		}
		if goos != "" && goarch != "" {
			info.Platform = goos + "/" + goarch
		}
	}
	if l.Version != "" {
		info.Version = l.Version
	}
	if l.Commit != "" {
		info.Commit = l.Commit
	}
	if l.Date != "" {
		info.Date = l.Date
	}
	if l.Dirty != "" {
		modified = l.Dirty
	}
	if info.Date != "" {
		if t, err := time.Parse(time.RFC3339, info.Date); err == nil {
			info.Date = t.UTC().Format(time.RFC3339)
		}
	}
	info.Dirty, _ = strconv.ParseBool(modified)
	if info.Version == "" {
		info.Version = "devel"
	}
	return info
}

// String is the one-line form `strata version` prints:
// "strata v1.2.3 (commit 0123456789ab, 2026-11-27T10:00:00Z, go1.26.8, linux/amd64)".
func (i Info) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "strata %s (", i.Version)
	if i.Commit != "" {
		c := i.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		fmt.Fprintf(&b, "commit %s", c)
		if i.Dirty {
			b.WriteString("-dirty")
		}
		b.WriteString(", ")
	}
	if i.Date != "" {
		fmt.Fprintf(&b, "%s, ", i.Date)
	}
	fmt.Fprintf(&b, "%s, %s)", i.GoVersion, i.Platform)
	return b.String()
}

// Attr is the stamp as one log attribute, build={version,commit,...}.
func (i Info) Attr() slog.Attr {
	return slog.Group("build", "version", i.Version, "commit", i.Commit, "date", i.Date,
		"dirty", i.Dirty, "goVersion", i.GoVersion, "platform", i.Platform)
}

// Collector returns the gauge strata_build_info, always 1, labelled with
// the stamp (version, commit, date, dirty, goversion, platform), for a
// server's metrics registry. Every call returns an equal collector, so
// registering it twice on one registry is an AlreadyRegisteredError.
func (i Info) Collector() prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "strata_build_info",
		Help: "Always 1; the labels say which strata build runs: version, commit, date (the commit's time), dirty, goversion, platform.",
		ConstLabels: prometheus.Labels{
			"version":   i.Version,
			"commit":    i.Commit,
			"date":      i.Date,
			"dirty":     strconv.FormatBool(i.Dirty),
			"goversion": i.GoVersion,
			"platform":  i.Platform,
		},
	})
	g.Set(1)
	return g
}
