package release_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/hack/internal/release"
)

func gitRepo(t *testing.T) (string, func(args ...string)) {
	t.Helper()
	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_DATE=2026-11-27T10:00:00Z", "GIT_COMMITTER_DATE=2026-11-27T10:00:00Z",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
			"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("init", "-q")
	if err := os.WriteFile(filepath.Join(dir, "VERSION"), []byte("0.3.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run("add", "VERSION")
	run("commit", "-q", "-m", "first")
	return dir, run
}

func TestDescribe(t *testing.T) {
	ctx := context.Background()
	dir, git := gitRepo(t)
	commitTime := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)

	s, err := release.Describe(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.Version != "v0.3.0-dev" || len(s.Commit) != 40 || !s.Time.Equal(commitTime) || s.Dirty {
		t.Errorf("Describe(untagged) = %+v, want v0.3.0-dev, a commit, %v, clean", s, commitTime)
	}

	git("tag", "v0.3.0")
	if s, err = release.Describe(ctx, dir); err != nil || s.Version != "v0.3.0" {
		t.Errorf("Describe(tagged v0.3.0) = %+v, %v; want v0.3.0", s, err)
	}

	if err := os.WriteFile(filepath.Join(dir, "VERSION"), []byte("0.3.0\n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if s, err = release.Describe(ctx, dir); err != nil || !s.Dirty {
		t.Errorf("Describe(modified) = %+v, %v; want dirty", s, err)
	}

	t.Setenv("SOURCE_DATE_EPOCH", "1000000000")
	if s, err = release.Describe(ctx, dir); err != nil || !s.Time.Equal(time.Unix(1e9, 0)) {
		t.Errorf("Describe(SOURCE_DATE_EPOCH=1000000000) = %+v, %v; want that time", s, err)
	}
	t.Setenv("SOURCE_DATE_EPOCH", "yesterday")
	if _, err = release.Describe(ctx, dir); err == nil || !strings.Contains(err.Error(), "SOURCE_DATE_EPOCH") {
		t.Errorf("Describe(SOURCE_DATE_EPOCH=yesterday) error = %v, want one naming SOURCE_DATE_EPOCH", err)
	}
	t.Setenv("SOURCE_DATE_EPOCH", "")

	git("tag", "v0.4.0")
	_, err = release.Describe(ctx, dir)
	if err == nil || !strings.Contains(err.Error(), "HEAD is tagged v0.4.0 but VERSION says 0.3.0") {
		t.Errorf("Describe(tag and VERSION differ) error = %v, want it to say so", err)
	}
}

func TestReadVersionFile(t *testing.T) {
	for _, tc := range []struct {
		content string
		ok      bool
	}{
		{"1.2.3\n", true}, {"0.1.0", true}, {"v1.2.3", false}, {"1.2", false}, {"1.02.3", false}, {"1.2.3-rc.1", false}, {"", false},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "VERSION"), []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := release.ReadVersionFile(dir)
		if (err == nil) != tc.ok {
			t.Errorf("ReadVersionFile(%q) error = %v, want ok %v", tc.content, err, tc.ok)
		}
	}
}

func TestLDFlags(t *testing.T) {
	s := release.Source{Version: "v1.0.0", Commit: "abc", Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)), Dirty: true}
	want := "-s -w -X github.com/strata-dev/strata/internal/stamp.version=v1.0.0 -X github.com/strata-dev/strata/internal/stamp.commit=abc " +
		"-X github.com/strata-dev/strata/internal/stamp.date=2026-01-02T02:04:05Z -X github.com/strata-dev/strata/internal/stamp.dirty=true"
	if got := s.LDFlags(); got != want {
		t.Errorf("LDFlags() =\n%s\nwant\n%s", got, want)
	}
}

func TestParsePlatforms(t *testing.T) {
	got, err := release.ParsePlatforms("linux/amd64, darwin/arm64")
	if err != nil || !cmp.Equal(got, []release.Platform{{"linux", "amd64"}, {"darwin", "arm64"}}) {
		t.Errorf("ParsePlatforms = %v, %v", got, err)
	}
	for _, bad := range []string{"linux", "linux/", "/amd64", "linux/arm/v7", ""} {
		if _, err := release.ParsePlatforms(bad); err == nil {
			t.Errorf("ParsePlatforms(%q) succeeded", bad)
		}
	}
}

func TestWriteTar(t *testing.T) {
	mtime := time.Date(2026, 11, 27, 10, 0, 0, 500, time.UTC)
	entries := []release.Entry{
		{Name: "b", Mode: 0o644, Data: []byte("bee")},
		{Name: "a/", Mode: 0o755},
		{Name: "a/x", Mode: 0o755, UID: 7, GID: 8, Data: []byte("x")},
	}
	var one, two bytes.Buffer
	if err := release.WriteTar(&one, entries, mtime); err != nil {
		t.Fatal(err)
	}
	reversed := []release.Entry{entries[2], entries[1], entries[0]}
	if err := release.WriteTar(&two, reversed, mtime); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(one.Bytes(), two.Bytes()) {
		t.Error("the same entries in another order gave other bytes")
	}
	tr := tar.NewReader(&one)
	var got []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(mtime.Truncate(time.Second)) || !h.AccessTime.IsZero() || !h.ChangeTime.IsZero() {
			t.Errorf("%s: times %v %v %v, want only the modification time %v", h.Name, h.ModTime, h.AccessTime, h.ChangeTime, mtime.Truncate(time.Second))
		}
		got = append(got, h.Name)
	}
	if !cmp.Equal(got, []string{"a/", "a/x", "b"}) {
		t.Errorf("entries = %v, want sorted", got)
	}
	if err := release.WriteTar(io.Discard, append(entries, entries[0]), mtime); err == nil {
		t.Error("WriteTar accepted an entry given twice")
	}
}
