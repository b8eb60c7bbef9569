// Package release holds what `make image` (hack/image) and `make dist`
// (hack/dist) share: the description of the commit being built (version,
// commit, its time, dirty), the reproducible build of strata's binary for
// a platform, and deterministic tar writing.
package release

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// StampPackage is the package whose variables the linker sets.
const StampPackage = "github.com/strata-dev/strata/internal/stamp"

// SourceURL is the repository strata is built from (the image label
// org.opencontainers.image.source).
const SourceURL = "https://github.com/strata-dev/strata"

// Source describes the tree being built.
type Source struct {
	// Version is the release version: the tag on HEAD (vX.Y.Z), else
	// v<VERSION file>-dev.
	Version string
	// Commit is HEAD's full hash.
	Commit string
	// Time is HEAD's commit time, or $SOURCE_DATE_EPOCH when set: the
	// time stamped into the binary, the image and every archive entry.
	Time time.Time
	// Dirty is true when tracked files have uncommitted changes.
	Dirty bool
}

// ReadVersionFile reads the VERSION file at the root of dir: one line, a
// semantic version without the leading v (0.1.0).
func ReadVersionFile(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "VERSION"))
	if err != nil {
		return "", fmt.Errorf("reading the release version: %w", err)
	}
	v := strings.TrimSpace(string(b))
	if !validVersion(v) {
		return "", fmt.Errorf("%s: %q is not a version MAJOR.MINOR.PATCH (without a leading v)", filepath.Join(dir, "VERSION"), v)
	}
	return v, nil
}

func validVersion(v string) bool {
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return false
	}
	for _, p := range parts {
		if _, err := strconv.ParseUint(p, 10, 32); err != nil || (len(p) > 1 && p[0] == '0') {
			return false
		}
	}
	return true
}

// Describe describes the git checkout at dir. A tag vX.Y.Z on HEAD must
// match the VERSION file (the release procedure bumps VERSION, then tags).
func Describe(ctx context.Context, dir string) (Source, error) {
	var s Source
	file, err := ReadVersionFile(dir)
	if err != nil {
		return s, err
	}
	if s.Commit, err = git(ctx, dir, "rev-parse", "HEAD"); err != nil {
		return s, err
	}
	ct, err := git(ctx, dir, "log", "-1", "--format=%ct", "HEAD")
	if err != nil {
		return s, err
	}
	if s.Time, err = epoch(ct); err != nil {
		return s, fmt.Errorf("commit time %q: %w", ct, err)
	}
	if env := os.Getenv("SOURCE_DATE_EPOCH"); env != "" {
		if s.Time, err = epoch(env); err != nil {
			return s, fmt.Errorf("SOURCE_DATE_EPOCH=%q: %w; set it to seconds since 1970 or unset it", env, err)
		}
	}
	status, err := git(ctx, dir, "status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return s, err
	}
	s.Dirty = status != ""
	s.Version = "v" + file + "-dev"
	tags, err := git(ctx, dir, "tag", "--points-at", "HEAD", "--list", "v[0-9]*")
	if err != nil {
		return s, err
	}
	for _, tag := range strings.Fields(tags) {
		if tag == "v"+file {
			s.Version = tag
		} else {
			return s, fmt.Errorf("HEAD is tagged %s but VERSION says %s: set VERSION to %s in the tagged commit (docs/release.md)", tag, file, strings.TrimPrefix(tag, "v"))
		}
	}
	return s, nil
}

