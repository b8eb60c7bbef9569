// Package cmpserver is strata's config management plugin server: it serves
// plugins to Argo CD's repo-server over the gRPC protocol of Argo CD's
// plugin sidecars (plugin.ConfigManagementPluginService, on a unix socket),
// and runs the same plugins locally for plugin authors.
//
// A Plugin matches, announces parameters and generates manifests. The
// CommandPlugin runs the commands of a plugin.yaml (ConfigManagementPlugin);
// built-in plugins implement the same interface in-process.
package cmpserver
