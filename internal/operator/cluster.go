package operator

import (
	"context"
	"fmt"
	"log/slog"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/strata-dev/strata/internal/kube"
)

// openCluster opens the cluster backends of s into b: the ConfigMap config
// store, the informer object source, Helm releases on the API server and
// the kubernetes patch applier. Each lives in its own cluster_*.go file.
func openCluster(ctx context.Context, s Settings, log *slog.Logger, b *backends) error {
	rc, err := s.restConfig()
	if err != nil {
		return err
	}
	src := "in-cluster service account"
	if s.KubeConfig != "" {
		src = "kubeconfig " + s.KubeConfig
		if s.KubeContext != "" {
			src += ", context " + s.KubeContext
		} else {
			src += ", its current context"
		}
	}
	log.Info("backends: cluster", "server", rc.Host, "from", src, "namespace", s.Namespace,
		"configMap", s.ConfigMapName)
	if b.config, err = openConfigMap(ctx, s, rc, log); err != nil {
		return err
	}
	if b.objects, err = openClusterObjects(ctx, s, rc, log); err != nil {
		return err
	}
	if b.release, err = openHelmReleases(ctx, s, rc, log); err != nil {
		return err
	}
	if b.patcher, err = openKubePatcher(ctx, s, rc, log); err != nil {
		return err
	}
	if b.dynamic, err = dynamic.NewForConfig(rc); err != nil {
		return fmt.Errorf("cluster client for the webhook configuration: %w", err)
	}
	return nil
}

// restConfig is the client configuration of the cluster s names (KUBE_CONFIG,
// KUBE_CONTEXT, in-cluster). It has no overall request timeout, so that
// watches live; backends bound their own requests.
func (s Settings) restConfig() (*rest.Config, error) {
	rc, err := kube.RESTConfig(kube.Options{Kubeconfig: s.KubeConfig, Context: s.KubeContext, UserAgent: "strata-operator"})
	if err != nil {
		return nil, fmt.Errorf("cluster (KUBE_CONFIG, KUBE_CONTEXT): %w", err)
	}
	rc.Timeout = 0
	// Every client made from rc gets its own limiter of this rate. client-go
	// reads QPS 0 as its default (5) and a negative QPS as no limit.
	rc.QPS, rc.Burst = s.KubeClientQPS, s.KubeClientBurst
	return rc, nil
}
