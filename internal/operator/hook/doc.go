// Package hook is the addon operator's hooks: finding them, reading their
// binding configuration, the binding contexts they are run with, and
// running them with the files flant's addon-operator passes, reading back
// and checking what they wrote.
//
// # Discovery
//
// [DiscoverGlobal] and [DiscoverModule] list the executable files under a
// hooks directory, recursively and sorted by path, the way addon-operator
// does: hidden files and directories, lib/ (and a module's venv/)
// directories, and *.yaml, *.json, *.md and *.txt files are skipped, and so
// are files without an executable bit (returned apart, for a warning).
//
// # Configuration
//
// A hook prints its bindings when run with --config: YAML or JSON,
// configVersion v1 (or none, v0). [ParseConfig] reads that text strictly:
// every binding of addon-operator and shell-operator with its defaults
// (onStartup, beforeAll, afterAll for global hooks; onStartup, beforeHelm,
// afterHelm, beforeDeleteHelm, afterDeleteHelm for module hooks; schedule,
// kubernetes and settings for both; kubernetesValidating and
// kubernetesCustomResourceConversion in v1). A mistake is a *ConfigError
// naming the hook, the line, the field and what to write instead; every
// wrong top-level field is reported, as shell-operator does, each with its
// first problem.
//
// The configuration is read in three steps. config_parse.go reads the top
// level itself (its keys depend on the kind of hook and the version, the
// lifecycle orders among them) and hands each binding list to
// document.Decode, which fills the shape structs of config_shape.go (the
// v1 root and the v0 root share the binding shapes where their fields are
// the same) and config_webhook.go: unknown keys, with a did-you-mean over
// the shape's fields, and a value of the wrong type are found there, and a
// field type with rules of its own (a crontab, a jq program, watch event
// names, label operators, durations) checks them in its CheckTree. The
// decoded shapes are then turned into a [Config] with the defaults filled
// in; what involves several fields (a binding without kind, selectors that
// exclude each other, includeSnapshotsFrom naming the hook's kubernetes
// bindings, groups) is checked there, after each value's own checks.
//
// # Binding contexts
//
// A [BindingContext] is one reason to run a hook. [EncodeContexts] writes
// a list of them as the JSON shell-operator gives hooks in
// $BINDING_CONTEXT_PATH (configVersion v1, or the legacy v0 shape), and
// [DecodeContexts] reads that JSON back. [Combine] merges the contexts of
// several queued runs of one hook into one run, dropping a context
// followed by another of the same group.
//
// # Running
//
// A [Runner] runs hooks through package hookexec (argv only, own process
// group, deadline, bounded output). [Runner.Config] runs `hook --config`;
// [Runner.Run] runs a hook with its binding contexts and values
// ($BINDING_CONTEXT_PATH, $VALUES_PATH, $CONFIG_VALUES_PATH) and reads
// what it wrote to $VALUES_JSON_PATCH_PATH, $CONFIG_VALUES_JSON_PATCH_PATH,
// $METRICS_PATH and $KUBERNETES_PATCH_PATH. The files live in one private
// directory per Runner, named apart for each run going on ([Runner.Close]
// removes it): a directory per run would cost more than the rest of the
// run's own work on a journaling file system.
// Every output is parsed and checked before Run returns: values patches
// are held to the hook's scope by [Runner.CheckPatch] (the operator's
// values store's one rule, store.CheckHookPatch: a module hook writes only
// under /<moduleKey>, a global hook only under /global and /<key>Enabled). A
// hook that fails, hangs, floods its output or writes a bad file is an
// error and none of its outputs is returned.
package hook
