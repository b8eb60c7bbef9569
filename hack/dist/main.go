// Command dist builds strata's release archives (`make dist`): for each
// platform (default linux and darwin, amd64 and arm64) a tar.gz holding
// the static binary, README.md and CHANGELOG.md, a CycloneDX SBOM of the
// binary's module graph, and SHA256SUMS over all of them. Reproducible:
// every date is the commit's (or $SOURCE_DATE_EPOCH), so two runs on one
// commit write the same bytes.
//
//	bin/dist/strata_VERSION_OS_ARCH.tar.gz
//	bin/dist/strata_VERSION_OS_ARCH.cdx.json
//	bin/dist/SHA256SUMS                  (sha256sum -c SHA256SUMS)
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/strata-dev/strata/hack/internal/release"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "dist:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("dist", flag.ContinueOnError)
	dir := fs.String("dir", ".", "strata's module root")
	out := fs.String("out", "bin/dist", "output directory (emptied first)")
	platforms := fs.String("platforms", "linux/amd64,linux/arm64,darwin/amd64,darwin/arm64", "platforms, comma-separated OS/ARCH")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ps, err := release.ParsePlatforms(*platforms)
	if err != nil {
		return err
	}
	src, err := release.Describe(ctx, *dir)
	if err != nil {
		return err
	}
	build := filepath.Join(*out, ".build")
	binaries := map[release.Platform]string{}
	for _, p := range ps {
		bin := filepath.Join(build, p.OS+"-"+p.Arch, "strata")
		fmt.Fprintf(os.Stderr, "building strata %s for %s\n", src.Version, p)
		if err := release.Build(ctx, *dir, src, p, bin); err != nil {
			return err
		}
		binaries[p] = bin
	}
	d := dist{src: src, docs: []string{filepath.Join(*dir, "README.md"), filepath.Join(*dir, "CHANGELOG.md")}}
	files, err := d.write(*out, ps, binaries)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(build); err != nil {
		return err
	}
	for _, f := range files {
		fmt.Println(filepath.Join(*out, f))
	}
	return nil
}
