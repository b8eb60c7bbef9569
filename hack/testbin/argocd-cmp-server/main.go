// Command argocd-cmp-server is Argo CD's config-management-plugin sidecar at
// the version pinned in go.mod, built from the Go module proxy so that
// hack/cmpbench can measure `strata cmp serve` against the real peer in the
// same run (see hack/testbin/build.sh). It is what Argo CD's release image
// runs when its multi-call binary is started as argocd-cmp-server.
package main

import (
	"os"

	"github.com/argoproj/argo-cd/v2/cmd/argocd-cmp-server/commands"
	"github.com/argoproj/argo-cd/v2/cmd/util"
)

func main() {
	// As Argo CD's cmd/main.go does for this binary (it counts as a CLI
	// there): GOMAXPROCS from the cgroup's CPU quota, quietly.
	util.SetAutoMaxProcs(true)
	if err := commands.NewCommand().Execute(); err != nil {
		os.Exit(1)
	}
}
