package operator

import (
	"context"
	"log/slog"

	"k8s.io/client-go/rest"

	"github.com/strata-dev/strata/internal/operator/kubebind"
)

// openClusterObjects opens the object source of kubernetes bindings on the
// API server (dynamic informers).
func openClusterObjects(ctx context.Context, s Settings, rc *rest.Config, log *slog.Logger) (kubebind.ObjectSource, error) {
	return nil, errNoCluster("kubernetes bindings")
}