func epoch(s string) (time.Time, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(n, 0).UTC(), nil
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// LDFlags are the linker flags of a release build: no symbol table or
// DWARF (stack traces keep their function names and lines), and the
// stamp's version, commit, date and dirty.
func (s Source) LDFlags() string {
	return strings.Join([]string{"-s", "-w",
		"-X", StampPackage + ".version=" + s.Version,
		"-X", StampPackage + ".commit=" + s.Commit,
		"-X", StampPackage + ".date=" + s.Time.UTC().Format(time.RFC3339),
		"-X", StampPackage + ".dirty=" + strconv.FormatBool(s.Dirty),
	}, " ")
}

// Platform is an operating system and architecture Go builds for.
type Platform struct{ OS, Arch string }

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// ParsePlatforms reads a comma-separated list of OS/ARCH.
func ParsePlatforms(s string) ([]Platform, error) {
	var ps []Platform
	for _, f := range strings.Split(s, ",") {
		os, arch, ok := strings.Cut(strings.TrimSpace(f), "/")
		if !ok || os == "" || arch == "" || strings.Contains(arch, "/") {
			return nil, fmt.Errorf("platform %q: use OS/ARCH, e.g. linux/amd64", f)
		}
		ps = append(ps, Platform{os, arch})
	}
	return ps, nil
}

// Build builds strata's binary from the module at dir for p into out,
// reproducibly: static (CGO_ENABLED=0), -trimpath, -buildvcs=false (the
// stamp comes from s through the linker), the baseline instruction sets
// (GOAMD64=v1, GOARM64=v8.0) whatever the environment says.
func Build(ctx context.Context, dir string, s Source, p Platform, out string) error {
	return BuildPackage(ctx, dir, "./cmd/strata", s, p, out)
}

// BuildPackage builds the main package pkg of the module at dir as Build
// builds strata.
func BuildPackage(ctx context.Context, dir, pkg string, s Source, p Platform, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags", s.LDFlags(), "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch, "GOAMD64=v1", "GOARM64=v8.0", "GOFLAGS=")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building %s for %s: %w\n%s", pkg, p, err, stderr.String())
	}
	return nil
}

// Entry is one file, directory or symlink of a tar archive.
type Entry struct {
	Name     string // slash-separated, relative; a directory ends in "/"
	Mode     int64  // permission bits (and sticky)
	UID, GID int
	Data     []byte // a file's content
	Path     string // or the file to read it from
}

// WriteTar writes entries as a tar stream in name order, every entry
// with the modification time mtime, no user or group names, no access or
// change times: the same entries give the same bytes. Parent
// directories must be listed.
func WriteTar(w io.Writer, entries []Entry, mtime time.Time) error {
	sorted := slices.Clone(entries)
	slices.SortFunc(sorted, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	tw := tar.NewWriter(w)
	for i, e := range sorted {
		if i > 0 && sorted[i-1].Name == e.Name {
			return fmt.Errorf("tar entry %s given twice", e.Name)
		}
		h := &tar.Header{Name: e.Name, Mode: e.Mode, Uid: e.UID, Gid: e.GID, ModTime: mtime.UTC().Truncate(time.Second), Format: tar.FormatPAX}
		var body io.Reader
		switch {
		case strings.HasSuffix(e.Name, "/"):
			h.Typeflag = tar.TypeDir
		default:
			h.Typeflag = tar.TypeReg
			data := e.Data
			if e.Path != "" {
				b, err := os.ReadFile(e.Path)
				if err != nil {
					return err
				}
				data = b
			}
			h.Size = int64(len(data))
			body = bytes.NewReader(data)
		}
		if err := tw.WriteHeader(h); err != nil {
			return fmt.Errorf("tar entry %s: %w", e.Name, err)
		}
		if body != nil {
			if _, err := io.Copy(tw, body); err != nil {
				return err
			}
		}
	}
	return tw.Close()
}

// DirEntries lists the files and directories under root as entries named
// prefix + their relative path, owned by root, directories 0755, files
// 0644 (0755 when executable): for archiving a tree whose own modes and
// owners depend on the machine.
func DirEntries(root, prefix string) ([]Entry, error) {
	var entries []Entry
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		name := path.Join(prefix, filepath.ToSlash(rel))
		switch {
		case d.IsDir():
			if rel == "." && prefix == "" {
				return nil
			}
			entries = append(entries, Entry{Name: name + "/", Mode: 0o755})
		case d.Type().IsRegular():
			fi, err := d.Info()
			if err != nil {
				return err
			}
			mode := int64(0o644)
			if fi.Mode()&0o111 != 0 {
				mode = 0o755
			}
			entries = append(entries, Entry{Name: name, Mode: mode, Path: p})
		default:
			return fmt.Errorf("%s: only files and directories can be archived", p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, errors.New(root + ": nothing to archive")
	}
	return entries, nil
}
