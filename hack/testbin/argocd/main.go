// Command argocd is Argo CD's server components at the version pinned in
// go.mod, built from the Go module proxy, for the end-to-end tests of
// internal/argocdtest/clustertest and `make argocd-local` (see
// hack/testbin/build.sh). Like the multi-call binary of Argo CD's release
// image, it runs the component its name says, or the one its first argument
// names:
//
//	argocd argocd-repo-server --port 0 ...
//	argocd-repo-server --port 0 ...   (a link or copy named so)
//
// Components: argocd-repo-server, argocd-application-controller,
// argocd-applicationset-controller, argocd-cmp-server, and two helpers of
// the tests (not Argo CD's commands):
//
//	argocd miniredis --addr 127.0.0.1:0
//	    an in-memory Redis (miniredis, as Argo CD's own tests use) for the
//	    components' cache; prints "listening on HOST:PORT", serves until
//	    SIGTERM or SIGINT.
//	argocd app-details --repo-server HOST:PORT < query.json
//	    calls the repo-server's GetAppDetails with Argo CD's own client: the
//	    query is a RepoServerAppDetailsQuery as JSON, the answer is printed
//	    as JSON (what the UI's parameters tab shows).
//	argocd generate-manifest --repo-server HOST:PORT --count N < requests.json
//	    calls the repo-server's GenerateManifest (as the application
//	    controller does; noCache in a ManifestRequest skips the
//	    repo-server's manifest cache) for each request of the JSON list,
//	    N rounds, and prints each call's time as JSON: the benchmark
//	    through the real repo-server.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	appcontroller "github.com/argoproj/argo-cd/v3/cmd/argocd-application-controller/commands"
	applicationset "github.com/argoproj/argo-cd/v3/cmd/argocd-applicationset-controller/commands"
	cmpserver "github.com/argoproj/argo-cd/v3/cmd/argocd-cmp-server/commands"
	reposerver "github.com/argoproj/argo-cd/v3/cmd/argocd-repo-server/commands"
	"github.com/argoproj/argo-cd/v3/util/log"
)

var components = map[string]func() *cobra.Command{
	"argocd-repo-server":               reposerver.NewCommand,
	"argocd-application-controller":    appcontroller.NewCommand,
	"argocd-applicationset-controller": applicationset.NewCommand,
	"argocd-cmp-server":                cmpserver.NewCommand,
	"miniredis":                        newMiniredis,
	"app-details":                      newAppDetails,
	"generate-manifest":                newGenerateManifest,
}

func main() {
	// As Argo CD's cmd/main.go: klog through Argo CD's logger.
	klog.SetLogger(log.NewLogrusLogger(log.NewWithCurrentConfig()))

	name := filepath.Base(os.Args[0])
	newCommand, ok := components[name]
	if !ok && len(os.Args) > 1 {
		if newCommand, ok = components[os.Args[1]]; ok {
			os.Args = append([]string{os.Args[1]}, os.Args[2:]...)
		}
	}
	if !ok {
		names := make([]string, 0, len(components))
		for n := range components {
			names = append(names, n)
		}
		fmt.Fprintf(os.Stderr, "argocd: name a component as the first argument or the binary's name; one of: %s\n", strings.Join(names, ", "))
		os.Exit(2)
	}
	if err := newCommand().Execute(); err != nil {
		os.Exit(1)
	}
}
