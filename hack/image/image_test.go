package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/strata-dev/strata/hack/internal/release"
)

var (
	amd64 = release.Platform{OS: "linux", Arch: "amd64"}
	arm64 = release.Platform{OS: "linux", Arch: "arm64"}
	src   = release.Source{Version: "v1.2.3", Commit: "0123456789abcdef0123456789abcdef01234567",
		Time: time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)}
)

// fakeBinaries writes a stand-in binary per platform: the image's
// assembly is under test here, not Go's build.
func fakeBinaries(t *testing.T) map[release.Platform]string {
	t.Helper()
	dir := t.TempDir()
	bins := map[release.Platform]string{}
	for _, p := range []release.Platform{amd64, arm64} {
		path := filepath.Join(dir, p.Arch)
		if err := os.WriteFile(path, []byte("strata for "+p.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		bins[p] = path
	}
	return bins
}

func TestImageConfig(t *testing.T) {
	idx, _, err := Index(fakeBinaries(t), []release.Platform{amd64, arm64}, src)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.MediaType != "application/vnd.oci.image.index.v1+json" || len(im.Manifests) != 2 {
		t.Fatalf("index: media type %s, %d manifests; want an OCI index of 2", im.MediaType, len(im.Manifests))
	}
	for i, p := range []release.Platform{amd64, arm64} {
		d := im.Manifests[i]
		if d.Platform == nil || d.Platform.OS != p.OS || d.Platform.Architecture != p.Arch {
			t.Errorf("manifest %d platform = %v, want %s", i, d.Platform, p)
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		want := v1.Config{
			User:       "65532:65532",
			Entrypoint: []string{"/usr/local/bin/strata"},
			Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
			Labels: map[string]string{
				"org.opencontainers.image.source":   "https://github.com/strata-dev/strata",
				"org.opencontainers.image.revision": src.Commit,
				"org.opencontainers.image.version":  "v1.2.3",
				"org.opencontainers.image.created":  "2026-11-27T10:00:00Z",
				"org.opencontainers.image.title":    "strata",
			},
		}
		if diff := cmp.Diff(want, cf.Config); diff != "" {
			t.Errorf("%s config mismatch (-want +got):\n%s", p, diff)
		}
		if cf.OS != p.OS || cf.Architecture != p.Arch || !cf.Created.Time.Equal(src.Time) {
			t.Errorf("%s config: os %s, architecture %s, created %v; want %s, %s, the commit time %v", p, cf.OS, cf.Architecture, cf.Created, p.OS, p.Arch, src.Time)
		}
		if len(cf.History) != 1 || !cf.History[0].Created.Time.Equal(src.Time) {
			t.Errorf("%s history = %+v, want one entry dated %v", p, cf.History, src.Time)
		}
		mf, err := img.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		if mf.MediaType != "application/vnd.oci.image.manifest.v1+json" || mf.Config.MediaType != "application/vnd.oci.image.config.v1+json" ||
			len(mf.Layers) != 1 || mf.Layers[0].MediaType != "application/vnd.oci.image.layer.v1.tar+gzip" {
			t.Errorf("%s manifest = %+v; want OCI media types and one gzip layer", p, mf)
		}
	}
}

type file struct {
	Mode     int64
	UID, GID int
	Content  string // for small files
}

func layerFiles(t *testing.T, img v1.Image) map[string]file {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string]file{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(src.Time) || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: mtime %v, owner names %q:%q; want %v and no names", h.Name, h.ModTime, h.Uname, h.Gname, src.Time)
		}
		b, _ := io.ReadAll(tr)
		f := file{Mode: h.Mode, UID: h.Uid, GID: h.Gid}
		if len(b) < 200 {
			f.Content = string(b)
		}
		files[h.Name] = f
	}
	return files
}

func TestImageFiles(t *testing.T) {
	bins := fakeBinaries(t)
	img, err := Image(bins[arm64], arm64, src)
	if err != nil {
		t.Fatal(err)
	}
	got := layerFiles(t, img)
	want := map[string]file{
		"etc/":                              {Mode: 0o755},
		"etc/group":                         {Mode: 0o644, Content: "root:x:0:\nnonroot:x:65532:\n"},
		"etc/nsswitch.conf":                 {Mode: 0o644, Content: "hosts: files dns\n"},
		"etc/passwd":                        {Mode: 0o644, Content: "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"},
		"etc/ssl/":                          {Mode: 0o755},
		"etc/ssl/certs/":                    {Mode: 0o755},
		"etc/ssl/certs/ca-certificates.crt": {Mode: 0o644},
		"home/":                             {Mode: 0o755},
		"home/nonroot/":                     {Mode: 0o700, UID: 65532, GID: 65532},
		"tmp/":                              {Mode: 0o1777},
		"usr/":                              {Mode: 0o755},
		"usr/local/":                        {Mode: 0o755},
		"usr/local/bin/":                    {Mode: 0o755},
		"usr/local/bin/strata":              {Mode: 0o755, Content: "strata for linux/arm64"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("layer files mismatch (-want +got):\n%s", diff)
	}
}

func TestCABundle(t *testing.T) {
	data := caBundle()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		t.Fatal("the CA bundle holds no certificate")
	}
	n := 0
	for rest := data; ; n++ {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			if len(bytes.TrimSpace(rest)) != 0 {
				t.Errorf("the CA bundle has %d bytes that are not PEM", len(rest))
			}
			break
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			t.Errorf("certificate %d: %v", n, err)
		}
	}
	// NSS trusts ~150 roots for TLS; a bundle of a few would break HTTPS.
	if n < 100 {
		t.Errorf("the CA bundle holds %d certificates, want the NSS roots (over 100)", n)
	}
	if !bytes.Equal(caBundle(), data) {
		t.Error("two calls gave two CA bundles")
	}
}

