// Command image builds strata's OCI image without a Docker daemon (`make
// image`): for each platform, strata's static binary with the CA
// certificates, a nonroot user (65532) and a writable /tmp, in one layer;
// the platforms joined in one index. Reproducible: every date is the
// commit's (or $SOURCE_DATE_EPOCH), entries are sorted, so two builds of
// one commit give one digest.
//
// It writes, under -out (default bin/image):
//
//	oci/                       the index as an OCI image layout (crane push, skopeo copy oci:, oras)
//	strata-oci.tar             the same layout as one tar (podman load, docker load since Docker 25, skopeo copy oci-archive:)
//	strata-OS-ARCH.docker.tar  one platform as a docker-archive, tagged REPOSITORY:VERSION (docker load, any version)
//	digest                     the index's digest
//
// With -rootfs DIR it writes only one platform's root file system into
// DIR, for the Dockerfile's build stage.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/strata-dev/strata/hack/internal/release"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

type options struct {
	dir, out, repository, rootfs string
	platforms                    []release.Platform
	// source overrides git when version is set (a build without .git, as
	// in the Dockerfile).
	version, commit, date string
	dirty                 bool
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	var o options
	var platforms string
	fs.StringVar(&o.dir, "dir", ".", "strata's module root")
	fs.StringVar(&o.out, "out", "bin/image", "output directory")
	fs.StringVar(&o.repository, "repository", Repository, "the image's name in the docker-archive tarballs and the layout's annotations")
	fs.StringVar(&platforms, "platforms", "linux/amd64,linux/arm64", "platforms, comma-separated OS/ARCH (with -rootfs, one)")
	fs.StringVar(&o.rootfs, "rootfs", "", "write one platform's root file system into this directory and stop (the Dockerfile's build stage)")
	fs.StringVar(&o.version, "version", "", "release version (default: from git and the VERSION file; when set, git is not asked)")
	fs.StringVar(&o.commit, "commit", "", "commit hash, with -version")
	fs.StringVar(&o.date, "date", "", "commit time (RFC 3339), with -version (default: $SOURCE_DATE_EPOCH, else 1970-01-01T00:00:00Z)")
	fs.BoolVar(&o.dirty, "dirty", false, "the tree had uncommitted changes, with -version")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var err error
	if o.platforms, err = release.ParsePlatforms(platforms); err != nil {
		return err
	}
	src, err := o.source(ctx)
	if err != nil {
		return err
	}
	if o.rootfs != "" {
		if len(o.platforms) != 1 {
			return fmt.Errorf("-rootfs writes one platform's file system; -platforms gave %d", len(o.platforms))
		}
		bin := filepath.Join(o.rootfs, Binary[1:])
		if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
			return err
		}
		if err := release.Build(ctx, o.dir, src, o.platforms[0], bin); err != nil {
			return err
		}
		return writeRootfs(o.rootfs, bin)
	}
	binaries := map[release.Platform]string{}
	for _, p := range o.platforms {
		bin := filepath.Join(o.out, "bin", "strata-"+p.OS+"-"+p.Arch)
		fmt.Fprintf(os.Stderr, "building strata %s for %s\n", src.Version, p)
		if err := release.Build(ctx, o.dir, src, p, bin); err != nil {
			return err
		}
		binaries[p] = bin
	}
	digest, err := write(o, src, binaries)
	if err != nil {
		return err
	}
	fmt.Println(digest)
	return nil
}

func (o options) source(ctx context.Context) (release.Source, error) {
	if o.version == "" {
		return release.Describe(ctx, o.dir)
	}
	s := release.Source{Version: o.version, Commit: o.commit, Dirty: o.dirty, Time: time.Unix(0, 0).UTC()}
	if env := os.Getenv("SOURCE_DATE_EPOCH"); env != "" && o.date == "" {
		n, err := strconv.ParseInt(env, 10, 64)
		if err != nil {
			return s, fmt.Errorf("SOURCE_DATE_EPOCH=%q: %w; set it to seconds since 1970", env, err)
		}
		s.Time = time.Unix(n, 0).UTC()
	}
	if o.date != "" {
		t, err := time.Parse(time.RFC3339, o.date)
		if err != nil {
			return s, fmt.Errorf("-date %q: use RFC 3339, e.g. 2026-11-27T10:00:00Z", o.date)
		}
		s.Time = t.UTC()
	}
	return s, nil
}

// write builds the index from the binaries and writes the outputs; it
// returns the index's digest.
func write(o options, src release.Source, binaries map[release.Platform]string) (v1.Hash, error) {
	idx, images, err := Index(binaries, o.platforms, src)
	if err != nil {
		return v1.Hash{}, err
	}
	digest, err := idx.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	tag, err := name.NewTag(o.repository + ":" + src.Version)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("image name %s:%s: %w", o.repository, src.Version, err)
	}
	ociDir := filepath.Join(o.out, "oci")
	if err := os.RemoveAll(ociDir); err != nil {
		return v1.Hash{}, err
	}
	lp, err := layout.Write(ociDir, empty.Index)
	if err != nil {
		return v1.Hash{}, err
	}
	// containerd and docker name the image after io.containerd.image.name;
	// the OCI annotation holds the tag alone.
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"io.containerd.image.name":          tag.String(),
		"org.opencontainers.image.ref.name": tag.TagStr(),
	})); err != nil {
		return v1.Hash{}, err
	}
	entries, err := release.DirEntries(ociDir, "")
	if err != nil {
		return v1.Hash{}, err
	}
	var ociTar bytes.Buffer
	if err := release.WriteTar(&ociTar, entries, src.Time); err != nil {
		return v1.Hash{}, err
	}
	if err := os.WriteFile(filepath.Join(o.out, "strata-oci.tar"), ociTar.Bytes(), 0o644); err != nil {
		return v1.Hash{}, err
	}
	for _, p := range o.platforms {
		path := filepath.Join(o.out, "strata-"+p.OS+"-"+p.Arch+".docker.tar")
		if err := tarball.WriteToFile(path, tag, images[p]); err != nil {
			return v1.Hash{}, fmt.Errorf("%s: %w", path, err)
		}
	}
	if err := os.WriteFile(filepath.Join(o.out, "digest"), []byte(digest.String()+"\n"), 0o644); err != nil {
		return v1.Hash{}, err
	}
	return digest, nil
}
