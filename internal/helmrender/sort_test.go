package helmrender_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/helmrender"
)

// sortCases are rendered charts (template path → text) for the sorter's
// corners: kinds in and out of Helm's install order, several documents in
// a file, partials and blank files, hooks Helm knows, test hooks, unknown
// hooks, a name or annotation given by a block scalar ending the document,
// a list, a document that is not a map, and YAML errors.
var sortCases = []map[string]string{
	{},
	{"c/templates/a.yaml": "kind: Service\napiVersion: v1\nmetadata:\n  name: s\n---\nkind: Deployment\napiVersion: apps/v1\nmetadata:\n  name: d\n",
		"c/templates/b.yaml":       "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: n\n---\n---\nkind: Zebra\napiVersion: x/v1\n---\nkind: Apple\napiVersion: x/v1\n",
		"c/templates/_helpers.tpl": "kind: Pod\n", "c/templates/empty.yaml": " \n\n"},
	{"c/templates/hooks.yaml": "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: pre\n  annotations:\n    helm.sh/hook: pre-install,post-upgrade\n---\n" +
		"apiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n  annotations:\n    \"helm.sh/hook\": test\n---\n" +
		"apiVersion: v1\nkind: Pod\nmetadata:\n  name: u\n  annotations:\n    helm.sh/hook: pre-install, sometime\n---\n" +
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n  annotations:\n    other: x\n"},
	{"c/templates/block.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  annotations:\n    helm.sh/hook: |\n      pre-install\n  name: |\n    odd\n",
		"c/templates/folded.yaml": "apiVersion: v1\nkind: >\n  Secret\nmetadata:\n  name: >-\n    s\n"},
	{"c/templates/list.yaml": "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a\n"},
	{"c/templates/scalar.yaml": "just text\n---\n- a\n- b\n"},
	{"c/templates/crlf.yaml": "apiVersion: v1\r\nkind: ConfigMap\r\nmetadata:\r\n  name: c\r\n"},
	{"c/templates/bad.yaml": "kind: [\n", "c/templates/a.yaml": "kind: A\n"},
	{"c/templates/dup.yaml": "kind: A\nkind: B\n"},
	{"c/templates/weight.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: w\n  annotations:\n    helm.sh/hook: pre-install\n    helm.sh/hook-weight: 5\n"},
}

// helmSorted is what releaseutil.SortManifests gives, as Sort's documents.
func helmSorted(files map[string]string) (hooks, manifests []helmrender.Document, err error) {
	hs, ms, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, nil, err
	}
	for _, h := range hs {
		var head releaseutil.SimpleHead
		if err := sigsyaml.Unmarshal([]byte(h.Manifest), &head); err != nil {
			return nil, nil, fmt.Errorf("the hook's head does not read again: %w", err)
		}
		hooks = append(hooks, helmrender.Document{Source: h.Path, Text: h.Manifest, APIVersion: head.Version, Kind: h.Kind, Name: h.Name})
	}
	for _, m := range ms {
		d := helmrender.Document{Source: m.Name, Text: m.Content, APIVersion: m.Head.Version, Kind: m.Head.Kind}
		if m.Head.Metadata != nil {
			d.Name = m.Head.Metadata.Name
		}
		manifests = append(manifests, d)
	}
	return hooks, manifests, nil
}

// checkSort wants Sort, with the fast codecs and with the reference alone,
// to give what Helm's sorter gives: the same hooks
// and manifests in the same order, with the same heads, or the same error.
func checkSort(t *testing.T, files map[string]string) {
	t.Helper()
	wantHooks, wantManifests, wantErr := helmSorted(files)
	for _, codecs := range []document.Codecs{document.FastCodecs, document.ReferenceCodecs} {
		hooks, manifests, err := helmrender.Sort(files, codecs)
		if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
			t.Fatalf("Sort(%q, %v): error %v, Helm's %v", files, codecs, err, wantErr)
		}
		if diff := cmp.Diff(wantHooks, hooks, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("Sort(%q, %v) hooks differ from Helm's (-helm +strata):\n%s", files, codecs, diff)
		}
		if diff := cmp.Diff(wantManifests, manifests, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("Sort(%q, %v) manifests differ from Helm's (-helm +strata):\n%s", files, codecs, diff)
		}
	}
}

func TestSortMatchesHelm(t *testing.T) {
	for i, files := range sortCases {
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkSort(t, files) })
	}
}

// FuzzSortMatchesHelm holds Sort to releaseutil.SortManifests on two
// rendered files.
func FuzzSortMatchesHelm(f *testing.F) {
	for _, files := range sortCases {
		f.Add(files["c/templates/a.yaml"], files["c/templates/hooks.yaml"]+files["c/templates/block.yaml"])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		checkSort(t, map[string]string{"c/templates/a.yaml": a, "c/templates/b.yaml": b})
	})
}
