package kubetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/manifest"
)

// Limits on the CRD files InstallCRDs reads.
const (
	maxCRDFileSize = 16 << 20
	maxCRDs        = 1000
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// CRD is one CustomResourceDefinition read from a file.
type CRD struct {
	File   string // where it was read
	Line   int    // first line of its YAML document
	Object *unstructured.Unstructured
}

// InstallCRDs applies the CustomResourceDefinitions in paths (YAML files,
// or directories searched for .yaml, .yml and .json files) with server-side
// apply, and waits until each is established and its resources are listed
// by discovery.
func (c *Cluster) InstallCRDs(ctx context.Context, paths ...string) error {
	crds, err := ReadCRDs(paths...)
	if err != nil {
		return err
	}
	for _, crd := range crds {
		_, err := c.Dynamic.Resource(crdResource).Apply(ctx, crd.Object.GetName(), crd.Object,
			metav1.ApplyOptions{FieldManager: "kubetest", Force: true})
		if err != nil {
			return fmt.Errorf("%s:%d: installing CRD %s: %w", crd.File, crd.Line, crd.Object.GetName(), err)
		}
	}
	for _, crd := range crds {
		if err := c.waitEstablished(ctx, crd); err != nil {
			return err
		}
	}
	return nil
}

// waitEstablished polls a CRD until its Established condition is True,
// failing at once when the API server refuses its names.
func (c *Cluster) waitEstablished(ctx context.Context, crd CRD) error {
	name := crd.Object.GetName()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		obj, err := c.Dynamic.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("%s:%d: waiting for CRD %s: %w", crd.File, crd.Line, name, err)
		}
		conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		established := false
		for _, cond := range conds {
			m, _ := cond.(map[string]any)
			switch {
			case m["type"] == "Established" && m["status"] == "True":
				established = true
			case m["type"] == "NamesAccepted" && m["status"] == "False":
				return fmt.Errorf("%s:%d: CRD %s: names not accepted: %v", crd.File, crd.Line, name, m["message"])
			}
		}
		if established && c.served(ctx, obj) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s:%d: CRD %s not established and served: %w", crd.File, crd.Line, name, ctx.Err())
		case <-tick.C:
		}
	}
}

// served reports whether the API server's discovery lists the CRD's
// resource in every version it serves: discovery is published a moment
// after Established, and a client that maps kinds through discovery would
// not find the kind in between.
func (c *Cluster) served(ctx context.Context, crd *unstructured.Unstructured) bool {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		m, _ := v.(map[string]any)
		name, _ := m["name"].(string)
		if served, _ := m["served"].(bool); !served || name == "" {
			continue
		}
		if ctx.Err() != nil {
			return false
		}
		list, err := c.Client.Discovery().ServerResourcesForGroupVersion(group + "/" + name)
		if err != nil {
			return false
		}
		found := false
		for _, r := range list.APIResources {
			if r.Name == plural {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// ReadCRDs reads the CustomResourceDefinitions in paths: YAML files, or
// directories searched (recursively, in lexical order) for .yaml, .yml and
// .json files. Every document must be an apiextensions.k8s.io/v1
// CustomResourceDefinition with a name; empty documents are skipped.
func ReadCRDs(paths ...string) ([]CRD, error) {
	var files []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("reading CRDs: %w", err)
		}
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		before := len(files)
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			switch strings.ToLower(filepath.Ext(path)) {
			case ".yaml", ".yml", ".json":
				if d.Type().IsRegular() {
					files = append(files, path)
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("reading CRDs: %w", err)
		}
		if len(files) == before {
			return nil, fmt.Errorf("reading CRDs: no .yaml, .yml or .json file in %s", p)
		}
	}
	var crds []CRD
	for _, file := range files {
		data, err := document.ReadFile(file, maxCRDFileSize)
		if err != nil {
			return nil, fmt.Errorf("reading CRDs: %w", err)
		}
		got, err := ParseCRDs(file, data)
		if err != nil {
			return nil, err
		}
		crds = append(crds, got...)
		if len(crds) > maxCRDs {
			return nil, fmt.Errorf("reading CRDs: more than %d in %s", maxCRDs, strings.Join(paths, ", "))
		}
	}
	return crds, nil
}

// ParseCRDs parses the CustomResourceDefinitions in the YAML stream data,
// read from file (named in errors), its documents cut by manifest.Split;
// each is named by the line of its first content line.
func ParseCRDs(file string, data []byte) ([]CRD, error) {
	pieces, err := manifest.Split(data, file, manifest.Limits{})
	if err != nil {
		return nil, err
	}
	var crds []CRD
	for _, p := range pieces {
		line := contentLine(p)
		js, err := yaml.YAMLToJSON(p.Data)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: parsing YAML: %w", file, line, err)
		}
		js = bytes.TrimSpace(js)
		if len(js) == 0 || string(js) == "null" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(js, &m); err != nil {
			return nil, fmt.Errorf("%s:%d: want a YAML mapping (a CustomResourceDefinition): %w", file, line, err)
		}
		obj := &unstructured.Unstructured{Object: m}
		if obj.GetAPIVersion() != "apiextensions.k8s.io/v1" || obj.GetKind() != "CustomResourceDefinition" {
			return nil, fmt.Errorf("%s:%d: apiVersion %q kind %q: want apiextensions.k8s.io/v1 CustomResourceDefinition",
				file, line, obj.GetAPIVersion(), obj.GetKind())
		}
		if obj.GetName() == "" {
			return nil, fmt.Errorf("%s:%d: CustomResourceDefinition without metadata.name", file, line)
		}
		if len(crds) == maxCRDs {
			return nil, fmt.Errorf("%s:%d: more than %d CustomResourceDefinitions", file, line, maxCRDs)
		}
		crds = append(crds, CRD{File: file, Line: line, Object: obj})
	}
	return crds, nil
}

// contentLine returns the line of a piece's first line holding more than
// white space, a comment, a directive or a bare "---".
func contentLine(p manifest.Piece) int {
	n := p.Line
	for line := range bytes.Lines(p.Data) {
		t := bytes.TrimSpace(line)
		if len(t) > 0 && t[0] != '#' && t[0] != '%' && !bytes.Equal(t, []byte("---")) {
			return n
		}
		n++
	}
	return p.Line
}
