// Package kustomize builds kustomizations in-process with the kustomize
// API, so that plugins can run a kustomize pass (after Helm, for instance)
// with nothing but strata in the sidecar image.
package kustomize

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// A Build builds the kustomization in a directory, as `kustomize build`
// does with its defaults: files may only be loaded from inside the
// kustomization's directory tree; no exec or container plugins run; no
// Helm charts are inflated and nothing is fetched from the network.
type Build struct{}

// Run builds the kustomization in dir and returns the YAML stream.
func (b *Build) Run(ctx context.Context, dir string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("kustomize build: %s is not a directory", dir)
	}
	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = types.LoadRestrictionsRootOnly
	opts.PluginConfig = types.DisabledPluginConfig()
	k := krusty.MakeKustomizer(opts)
	fs := filesys.MakeFsOnDisk()
	res, err := k.Run(fs, abs)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	out, err := res.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	return out, nil
}
