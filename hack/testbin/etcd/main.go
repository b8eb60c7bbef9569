// Command etcd is the etcd server at the version pinned in go.mod, built
// from the Go module proxy for strata's integration tests (see
// hack/testbin/build.sh and internal/kube/kubetest).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
