// Package layers merges the values of a Giant Swarm App CR
// (application.giantswarm.io/v1alpha1) from its layers: the Catalog's
// config, the App's extraConfigs, config and userConfig, each a ConfigMap or
// a Secret, in the order of the "Multi layer app configs" RFC:
//
//	catalog (0) → extraConfigs with priority 1..50 → config (50)
//	→ extraConfigs 51..100 → userConfig (100) → extraConfigs 101..150
//
// Inside a bucket, lower priorities merge first; entries of equal priority
// merge in list order, the later one winning; an unset priority is 25. An
// extraConfig at exactly 50 merges before config, at exactly 100 before
// userConfig. The ConfigMap chain and the Secret chain are merged
// separately, and the Secret result is merged over the ConfigMap result.
// Merging uses the values engine: Helm's semantics, with provenance.
//
// NewPlan validates an App and computes the ordered layers as data; a
// Renderer fetches them from a Source (Kubernetes YAML files with
// DirSource, a cluster with ClusterSource, a controller's cache) and merges
// them; Rendered.Explain tells which layer set each key.
package layers
