// Package helmrender renders Helm charts client-only, as `helm template`
// does, on the Helm v4 SDK: the one render path of strata's Helm plugin
// (helmplugin) and of the operator's module releases (operator/release).
//
// Template runs a chart's templates: dependencies processed with the
// values, the values checked against the chart's schema, the templates run
// with the release and capabilities given (Capabilities builds those the
// helm CLI gives; ParseKubeVersion reads a version as Argo CD passes it),
// no cluster (lookup returns nothing), NOTES.txt left out. Sort sorts the
// rendered files into Helm's install order as releaseutil.SortManifests
// does, with the same documents, heads and errors (TestSortMatchesHelm,
// FuzzSortMatchesHelm), each document read once, in parallel.
//
// A Renderer is the whole of `helm template --include-crds` as Argo CD
// reads its output (Render): CRD files, manifests and hooks, each document
// as Argo CD's repo-server reads it from helm's text (printedText), empty
// documents dropped, Lists unpacked, every object checked for apiVersion
// and kind, within Limits (manifests, bytes; template functions that could
// build a value of any size are bounded too). It bounds the renders
// running at once and each render's time (Options), and keeps a cache of
// the documents read before, by the SHA-256 of their text.
//
// YAML is read with Helm's rules (sigs.k8s.io/yaml) by the document layer's
// fast path (package yamljson), which gives the same results and falls back
// to the reference functions for anything it is not sure to reproduce;
// LoadValues reads a values file through it as Helm's loader.LoadValues
// does, with Helm's function as its fallback (values.go). Options.Codecs
// (document.Codecs) is the switch that turns the fast path off. The
// differential tests and fuzzers of yamljson and values_test.go, and
// split_test.go, hold them to the reference.
package helmrender
