package release

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"maps"

	"sigs.k8s.io/kustomize/kyaml/kio"
)

// ModuleChecksum is addon-operator's moduleChecksum of a release: the md5
// (hex) of the release's manifest as Helm 3 stores it — each non-hook
// document written as "---\n# Source: <template>\n<document>\n" in Helm's
// install order, CRDs left out — after addon-operator's post-renderer set
// labels (ADDON_OPERATOR_CRD_EXTRA_LABELS) on every document, which
// re-serialises the stream with kyaml. With no labels the stream is
// hashed as rendered. A release that addon-operator made carries it as its
// moduleChecksum label, so an unchanged module is not upgraded when
// strata takes over.
func ModuleChecksum(manifest []byte, labels map[string]string) (string, error) {
	out, err := setLabels(manifest, labels)
	if err != nil {
		return "", err
	}
	sum := md5.Sum(out)
	return hex.EncodeToString(sum[:]), nil
}

// setLabels sets labels on every document of a YAML stream, as
// addon-operator's post-renderer does (nothing to set: the stream as it
// is). kyaml panics on some malformed streams (a document "-"): that is
// an error here.
func setLabels(stream []byte, labels map[string]string) (_ []byte, err error) {
	if len(labels) == 0 {
		return stream, nil
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("setting labels on the rendered manifests: malformed YAML (%v)", p)
		}
	}()
	nodes, err := kio.FromBytes(stream)
	if err != nil {
		return nil, fmt.Errorf("setting labels on the rendered manifests: %w", err)
	}
	for _, n := range nodes {
		l := n.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		maps.Copy(l, labels)
		if err := n.SetLabels(l); err != nil {
			return nil, fmt.Errorf("setting labels on the rendered manifests: %w", err)
		}
	}
	s, err := kio.StringAll(nodes)
	if err != nil {
		return nil, fmt.Errorf("setting labels on the rendered manifests: %w", err)
	}
	return []byte(s), nil
}

// labelRenderer is the Helm post-renderer that sets the resource labels.
type labelRenderer map[string]string

func (l labelRenderer) Run(in *bytes.Buffer) (*bytes.Buffer, error) {
	out, err := setLabels(in.Bytes(), l)
	if err != nil {
		return nil, err
	}
	return bytes.NewBuffer(out), nil
}
