// Package config is the operator's config store: the values users give,
// shaped like the data of addon-operator's ConfigMap.
//
// A Config holds the `global` section, one section per module key and the
// `<moduleKey>Enabled` flags. Parse reads it from a YAML (or JSON) document
// whose keys are those of the ConfigMap's data: a section is YAML text (as
// in a ConfigMap) or, for convenience, a map; a flag is "true" or "false"
// (a string, as in a ConfigMap) or a boolean. A module section set to
// "false" — an old way to disable a module — is an error telling to write
// `<moduleKey>Enabled: "false"`.
//
// Diff classifies a change the way addon-operator classifies a ConfigMap
// change: the global section or any `*Enabled` flag changed → reload all
// modules; only module sections changed → run those modules.
//
// Store is the small interface the engine uses (Load, Watch, Patch) so that
// the cluster backend of part 2 (the ConfigMap) plugs in beside File, the
// local backend: a YAML file watched with fsnotify, into which hooks'
// config patches are written back atomically without losing an edit made
// to the file meanwhile.
package config
