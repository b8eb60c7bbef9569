// Package helmplugin is strata's built-in Helm plugin: a config management
// plugin that renders a Helm chart in-process, on the Helm SDK, the way Argo
// CD's native Helm source renders it with `helm template`.
//
// A Plugin matches an application directory holding a Chart.yaml,
// announces the parameters a Helm source offers (values files, inline
// values, --set style parameters, release name, namespace, kube version, API
// versions, and the skip-* switches) with titles, tooltips and item types,
// and generates the chart's manifests, document for document what
//
//	helm template CHARTDIR --name-template RELEASE --namespace NS --include-crds ...
//
// prints for the same inputs: CRDs, manifests in Helm's install order, then
// hooks (test hooks unless skip-tests), NOTES.txt left out, empty documents
// dropped.
//
// The helm-parameters announcement lists the chart's values, flattened to
// keys in --set notation (a\.b for a dot inside a key, key[i] for list
// items), with their current values: values.yaml, then the selected values
// files, the inline values and the parameters already set. It round-trips:
// setting every announced entry to its announced value renders the same
// manifests. An entry set to the value the key already has is left out of
// the --set assignments, so a UI that saves every announced entry cannot
// turn a string "true" into a boolean or a float into an integer.
//
// Everything runs without a cluster: the release is rendered client-only,
// lookup returns nothing, getHostByName returns "". Dependencies come from
// charts/; those it lacks are fetched as `helm dependency build` fetches
// them (Chart.lock honoured, file:// inside the repository), only from the
// repositories and registries the operator's Helm configuration names,
// through a bounded cache shared by all requests (package deps; see
// DependencyOptions).
// Values files and file-parameters are read through an os.Root of the
// repository: a path or symbolic link leading outside it is refused.
// values-files entries are expanded as Argo CD's Helm source expands
// valueFiles (build variables, glob patterns, each file once; valuesfiles.go),
// and a kube version is cut to its numbers as Argo CD passes it to helm.
//
// Every input is bounded (see Limits), and a render is bounded in time by
// the request's context and Options.Timeout. Errors read like Helm's (the
// template file and line) and name the parameter at fault when a parameter
// caused them.
//
// The sidecar renders the same charts again and again, so loaded charts,
// rendered documents read before, parsed values documents and the
// helm-parameters lists of charts announced without user values are cached
// by the SHA-256 of their content (see Options). A cached chart is never
// handed out: Helm changes the chart it renders, so each render gets a
// complete copy.
//
// With Options.Workers (strata cmp serve's default) every render and
// announcement runs in a render worker process, on package worker's pool:
// this program started again as WorkerEntry (`strata helm-worker`, which
// cmd/strata's main runs before it parses a command line), serving one
// request at a time with a Plugin of its own, killed past the request's
// time or memory budget and replaced. This package supplies the worker's
// handler, its request and answer types, and the errors that name the
// chart and the budget (worker.go, workerserve.go); the pool knows
// nothing of Helm.
//
// The render itself (Helm's engine, the sort into install order, helm
// template's output read back as Argo CD reads it, the output's limits,
// the rendered documents' cache, the fast YAML path and its reference
// switch) is package helmrender's, which the operator's releases render
// through too; this package adds what a request brings: parameters,
// values files, the chart's directory and its dependencies. The Helm SDK
// (helm.sh/helm/v4) is imported by the Helm packages only: helmrender,
// this package and operator/release.
package helmplugin