// TestReproducible writes the outputs twice from the same binaries: one
// digest, the same bytes in every file; and each output reads back as the
// image built.
func TestReproducible(t *testing.T) {
	bins := fakeBinaries(t)
	var digests []v1.Hash
	var outs []string
	for range 2 {
		o := options{out: t.TempDir(), repository: Repository, platforms: []release.Platform{amd64, arm64}}
		d, err := write(o, src, bins)
		if err != nil {
			t.Fatal(err)
		}
		digests, outs = append(digests, d), append(outs, o.out)
	}
	if digests[0] != digests[1] {
		t.Fatalf("two builds gave two digests: %s and %s", digests[0], digests[1])
	}
	a, b := treeBytes(t, outs[0]), treeBytes(t, outs[1])
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("two builds wrote different files (-first +second):\n%s", diff)
	}
	if got := strings.TrimSpace(string(a["digest"])); got != digests[0].String() {
		t.Errorf("digest file = %s, want %s", got, digests[0])
	}

	ii, err := layout.ImageIndexFromPath(filepath.Join(outs[0], "oci"))
	if err != nil {
		t.Fatal(err)
	}
	im, err := ii.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Digest != digests[0] ||
		im.Manifests[0].Annotations["io.containerd.image.name"] != "ghcr.io/strata-dev/strata:v1.2.3" ||
		im.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "v1.2.3" {
		t.Errorf("oci/index.json = %+v; want the index %s named ghcr.io/strata-dev/strata:v1.2.3", im.Manifests, digests[0])
	}

	// The OCI archive holds the layout's files, nothing else.
	names := tarNames(t, filepath.Join(outs[0], "strata-oci.tar"))
	var layoutNames []string
	for n := range a {
		if after, ok := strings.CutPrefix(n, "oci/"); ok {
			layoutNames = append(layoutNames, after)
		}
	}
	slices.Sort(layoutNames)
	var archived []string
	for _, n := range names {
		if !strings.HasSuffix(n, "/") {
			archived = append(archived, n)
		}
	}
	if diff := cmp.Diff(layoutNames, archived); diff != "" {
		t.Errorf("strata-oci.tar files mismatch the layout (-layout +tar):\n%s", diff)
	}

	want, _, err := Index(bins, []release.Platform{amd64, arm64}, src)
	if err != nil {
		t.Fatal(err)
	}
	wim, _ := want.IndexManifest()
	for i, p := range []release.Platform{amd64, arm64} {
		img, err := tarball.ImageFromPath(filepath.Join(outs[0], "strata-"+p.OS+"-"+p.Arch+".docker.tar"), nil)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigName()
		if err != nil {
			t.Fatal(err)
		}
		wantImg, _ := want.Image(wim.Manifests[i].Digest)
		wantCfg, _ := wantImg.ConfigName()
		if cfg != wantCfg {
			t.Errorf("%s docker-archive config %s, want the index's %s", p, cfg, wantCfg)
		}
	}
}

