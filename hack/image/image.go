package main

import (
	"bytes"
	"compress/gzip"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"

	"github.com/strata-dev/strata/hack/internal/release"
)

// The image's configuration. The Dockerfile at the repository's root says
// the same (TestDockerfile).
const (
	// Binary is where strata lies in the image, and the entrypoint.
	Binary = "/usr/local/bin/strata"
	// User is nonroot, as in distroless images.
	User = "65532:65532"
	// CACertificates is where Go (and most tools) look for the CA bundle.
	CACertificates = "/etc/ssl/certs/ca-certificates.crt"
	// Repository is the image's default name.
	Repository = "ghcr.io/strata-dev/strata"
)

// Env is the image's environment.
var Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}

// Labels are the image's OCI labels for the source s.
func Labels(s release.Source) map[string]string {
	return map[string]string{
		"org.opencontainers.image.source":   release.SourceURL,
		"org.opencontainers.image.revision": s.Commit,
		"org.opencontainers.image.version":  s.Version,
		"org.opencontainers.image.created":  s.Time.UTC().Format(time.RFC3339),
		"org.opencontainers.image.title":    "strata",
	}
}

const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group  = "root:x:0:\nnonroot:x:65532:\n"
	// Go's resolver reads hosts from /etc/hosts first when this says so.
	nsswitch = "hosts: files dns\n"
)

// caBundle is the PEM bundle of the Mozilla NSS roots Go's
// golang.org/x/crypto/x509roots/fallback module carries, at the version
// go.mod pins: the same bytes on every machine. Roots NSS trusts only with
// a constraint (a distrust-after date) are left out, since a PEM file
// cannot carry the constraint.
func caBundle() []byte {
	var b bytes.Buffer
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate})
	}
	return b.Bytes()
}

// rootfs lists the image's file system: strata (the file binary), the CA
// bundle, the users and groups, a writable /tmp and nonroot's home.
func rootfs(binary string) []release.Entry {
	return []release.Entry{
		{Name: "etc/", Mode: 0o755},
		{Name: "etc/group", Mode: 0o644, Data: []byte(group)},
		{Name: "etc/nsswitch.conf", Mode: 0o644, Data: []byte(nsswitch)},
		{Name: "etc/passwd", Mode: 0o644, Data: []byte(passwd)},
		{Name: "etc/ssl/", Mode: 0o755},
		{Name: "etc/ssl/certs/", Mode: 0o755},
		{Name: "etc/ssl/certs/ca-certificates.crt", Mode: 0o644, Data: caBundle()},
		{Name: "home/", Mode: 0o755},
		{Name: "home/nonroot/", Mode: 0o700, UID: 65532, GID: 65532},
		{Name: "tmp/", Mode: 0o1777},
		{Name: "usr/", Mode: 0o755},
		{Name: "usr/local/", Mode: 0o755},
		{Name: "usr/local/bin/", Mode: 0o755},
		{Name: Binary[1:], Mode: 0o755, Path: binary},
	}
}

// writeRootfs writes the image's file system into dir, for the
// Dockerfile's build stage (modes as in the image; owners are the
// Dockerfile's business).
func writeRootfs(dir, binary string) error {
	for _, e := range rootfs(binary) {
		p := filepath.Join(dir, filepath.FromSlash(e.Name))
		mode := os.FileMode(e.Mode & 0o777)
		if e.Mode&0o1000 != 0 {
			mode |= os.ModeSticky
		}
		if e.Name[len(e.Name)-1] == '/' {
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		} else {
			data := e.Data
			if e.Path != "" {
				b, err := os.ReadFile(e.Path)
				if err != nil {
					return err
				}
				data = b
			}
			if err := os.WriteFile(p, data, mode); err != nil {
				return err
			}
		}
		if err := os.Chmod(p, mode); err != nil {
			return err
		}
	}
	return nil
}

// layer is the image's one layer: rootfs as a tar, every entry dated
// mtime, gzip-compressed.
func layer(binary string, mtime time.Time) (v1.Layer, error) {
	var tarb bytes.Buffer
	if err := release.WriteTar(&tarb, rootfs(binary), mtime); err != nil {
		return nil, err
	}
	data := tarb.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.BestCompression))
}

// Image builds the image for one platform from strata's binary built for
// it. Everything dated is dated s.Time (the commit's), so one commit gives
// one digest.
func Image(binary string, p release.Platform, s release.Source) (v1.Image, error) {
	l, err := layer(binary, s.Time)
	if err != nil {
		return nil, fmt.Errorf("%s layer: %w", p, err)
	}
	created := v1.Time{Time: s.Time.UTC()}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: l, History: v1.History{
		Created:   created,
		CreatedBy: "make image (hack/image): strata " + s.Version,
		Comment:   "strata, CA certificates, nonroot user, /tmp",
	}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = p.OS, p.Arch, created
	cf.Author = ""
	cf.Config = v1.Config{
		User:       User,
		Entrypoint: []string{Binary},
		Env:        Env,
		Labels:     Labels(s),
	}
	return mutate.ConfigFile(img, cf)
}

// Index builds the multi-platform image from the binaries, one per platform.
func Index(binaries map[release.Platform]string, platforms []release.Platform, s release.Source) (v1.ImageIndex, map[release.Platform]v1.Image, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	images := map[release.Platform]v1.Image{}
	for _, p := range platforms {
		img, err := Image(binaries[p], p, s)
		if err != nil {
			return nil, nil, err
		}
		images[p] = img
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: p.OS, Architecture: p.Arch},
		}})
	}
	return idx, images, nil
}
