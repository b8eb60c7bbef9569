package operator

import (
	"context"
	"log/slog"

	"k8s.io/client-go/rest"

	"github.com/strata-dev/strata/internal/operator/kubebind"
)

// openClusterObjects opens the object source of kubernetes bindings on the
// API server (dynamic informers). Its watches live while the bindings that
// use them do (each binding's monitor context), so it needs no cleanup.
func openClusterObjects(_ context.Context, _ Settings, rc *rest.Config, log *slog.Logger) (kubebind.ObjectSource, error) {
	src, err := kubebind.NewClusterSource(rc)
	if err != nil {
		return nil, err
	}
	src.Logger = log
	return src, nil
}
