package operator

import (
	"context"
	"log/slog"

	"k8s.io/client-go/rest"

	"github.com/strata-dev/strata/internal/operator/config"
)

// openConfigMap opens the config store on ConfigMap s.ConfigMapName in
// s.Namespace.
func openConfigMap(ctx context.Context, s Settings, rc *rest.Config, log *slog.Logger) (config.Store, error) {
	return nil, errNoCluster("config store")
}
