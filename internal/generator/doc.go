// Package generator is strata's side of Argo CD's ApplicationSet plugin
// generator: the wire types of its HTTP contract, a [Client] that calls a
// plugin exactly as the ApplicationSet controller does, and a [Server] that
// serves plugins backed by commands or static files.
//
// The contract is POST <baseUrl>/api/v1/getparams.execute with the body
// {"applicationSetName": ..., "input": {"parameters": {...}}}, answered by
// {"output": {"parameters": [{...}, ...]}}, one object per parameter set.
// An error is any status other than 2xx, with a JSON body {"message": ...}.
// The server never answers a failing backend with an empty list: the
// controller prunes Applications on an empty list but leaves them alone on
// an error.
//
// A [Server] serves the plugins of a [Config]. Each plugin has a
// [Backend] (a command run per request with the request on stdin, or
// parameter sets read from files and reloaded when they change), an
// optional bearer token read from a file or an environment variable, a
// response cache with a TTL in front of the backend that also collapses
// concurrent identical requests into one backend call, and a concurrency
// limit. The server exposes Prometheus metrics, /healthz and /readyz, can
// serve TLS with certificates reloaded from disk, and shuts down
// gracefully.
package generator
