// Package module finds and describes the modules of strata's addon operator,
// the way flant/addon-operator lays them out, and decides which are enabled.
//
// Discover walks every MODULES_DIR path. Each directory (or symbolic link to
// one) is a module: `NNN-name` gives the order NNN and the name `name`; a
// name without a number takes Options.UnnumberedOrder. Modules are ordered
// by order, then name. The module's values key is its name in camelCase
// (`cert-manager` → `certManager`); a name whose key does not convert back
// to it, and a name found twice, are errors naming the paths.
//
// A Module carries what the rest of the operator needs from its directory:
// the static values (the `<key>` section and the `<key>Enabled` flag of the
// modules directory's values.yaml and of the module's own values.yaml), the
// OpenAPI schemas of openapi/config-values.yaml and openapi/values.yaml
// (parsed with additionalProperties false where unset, x-extend resolved
// inside openapi/, x-required-for-helm kept for the check before Helm), the
// CRD files of crds/ (filtered by prefix), the hooks/ directory, the
// enabled script, and whether it has a Chart.yaml. LoadGlobal does the same
// for the global section: $GLOBAL_HOOKS_DIR/openapi and the `global` section
// of the modules directories' values.yaml files.
//
// Resolver decides which modules are enabled: the merged `<key>Enabled`
// flag (false, then modules/values.yaml, the module's values.yaml, global
// hooks' patches, the config store — an EnabledSource gives it), then,
// for a module whose flag is true, its enabled script, run through
// internal/hookexec with VALUES_PATH, CONFIG_VALUES_PATH,
// MODULE_ENABLED_RESULT and MODULE_ENABLED_REASON. Scripts run in module
// order, each seeing in global.enabledModules the modules enabled before it.
package module
