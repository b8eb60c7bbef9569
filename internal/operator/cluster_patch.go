package operator

import (
	"context"
	"log/slog"

	"k8s.io/client-go/rest"

	"github.com/strata-dev/strata/internal/operator/kubepatch"
)

// openKubePatcher opens the applier of hooks' $KUBERNETES_PATCH_PATH
// operations on the API server.
func openKubePatcher(ctx context.Context, s Settings, rc *rest.Config, log *slog.Logger) (kubePatcher, error) {
	a, err := kubepatch.New(rc, log)
	if err != nil {
		return nil, err
	}
	return a, nil
}
