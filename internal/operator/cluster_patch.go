package operator

import (
	"context"
	"log/slog"

	"k8s.io/client-go/rest"
)

// openKubePatcher opens the applier of hooks' $KUBERNETES_PATCH_PATH
// operations on the API server.
func openKubePatcher(ctx context.Context, s Settings, rc *rest.Config, log *slog.Logger) (kubePatcher, error) {
	return nil, errNoCluster("kubernetes patches")
}
