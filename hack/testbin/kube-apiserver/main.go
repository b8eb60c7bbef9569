// Command kube-apiserver is the Kubernetes API server at the version pinned
// in go.mod, built from the Go module proxy for strata's integration tests
// (see hack/testbin/build.sh and internal/kube/kubetest).
package main

import (
	"os"
	_ "time/tzdata" // CronJob time zones, as in the upstream binary

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // --logging-format=json
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
