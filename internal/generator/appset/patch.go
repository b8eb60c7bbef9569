package appset

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// applicationSchema gives the strategic-merge-patch metadata of an Argo CD
// Application: its fields carry no patch strategy (maps merge, lists are
// replaced, null deletes), except the ObjectMeta fields Kubernetes marks:
// metadata.finalizers merges as a set, metadata.ownerReferences by uid.
type applicationSchema struct {
	path []string
}

var _ strategicpatch.LookupPatchMeta = applicationSchema{}

func (s applicationSchema) child(key string) applicationSchema {
	p := make([]string, len(s.path), len(s.path)+1)
	copy(p, s.path)
	return applicationSchema{path: append(p, key)}
}

func (s applicationSchema) LookupPatchMetadataForStruct(key string) (strategicpatch.LookupPatchMeta, strategicpatch.PatchMeta, error) {
	return s.child(key), strategicpatch.PatchMeta{}, nil
}

func (s applicationSchema) LookupPatchMetadataForSlice(key string) (strategicpatch.LookupPatchMeta, strategicpatch.PatchMeta, error) {
	var pm strategicpatch.PatchMeta
	if len(s.path) == 1 && s.path[0] == "metadata" {
		switch key {
		case "finalizers":
			pm.SetPatchStrategies([]string{"merge"})
		case "ownerReferences":
			pm.SetPatchStrategies([]string{"merge"})
			pm.SetPatchMergeKey("uid")
		}
	}
	return s.child(key), pm, nil
}

func (s applicationSchema) Name() string { return strings.Join(s.path, ".") }

// strategicMerge applies patch to app as a strategic merge patch for an
// Application.
func strategicMerge(app, patch map[string]any) (map[string]any, error) {
	out, err := strategicpatch.StrategicMergeMapPatchUsingLookupPatchMeta(app, patch, applicationSchema{})
	if err != nil {
		return nil, fmt.Errorf("applying the patch: %w", err)
	}
	return out, nil
}
