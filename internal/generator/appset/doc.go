// Package appset renders Argo CD ApplicationSets locally: it evaluates the
// generators (list, git, plugin, matrix, merge) and templates the Applications
// the ApplicationSet controller would create, with the controller's
// semantics, without a cluster.
//
// Parse decodes an ApplicationSet strictly: a misspelt field that rendering
// evaluates is an error with its file and line, while fields rendering does
// not evaluate (syncPolicy, strategy, ...) are accepted as they are.
// Generators that need a cluster or a network service other than a plugin
// (clusters, scmProvider, pullRequest, clusterDecisionResource) are
// reported as errors naming their position.
//
// Git generators read repositories through Renderer.Repos; LocalRepos
// serves them from local directories, a git repository read at the
// generator's revision through go-git, as the repo-server reads a clone.
//
// A Renderer evaluates a parsed ApplicationSet. Plugin generators call
// Renderer.Plugins, which resolves a ConfigMap name to something that can
// fetch parameter sets; PluginSet builds that from the ConfigMap and Secret
// manifests the controller would read.
//
// Semantics follow Argo CD's ApplicationSet controller of the newest
// release (Latest, 3.5); Renderer.Version selects an older release where
// they differ (see Version):
//   - Files are read as kubectl reads manifests: YAML 1.1 scalars (an
//     unquoted yes is true, 012 is 10), keeping positions for errors.
//   - Parameter values are JSON values; numbers are float64, as the
//     controller decodes them. A plugin generator's
//     generator.input.parameters are JSON texts, and its goTemplate values
//     a map of strings, as in the controller.
//   - Plain mode flattens nested values to dotted string keys ("a.b",
//     "list.0") and replaces {{key}} only where the value is a string.
//   - goTemplate mode runs text/template with the sprig functions minus env,
//     expandenv and getHostByName, plus normalize, slugify, toYaml, fromYaml
//     and fromYamlArray (no tpl), honouring goTemplateOptions, within the
//     budgets of Limits, checked from inside the running template.
//   - matrix takes exactly two children, templates the second child with
//     each parameter set of the first (but its own selector, and its plugin
//     values as the release does), and combines the sets (goTemplate:
//     deep merge, the first child wins; plain: a key with two different
//     values is an error).
//   - merge takes two or more children and one or more merge keys; sets of
//     later children override the first child's sets with the same merge-key
//     values; sets without a match are dropped.
//   - matrix and merge nest one level deep.
//   - A generator's selector filters its parameter sets by their flattened
//     keys; selectors of generators nested two levels deep always apply
//     (before 3.0, only with spec.applyNestedSelectors).
//   - A top-level generator's own template is merged over spec.template
//     (the generator's non-empty fields win); templatePatch is rendered per
//     parameter set and applied as a strategic merge patch, which cannot
//     change spec.project.
//
// Where strata differs on purpose, it is stricter: it reports an error
// where the controller would silently drop or mangle data (a missing Secret
// key, an unknown goTemplateOptions entry, duplicate Application names, a
// templatePatch field an Application does not have).
package appset
