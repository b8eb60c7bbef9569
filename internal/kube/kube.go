// Package kube is strata's access to Kubernetes API servers through
// client-go: a rest.Config from a kubeconfig with kubectl's loading rules,
// and a small Client with the typed and dynamic getters the capability
// packages need. Errors for objects that do not exist wrap ErrNotFound.
package kube

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// ErrNotFound is wrapped by the errors for objects that do not exist.
var ErrNotFound = errors.New("not found")

// DefaultTimeout bounds each request when Options.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// Options choose the cluster to talk to.
type Options struct {
	// Kubeconfig is a kubeconfig file; empty means $KUBECONFIG, then
	// ~/.kube/config, then the in-cluster service account, as kubectl does.
	Kubeconfig string
	// Context is the kubeconfig context; empty means its current context.
	Context string
	// Timeout bounds each request; zero means DefaultTimeout.
	Timeout time.Duration
	// UserAgent identifies strata to the API server; empty means "strata".
	UserAgent string
}

// RESTConfig builds the client configuration the options ask for.
func RESTConfig(o Options) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if o.Kubeconfig != "" {
		rules.ExplicitPath = o.Kubeconfig
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: o.Context}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		where := "the kubeconfig ($KUBECONFIG or ~/.kube/config)"
		if o.Kubeconfig != "" {
			where = o.Kubeconfig
		}
		if o.Context != "" {
			where += " context " + o.Context
		}
		return nil, fmt.Errorf("loading %s: %w", where, err)
	}
	cfg.Timeout = o.Timeout
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	cfg.UserAgent = o.UserAgent
	if cfg.UserAgent == "" {
		cfg.UserAgent = "strata"
	}
	return cfg, nil
}

// Client reads objects from one API server.
type Client struct {
	host string
	core kubernetes.Interface
	dyn  dynamic.Interface
}

// New returns a Client for cfg.
func New(cfg *rest.Config) (*Client, error) {
	core, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating a Kubernetes client for %s: %w", cfg.Host, err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating a Kubernetes client for %s: %w", cfg.Host, err)
	}
	return &Client{host: cfg.Host, core: core, dyn: dyn}, nil
}

// Host is the API server's address.
func (c *Client) Host() string { return c.host }

// ConfigMap gets a ConfigMap.
func (c *Client) ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	cm, err := c.core.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, c.wrap("ConfigMap", "configmaps", namespace, name, err)
	}
	return cm, nil
}

// Secret gets a Secret.
func (c *Client) Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	s, err := c.core.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, c.wrap("Secret", "secrets", namespace, name, err)
	}
	return s, nil
}

// Object gets a namespaced object of any resource, as the API server
// returns it in JSON: maps, lists, strings, booleans, int64 and float64.
func (c *Client) Object(ctx context.Context, res schema.GroupVersionResource, namespace, name string) (map[string]any, error) {
	u, err := c.dyn.Resource(res).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, c.wrap(res.GroupResource().String(), res.Resource, namespace, name, err)
	}
	return u.Object, nil
}

func (c *Client) wrap(kind, resource, namespace, name string, err error) error {
	var se apierrors.APIStatus
	switch {
	case apierrors.IsNotFound(err) && errors.As(err, &se) && (se.Status().Details == nil || se.Status().Details.Name == ""):
		// The resource type, not the object, is missing.
		return fmt.Errorf("reading %s %s/%s: the API server at %s does not serve %s (is its CustomResourceDefinition installed?): %w", kind, namespace, name, c.host, resource, err)
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s %s/%s: %w in the cluster at %s", kind, namespace, name, ErrNotFound, c.host)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("reading %s %s/%s: %w (the credentials need get on %s in namespace %s)", kind, namespace, name, err, resource, namespace)
	}
	return fmt.Errorf("reading %s %s/%s from %s: %w", kind, namespace, name, c.host, err)
}

// List lists the objects of a resource in namespace that match
// labelSelector and fieldSelector (Kubernetes selector syntax; empty
// selects all), as the API server returns them in JSON.
func (c *Client) List(ctx context.Context, res schema.GroupVersionResource, namespace, labelSelector, fieldSelector string) ([]map[string]any, error) {
	l, err := c.dyn.Resource(res).Namespace(namespace).List(ctx, metav1.ListOptions{LabelSelector: labelSelector, FieldSelector: fieldSelector})
	if err != nil {
		var se apierrors.APIStatus
		switch {
		case apierrors.IsNotFound(err) && errors.As(err, &se):
			return nil, fmt.Errorf("listing %s in namespace %s: the API server at %s does not serve %s (is its CustomResourceDefinition installed?): %w", res.GroupResource(), namespace, c.host, res.Resource, err)
		case apierrors.IsForbidden(err):
			return nil, fmt.Errorf("listing %s in namespace %s: %w (the credentials need list on %s in namespace %s)", res.GroupResource(), namespace, err, res.Resource, namespace)
		}
		return nil, fmt.Errorf("listing %s in namespace %s from %s: %w", res.GroupResource(), namespace, c.host, err)
	}
	out := make([]map[string]any, len(l.Items))
	for i := range l.Items {
		out[i] = l.Items[i].Object
	}
	return out, nil
}
