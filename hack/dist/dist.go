package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/strata-dev/strata/hack/internal/release"
)

// dist writes the release files of one source.
type dist struct {
	src  release.Source
	docs []string // files put beside the binary in each archive
}

// base is an archive's name without extension: strata_v1.2.3_linux_amd64.
func (d dist) base(p release.Platform) string {
	return "strata_" + d.src.Version + "_" + p.OS + "_" + p.Arch
}

// write writes each platform's archive and SBOM and the checksums into
// out, which it empties of earlier release files first; it returns the
// names written.
func (d dist) write(out string, ps []release.Platform, binaries map[release.Platform]string) ([]string, error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	old, _ := filepath.Glob(filepath.Join(out, "strata_*"))
	for _, f := range append(old, filepath.Join(out, "SHA256SUMS")) {
		if err := os.RemoveAll(f); err != nil {
			return nil, err
		}
	}
	files := map[string][]byte{}
	for _, p := range ps {
		tgz, err := d.archive(p, binaries[p])
		if err != nil {
			return nil, fmt.Errorf("%s archive: %w", p, err)
		}
		files[d.base(p)+".tar.gz"] = tgz
		sbom, err := SBOM(binaries[p], d.src)
		if err != nil {
			return nil, fmt.Errorf("%s SBOM: %w", p, err)
		}
		files[d.base(p)+".cdx.json"] = sbom
	}
	files["SHA256SUMS"] = sums(files)
	var names []string
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(out, name), data, 0o644); err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}

// archive is the tar.gz of one platform: DIR/strata and the docs, DIR
// being the archive's base name; gzip with no name and no time.
func (d dist) archive(p release.Platform, binary string) ([]byte, error) {
	dir := d.base(p) + "/"
	entries := []release.Entry{{Name: dir, Mode: 0o755}, {Name: dir + "strata", Mode: 0o755, Path: binary}}
	for _, doc := range d.docs {
		entries = append(entries, release.Entry{Name: dir + filepath.Base(doc), Mode: 0o644, Path: doc})
	}
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if err := release.WriteTar(zw, entries, d.src.Time); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// sums is SHA256SUMS as sha256sum writes it, by name.
func sums(files map[string][]byte) []byte {
	var names []string
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		h := sha256.Sum256(files[n])
		fmt.Fprintf(&b, "%s  %s\n", hex.EncodeToString(h[:]), n)
	}
	return []byte(b.String())
}

// The CycloneDX 1.5 JSON document, the fields written.
type (
	bom struct {
		BOMFormat    string       `json:"bomFormat"`
		SpecVersion  string       `json:"specVersion"`
		Version      int          `json:"version"`
		Metadata     metadata     `json:"metadata"`
		Components   []component  `json:"components"`
		Dependencies []dependency `json:"dependencies"`
	}
	metadata struct {
		Timestamp string    `json:"timestamp"`
		Tools     tools     `json:"tools"`
		Component component `json:"component"`
	}
	tools struct {
		Components []component `json:"components"`
	}
	component struct {
		Type       string     `json:"type"`
		BOMRef     string     `json:"bom-ref,omitempty"`
		Name       string     `json:"name"`
		Version    string     `json:"version,omitempty"`
		PURL       string     `json:"purl,omitempty"`
		Properties []property `json:"properties,omitempty"`
	}
	property struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	dependency struct {
		Ref       string   `json:"ref"`
		DependsOn []string `json:"dependsOn"`
	}
)

// SBOM is the CycloneDX JSON SBOM of the Go binary at path: the main
// module, the standard library and every module linked in, read from the
// build information the go command embeds (what `go version -m` prints),
// with the go.sum hash of each module and the build settings (GOOS and
// GOARCH among them, in the package URLs too).
func SBOM(path string, src release.Source) ([]byte, error) {
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the build information of %s: %w", path, err)
	}
	var goos, goarch string
	for _, s := range bi.Settings {
		switch s.Key {
		case "GOOS":
			goos = s.Value
		case "GOARCH":
			goarch = s.Value
		}
	}
	qualifiers := "?goarch=" + goarch + "&goos=" + goos + "&type=module"
	main := component{
		Type: "application", Name: bi.Main.Path, Version: src.Version,
		PURL: "pkg:golang/" + bi.Main.Path + "@" + src.Version + qualifiers,
	}
	main.BOMRef = main.PURL
	main.Properties = append(main.Properties, property{"cdx:gomod:build:goversion", bi.GoVersion})
	for _, s := range bi.Settings {
		main.Properties = append(main.Properties, property{"cdx:gomod:build:setting:" + s.Key, s.Value})
	}
	if src.Commit != "" {
		main.Properties = append(main.Properties, property{"cdx:gomod:vcs:revision", src.Commit})
	}
	std := component{Type: "library", Name: "stdlib", Version: bi.GoVersion, PURL: "pkg:golang/stdlib@" + bi.GoVersion + qualifiers}
	std.BOMRef = std.PURL
	comps := []component{std}
	for _, m := range bi.Deps {
		path, version, sum := m.Path, m.Version, m.Sum
		var props []property
		if m.Replace != nil {
			props = append(props, property{"cdx:gomod:replaced", m.Path + "@" + m.Version})
			path, version, sum = m.Replace.Path, m.Replace.Version, m.Replace.Sum
		}
		if sum != "" {
			props = append(props, property{"cdx:gomod:sum", sum})
		}
		c := component{Type: "library", Name: path, Version: version, PURL: "pkg:golang/" + path + "@" + version + "?type=module", Properties: props}
		c.BOMRef = c.PURL
		comps = append(comps, c)
	}
	slices.SortFunc(comps, func(a, b component) int { return strings.Compare(a.BOMRef, b.BOMRef) })
	var refs []string
	for _, c := range comps {
		refs = append(refs, c.BOMRef)
	}
	doc := bom{
		BOMFormat: "CycloneDX", SpecVersion: "1.5", Version: 1,
		Metadata: metadata{
			Timestamp: src.Time.UTC().Format(time.RFC3339),
			Tools:     tools{Components: []component{{Type: "application", Name: "strata hack/dist"}}},
			Component: main,
		},
		Components:   comps,
		Dependencies: []dependency{{Ref: main.BOMRef, DependsOn: refs}},
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
