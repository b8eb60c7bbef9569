// Package deps fetches the dependencies of Chart.yaml that a chart's
// charts/ lacks, as `helm dependency build` (which Argo CD's Helm source
// runs) fetches them: only from the chart repositories and OCI registries
// the operator's Helm configuration names (repositories.yaml, registry
// config.json; Config.Source resolves a dependency's repository field by
// Helm's rules), with their credentials and TLS settings, every response
// bounded in size and time (Options). A Resolver is shared by all the
// requests of a plugin: index files and resolutions are kept for
// Options.IndexTTL, fetched charts in a bounded cache by repository, name,
// version and digest (handed out as copies), and concurrent requests for
// one of them fetch it once. Errors are *Error values naming the
// dependency, its repository and what to do.
//
// helmplugin gives a request's chart its dependencies with it (the lock
// checked, file:// dependencies read inside the repository); FetchChart
// fetches a chart a `helm template` argument names.
package deps