func treeBytes(t *testing.T, root string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		b, err := os.ReadFile(p)
		files[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func tarNames(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var names []string
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
}

// TestRootfsDir checks that -rootfs (the Dockerfile's build stage) writes
// the layer's files with the layer's modes.
func TestRootfsDir(t *testing.T) {
	bins := fakeBinaries(t)
	dir := t.TempDir()
	if err := writeRootfs(dir, bins[amd64]); err != nil {
		t.Fatal(err)
	}
	img, err := Image(bins[amd64], amd64, src)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{}
	for name, f := range layerFiles(t, img) {
		want[strings.TrimSuffix(name, "/")] = f.Mode
	}
	got := map[string]int64{}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		mode := int64(fi.Mode().Perm())
		if fi.Mode()&fs.ModeSticky != 0 {
			mode |= 0o1000
		}
		rel, _ := filepath.Rel(dir, p)
		got[filepath.ToSlash(rel)] = mode
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("-rootfs files mismatch the layer (-layer +rootfs):\n%s", diff)
	}
}

// TestVersionFromRootfs builds strata for this machine's architecture as
// `make image` does, unpacks the image's file system and runs `strata
// version` from it: the binary is static and carries the stamp.
func TestVersionFromRootfs(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the image's binary runs on linux only")
	}
	ctx := context.Background()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	s, err := release.Describe(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	p := release.Platform{OS: "linux", Arch: runtime.GOARCH}
	bin := filepath.Join(t.TempDir(), "strata")
	if err := release.Build(ctx, root, s, p, bin); err != nil {
		t.Fatal(err)
	}
	img, err := Image(bin, p, s)
	if err != nil {
		t.Fatal(err)
	}
	fsRoot := t.TempDir()
	unpack(t, img, fsRoot)
	cmd := exec.CommandContext(ctx, filepath.Join(fsRoot, "usr/local/bin/strata"), "version", "-o", "json")
	cmd.Env = []string{} // nothing from this machine: no PATH, no HOME
	cmd.Dir = fsRoot
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("strata version from the image's file system: %v\n%s", err, out)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("strata version -o json = %s: %v", out, err)
	}
	want := map[string]any{"version": s.Version, "commit": s.Commit, "date": s.Time.Format(time.RFC3339),
		"dirty": s.Dirty, "goVersion": runtime.Version(), "platform": p.String()}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("strata version -o json mismatch (-want +got):\n%s", diff)
	}
	if file := mustVersionFile(t, root); s.Version != "v"+file+"-dev" && s.Version != "v"+file {
		t.Errorf("version %q is neither v%s (the tag) nor v%s-dev", s.Version, file, file)
	}
}

func mustVersionFile(t *testing.T, root string) string {
	t.Helper()
	v, err := release.ReadVersionFile(root)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// unpack writes the image's flattened file system into dir.
func unpack(t *testing.T, img v1.Image, dir string) {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeReg:
			var b []byte
			if b, err = io.ReadAll(tr); err == nil {
				err = os.WriteFile(p, b, os.FileMode(h.Mode)&0o777)
			}
		default:
			t.Fatalf("%s: unexpected tar entry type %c", h.Name, h.Typeflag)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}
