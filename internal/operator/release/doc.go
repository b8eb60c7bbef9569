// Package release renders module charts with the Helm SDK and keeps the
// releases of the operator's modules.
//
// A Renderer renders a module's chart the way addon-operator installs it:
// the release name is the module name, the namespace the operator's
// namespace, the values those of the values store ({global, <moduleKey>}).
// A module without Chart.yaml gets a generated chart (name = module name,
// version 0.2.0) of its files, crds/, docs/, hooks/, images/ and lib/ left
// out. The CRD files of the module's crds/ (ADDON_OPERATOR_CRD_FILTER_PREFIXES
// applied by discovery) come first, each CustomResourceDefinition labelled
// with ADDON_OPERATOR_CRD_EXTRA_LABELS. Each chart is loaded once.
//
// A Rendered release carries a checksum of its rendered CRDs and manifests:
// NeedsUpgrade compares it with the stored release, which is written only
// when the checksum changed or the release is not deployed (addon-operator's
// release dedup).
//
// Store is the small interface of release backends: Local, a directory
// per module (manifests, CRDs, the values checksum, a bounded revision
// history and the status), and Helm, Helm releases on the API server
// (upgrade --install through the Helm SDK, addon-operator's moduleChecksum
// label, recovery of releases left pending, CRDs applied by server-side
// apply, the absent-resources check of auto-healing). Converge is the
// operator's Helm step over any Store; Orphans picks the releases to purge.
package release
