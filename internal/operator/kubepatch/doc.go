// Package kubepatch applies the operations hooks write to
// $KUBERNETES_PATCH_PATH to the API server, as shell-operator does:
// Create, CreateOrUpdate, CreateIfNotExists, Delete (foreground
// propagation, waiting until the object is gone), DeleteInBackground,
// DeleteNonCascading (orphan), JQPatch (read, jq, update with the
// resourceVersion read, again on a conflict), MergePatch and JSONPatch,
// each with an optional subresource; ignoreMissingObject makes a patch of
// an object that does not exist a success.
//
// Operations are parsed by package hook (ParseKubernetesPatch). An
// Applier first resolves every operation's apiVersion and kind through
// discovery (cached, asked again on a miss so that kinds of CRDs
// installed later are found) and checks it — scope and namespace,
// subresource, jq program — and applies none when one is bad; the error
// names the operation's index (from 0), line and field. Then it applies
// them in order, each request bounded by a timeout; a failed operation
// does not stop the next ones, and every failure is reported.
package kubepatch
