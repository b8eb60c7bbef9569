// Package controller reconciles Giant Swarm App CRs
// (application.giantswarm.io/v1alpha1) in a cluster: it merges each App's
// values with the layers library, reading the Catalog, ConfigMaps and
// Secrets from controller-runtime's cache, and writes the results to
//
//   - ConfigMap <app>-chart-values, data.values: the merged ConfigMap chain;
//   - Secret <app>-chart-secrets, data.values: the merged Secret chain
//     (to be merged over the ConfigMap's, as Helm does with two -f files),
//
// both in the App's namespace, controlled by the App (owner reference), and
// labelled app.kubernetes.io/managed-by=strata-layers-controller. They are
// written only when their content changes.
//
// The controller watches the ConfigMaps, Secrets and Catalogs Apps refer
// to — through field indexes on the references of Apps and Catalogs — so
// that a change to any layer reaches the outputs within seconds. The App's
// Ready condition says whether the outputs are up to date; when a layer
// cannot be read or merged it turns False with a reason (NamespaceNotAllowed, InvalidSpec,
// CatalogNotFound, ConfigMapMergeFailed, SecretMergeFailed, OutputConflict,
// WriteFailed) and a message naming the object and the field that lists it,
// the last good outputs stay untouched, and a Warning Event is recorded.
//
// An App reads only its own namespace and the namespaces the administrator
// allows (Manager.Namespaces): every reference elsewhere — its Catalog, the
// Catalog's layers, its own layers — is refused before anything is read.
//
// Manager runs the controller with leader election on a Lease, metrics on
// controller-runtime's registry and health probes.
package controller
