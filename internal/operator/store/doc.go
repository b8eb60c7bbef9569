// Package store is the operator's values store: the global section and one
// section per module, each merged from layers on internal/values, in the
// order addon-operator's facts give:
//
//  1. modules/values.yaml (the `<key>` or `global` section of every
//     MODULES_DIR path's values.yaml), then the module's own values.yaml
//  2. defaults of openapi/config-values.yaml
//  3. the config store's section
//  4. defaults of openapi/values.yaml
//  5. the JSON patches hooks returned, in the order they were made
//
// Maps merge deeply, lists and scalars are replaced. Explain tells, for
// every key, the layer that set it and what it overrode (--explain).
//
// ApplyPatch stores a hook's values patch, as the hook's output gave it
// (hook.Patch): it checks the patch's scope with CheckScope, the one rule
// for it, which hook runs are held to as well (CheckHookPatch; module
// hooks only `/<moduleKey>/…`; global hooks `/global/…` and
// `/<moduleKey>Enabled`, `/globalEnabled` included as in addon-operator),
// turns it into a JSON patch once, applies it strictly to the current values
// (removing a missing key fails), validates the result against
// openapi/values.yaml, and only then stores it — all of it or nothing, a
// global patch's `*Enabled` flags together with its global values. Stored
// patches stay in the order they were made; a later operation that
// replaces or removes a key drops the earlier operations below it, so the
// list does not grow with every run of a hook that sets the same keys.
//
// SetConfig takes a new config store content, validating each section
// against its openapi/config-values.yaml first: an invalid config is
// refused whole, naming the section, path and rule, and the last good
// values stay.
//
// The store also gives what hooks, enabled scripts and Helm see:
// {global, <moduleKey>} (HookValues, ScriptValues, HelmValues — the last
// checked with x-required-for-helm), the config values (ConfigValues) and
// the merged enabled flags (EnabledFlag), which makes it the
// module.EnabledSource of enabled resolution.
package store
