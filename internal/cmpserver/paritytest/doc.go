// Package paritytest compares `strata cmp serve` with Argo CD's own plugin
// sidecar, argocd-cmp-server v2.14 (built by testbin), on the wire: both
// serve the same plugin.yaml, each request is sent to both as Argo CD's
// repo-server sends it (the environment it builds, the repository packed
// as it packs it, .git included, streamed in 1 KiB chunks), and the
// answers are read as the repo-server reads them. Its tests are
// integration tests: they run argocd-cmp-server and the strata binary, so
// `make unit` leaves them out. The package holds no code but its tests.
package paritytest
