package operator

import (
	"context"
	"fmt"
	"log/slog"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/strata-dev/strata/internal/operator/config"
)

// openConfigMap opens the config store on ConfigMap s.ConfigMapName in
// s.Namespace.
func openConfigMap(ctx context.Context, s Settings, rc *rest.Config, log *slog.Logger) (config.Store, error) {
	if s.Namespace == "" {
		return nil, fmt.Errorf("config store: no namespace; set ADDON_OPERATOR_NAMESPACE (the namespace of ConfigMap %s)", s.ConfigMapName)
	}
	name := s.ConfigMapName
	if name == "" {
		name = DefaultConfigMapName
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("config store ConfigMap %s/%s: %w", s.Namespace, name, err)
	}
	cm := config.NewConfigMap(cs, s.Namespace, name)
	cm.Log = log
	return cm, nil
}
