package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Kinds of an extraConfigs entry.
const (
	KindConfigMap = "configMap"
	KindSecret    = "secret"
)

// App is a Helm chart from a catalog, installed with values merged from
// layers: the catalog's config, extraConfigs, config and userConfig.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type App struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AppSpec   `json:"spec"`
	Status AppStatus `json:"status,omitempty"`
}

// AppSpec is what to install and where its values come from.
type AppSpec struct {
	// Catalog names the Catalog the chart comes from; its config is the
	// bottom layer of the values.
	Catalog string `json:"catalog"`
	// CatalogNamespace is the namespace of the Catalog; empty means
	// "default".
	// +optional
	CatalogNamespace string `json:"catalogNamespace,omitempty"`
	// Name is the chart's name in the catalog.
	Name string `json:"name"`
	// Namespace is where the chart is installed.
	Namespace string `json:"namespace"`
	// Version is the chart's version.
	Version string `json:"version"`

	// Config is the cluster layer (priority 50).
	// +optional
	Config AppConfig `json:"config,omitempty"`
	// UserConfig is the user layer (priority 100).
	// +optional
	UserConfig AppConfig `json:"userConfig,omitempty"`
	// ExtraConfigs are further layers placed by their priority: 1..50
	// before config, 51..100 before userConfig, 101..150 after it. Entries
	// of equal priority merge in list order, the later one winning.
	// +optional
	ExtraConfigs []ExtraConfig `json:"extraConfigs,omitempty"`

	// KubeConfig says which cluster to install into. strata reads it but
	// does not use it.
	// +optional
	KubeConfig AppKubeConfig `json:"kubeConfig,omitempty"`
	// NamespaceConfig holds labels and annotations for the target
	// namespace. strata reads it but does not use it.
	// +optional
	NamespaceConfig AppNamespaceConfig `json:"namespaceConfig,omitempty"`
	// Install, Upgrade, Rollback and Uninstall tune the Helm actions.
	// strata reads them but does not use them.
	// +optional
	Install AppHelmAction `json:"install,omitempty"`
	// +optional
	Upgrade AppHelmAction `json:"upgrade,omitempty"`
	// +optional
	Rollback AppHelmAction `json:"rollback,omitempty"`
	// +optional
	Uninstall AppHelmAction `json:"uninstall,omitempty"`
}

// AppConfig refers to a ConfigMap and a Secret holding values.
type AppConfig struct {
	// +optional
	ConfigMap ObjectRef `json:"configMap,omitempty"`
	// +optional
	Secret ObjectRef `json:"secret,omitempty"`
}

// ObjectRef names a namespaced object. An empty name means no object.
type ObjectRef struct {
	// +optional
	Name string `json:"name,omitempty"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// IsSet reports whether the reference names an object.
func (r ObjectRef) IsSet() bool { return r.Name != "" || r.Namespace != "" }

// ExtraConfig is one more ConfigMap or Secret of values, placed by priority.
type ExtraConfig struct {
	// Kind is configMap (the default) or secret.
	// +kubebuilder:validation:Enum=configMap;secret
	// +optional
	Kind string `json:"kind,omitempty"`
	Name string `json:"name"`
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace"`
	// Priority places the layer: 1..50 merge before config, 51..100
	// before userConfig, 101..150 after it. 0 or unset means 25.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=150
	// +optional
	Priority int `json:"priority,omitempty"`
	// Optional tolerates a missing object or a missing values key (a
	// strata extension; Giant Swarm's app-operator does not know it).
	// +optional
	Optional bool `json:"optional,omitempty"`
}

// AppKubeConfig says which cluster an App installs into.
type AppKubeConfig struct {
	// +optional
	InCluster bool `json:"inCluster,omitempty"`
	// +optional
	Context AppKubeConfigContext `json:"context,omitempty"`
	// +optional
	Secret ObjectRef `json:"secret,omitempty"`
}

// AppKubeConfigContext names a kubeconfig context.
type AppKubeConfigContext struct {
	// +optional
	Name string `json:"name,omitempty"`
}

// AppNamespaceConfig holds metadata for the target namespace.
type AppNamespaceConfig struct {
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
}

// AppHelmAction tunes one Helm action.
type AppHelmAction struct {
	// +optional
	SkipCRDs bool `json:"skipCRDs,omitempty"`
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// AppStatus is what the layers controller observed.
type AppStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions of the App; Ready says whether the merged values are up
	// to date, with a reason and a message when they are not.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// AppList is a list of Apps.
//
// +kubebuilder:object:root=true
type AppList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []App `json:"items"`
}

// Catalog is a source of charts; its config is the bottom layer of the
// values of every App installed from it.
//
// +kubebuilder:object:root=true
type Catalog struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec CatalogSpec `json:"spec"`
}

// CatalogSpec describes a catalog.
type CatalogSpec struct {
	// +optional
	Title string `json:"title,omitempty"`
	// +optional
	Description string `json:"description,omitempty"`
	// Config holds the catalog's values: the bottom layer (priority 0).
	// +optional
	Config CatalogConfig `json:"config,omitempty"`
	// +optional
	LogoURL string `json:"logoURL,omitempty"`
	// +optional
	Storage CatalogStorage `json:"storage,omitempty"`
	// +optional
	Repositories []CatalogStorage `json:"repositories,omitempty"`
}

// CatalogConfig refers to the catalog's ConfigMap and Secret of values.
type CatalogConfig struct {
	// +optional
	ConfigMap ObjectRef `json:"configMap,omitempty"`
	// +optional
	Secret ObjectRef `json:"secret,omitempty"`
}

// CatalogStorage is where a catalog's charts are stored.
type CatalogStorage struct {
	// +optional
	Type string `json:"type,omitempty"`
	// +optional
	URL string `json:"URL,omitempty"`
}

// CatalogList is a list of Catalogs.
//
// +kubebuilder:object:root=true
type CatalogList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Catalog `json:"items"`
}
