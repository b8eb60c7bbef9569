package cli

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/kube"
	"github.com/strata-dev/strata/internal/layers"
	"github.com/strata-dev/strata/internal/layers/controller"
	"github.com/strata-dev/strata/internal/values"
)

func newLayersCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "layers",
		Short: "Layered App values: merge and explain the values of Giant Swarm App CRs",
	}
	cmd.AddCommand(newLayersRenderCmd(g))
	cmd.AddCommand(newLayersControllerCmd(g))
	return cmd
}

// layersRender binds the flags of `layers render`.
type layersRender struct {
	from        string
	kubeconfig  string
	context     string
	app         string
	output      string
	explain     string
	showSecrets bool
	noCatalog   bool
	valuesOnly  bool
	allowed     []string
}

func newLayersRenderCmd(g *globals) *cobra.Command {
	var f layersRender
	cmd := &cobra.Command{
		Use:   "render APP.yaml [--from DIR | --kubeconfig FILE --context NAME] [--explain[=PATH]]",
		Short: "Merge an App's values from its catalog, extraConfigs, config and userConfig",
		Long: `Merge the values of an App (application.giantswarm.io/v1alpha1) in the order of
the "Multi layer app configs" RFC:

  catalog (0) → extraConfigs 1..50 → config (50) → extraConfigs 51..100
  → userConfig (100) → extraConfigs 101..150

Lower priorities merge first; equal priorities merge in list order, the later
entry winning; an extraConfig without a priority has 25; one at exactly 50
merges before config, at exactly 100 before userConfig. ConfigMaps and Secrets
are merged as two separate chains, then the Secret result over the ConfigMap
result. Merging follows Helm: maps merge deeply, lists and scalars are replaced
whole, null removes a key.

The App comes from APP.yaml (- for stdin); the Catalog, ConfigMaps and Secrets
from the Kubernetes YAML files under --from (default: APP.yaml's directory),
or from a cluster with --kubeconfig and/or --context. A ConfigMap holds its
values under data.values; a Secret under data.values or data.secrets (or the
same keys of stringData).

The output holds the layers in merge order and the merged values:
configMapValues, secretValues and values (the Secret result over the
ConfigMap result). Values that came from a Secret are printed as <redacted>
unless --show-secrets. --values-only prints just the merged values, for
helm -f.

The render reads any namespace the App names: the files are yours, and a
cluster is read with your own credentials. --allowed-namespaces applies the
controller's rule instead (the App's own namespace and those listed), to see
before deploying whether the controller would refuse an App.

--explain prints, for every key, the final value, the layer that set it
(kind, namespace/name, the App field that lists it, its priority) and every
value it overrode. --explain=PATH restricts it to one key or subtree.`,
		Example: `  strata layers render examples/layers/app.yaml
  strata layers render app.yaml --from gitops/ --explain
  strata layers render app.yaml --explain=ingress.replicas -o json
  strata layers render app.yaml --context prod --values-only --show-secrets | helm template chart -f -`,
		Args: positional("APP.yaml"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, g, args[0])
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.from, "from", "", "read the Catalog, ConfigMaps and Secrets from the YAML files under this directory (default: APP.yaml's directory)")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "read them from the cluster of this kubeconfig instead")
	fs.StringVar(&f.context, "context", "", "read them from the cluster of this kubeconfig context instead")
	fs.StringVar(&f.app, "app", "", "the App to render when APP.yaml holds several: NAME or NAMESPACE/NAME")
	fs.StringVarP(&f.output, "output", "o", "yaml", "output format: yaml or json (with --explain also text, the default)")
	addExplainFlag(fs, &f.explain)
	fs.BoolVar(&f.showSecrets, "show-secrets", false, "print values that came from Secrets instead of <redacted>")
	fs.BoolVar(&f.noCatalog, "no-catalog", false, "leave the Catalog's layers out (when its manifest is not at hand)")
	fs.BoolVar(&f.valuesOnly, "values-only", false, "print only the merged values")
	fs.StringSliceVar(&f.allowed, "allowed-namespaces", nil, "refuse layers outside the App's namespace and these, as the controller does (default: read any namespace)")
	return cmd
}

func (f *layersRender) run(cmd *cobra.Command, g *globals, appFile string) error {
	log, err := g.logger()
	if err != nil {
		return err
	}
	explaining := cmd.Flags().Changed("explain")
	if explaining && f.valuesOnly {
		return errors.New("--values-only and --explain exclude each other")
	}
	cluster := cmd.Flags().Changed("kubeconfig") || cmd.Flags().Changed("context")
	if cluster && f.from != "" {
		return errors.New("--from reads files, --kubeconfig and --context a cluster: use one or the other")
	}
	doc, err := f.readApp(g, appFile)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	var src layers.Source
	if cluster {
		cfg, err := kube.RESTConfig(kube.Options{Kubeconfig: f.kubeconfig, Context: f.context})
		if err != nil {
			return err
		}
		c, err := kube.New(cfg)
		if err != nil {
			return err
		}
		src = layers.ClusterSource{Client: c}
	} else {
		dir := f.from
		if dir == "" {
			dir = filepath.Dir(appFile)
			if appFile == "-" {
				dir = "."
			}
		}
		ds, err := layers.ReadDir(ctx, dir, layers.Limits{})
		if err != nil {
			return err
		}
		for _, e := range ds.Skipped {
			log.Debug("skipped a file that is not valid YAML", "error", e)
		}
		src = ds
	}
	// Files are the user's own, and a cluster is read with the user's
	// credentials: any namespace, unless asked to check as the controller.
	nss := layers.Namespaces{Any: true}
	if cmd.Flags().Changed("allowed-namespaces") {
		if nss, err = layers.ParseNamespaces(f.allowed, "--allowed-namespaces"); err != nil {
			return err
		}
	}
	r := layers.Renderer{Source: src, Provenance: explaining, SkipCatalog: f.noCatalog, Namespaces: nss}
	res, err := r.Render(ctx, doc.App, doc.Location)
	if err != nil {
		if errors.Is(err, layers.ErrCatalogNotFound) {
			return fmt.Errorf("%w\n(add the Catalog's manifest, or leave its layers out with --no-catalog)", err)
		}
		return err
	}
	for _, m := range res.Missing {
		log.Debug("optional layer is missing: left out", "app", res.Plan.App, "layer", m.String(), "field", m.Field)
	}
	if explaining {
		return f.writeExplanation(cmd, g, res)
	}
	format, err := document.ParseFormat(f.output)
	if err != nil {
		return err
	}
	secretValues, merged := res.SecretValues, res.Values
	if !f.showSecrets {
		if secretValues, merged, err = res.Redacted(); err != nil {
			return err
		}
	}
	if f.valuesOnly {
		return document.Encode(g.stdout, merged, format)
	}
	return document.EncodeOrdered(g.stdout,
		[]string{"app", "layers", "configMapValues", "secretValues", "values"},
		[]any{res.Plan.App, layerList(res), res.ConfigMapValues, secretValues, merged}, format)
}

// readApp reads the App to render from a file or stdin.
func (f *layersRender) readApp(g *globals, file string) (layers.AppDoc, error) {
	var data []byte
	var err error
	lim := layers.DefaultLimits().MaxFileBytes
	if file == "-" {
		file = "<stdin>"
		data, err = document.ReadAll(g.stdin, lim, file)
	} else {
		data, err = document.ReadFile(file, lim)
	}
	if err != nil {
		return layers.AppDoc{}, fmt.Errorf("reading the App: %w", err)
	}
	apps, err := layers.ReadApps(data, file)
	if err != nil {
		return layers.AppDoc{}, err
	}
	return layers.SelectApp(apps, file, f.app, "--app NAMESPACE/NAME")
}

// layerList describes the layers in merge order, numbered as explanations
// number them; missing optional layers have no number.
func layerList(res *layers.Rendered) []any {
	missing := map[string]bool{}
	for _, m := range res.Missing {
		missing[m.Kind+" "+m.Field] = true
	}
	var out []any
	n := 0
	for _, chain := range [][]layers.Ref{res.Plan.ConfigMaps, res.Plan.Secrets} {
		for _, r := range chain {
			l := map[string]any{
				"kind": r.Kind, "namespace": r.Namespace, "name": r.Name,
				"role": string(r.Role), "field": r.Field, "priority": int64(r.Priority),
			}
			if missing[r.Kind+" "+r.Field] {
				l["missing"] = true
			} else {
				n++
				l["layer"] = int64(n)
			}
			out = append(out, l)
		}
	}
	if out == nil {
		out = []any{}
	}
	return out
}

func (f *layersRender) writeExplanation(cmd *cobra.Command, g *globals, res *layers.Rendered) error {
	p, err := explainPath(f.explain)
	if err != nil {
		return err
	}
	exps, err := res.Explain(p, values.ExplainOptions{ShowSensitive: f.showSecrets})
	if err != nil {
		return err
	}
	format := f.output
	if !cmd.Flags().Changed("output") {
		format = "text"
	}
	if format == "text" {
		var b strings.Builder
		fmt.Fprintf(&b, "# App %s: layers in merge order (ConfigMaps, then Secrets)\n", res.Plan.App)
		for _, l := range layerList(res) {
			m := l.(map[string]any)
			num := "  -"
			if n, ok := m["layer"].(int64); ok {
				num = fmt.Sprintf("%3d", n)
			}
			fmt.Fprintf(&b, "# %s %s %s/%s  %s, priority %d", num, m["kind"], m["namespace"], m["name"], m["field"], m["priority"])
			if m["missing"] == true {
				b.WriteString(" (optional, missing: left out)")
			}
			b.WriteString("\n")
		}
		if _, err := io.WriteString(g.stdout, b.String()); err != nil {
			return err
		}
	}
	return values.WriteExplanations(g.stdout, exps, format)
}

// newLayersControllerCmd binds the flags of `layers controller` onto a
// controller.Manager.
func newLayersControllerCmd(g *globals) *cobra.Command {
	var kubeconfig, kubeContext string
	var allowed []string
	m := controller.Manager{
		MetricsBindAddress:     ":8080",
		HealthProbeBindAddress: ":8081",
		Concurrency:            controller.DefaultConcurrency,
	}
	cmd := &cobra.Command{
		Use:         "controller [--namespace NS] [--leader-elect --leader-election-namespace NS]",
		Annotations: map[string]string{serverAnnotation: "true"},
		Short:       "Reconcile App CRs in a cluster: write their merged values to a ConfigMap and a Secret",
		Long: `Run a controller that merges the values of every App (application.giantswarm.io/v1alpha1)
as "strata layers render" does, and writes them next to the App:

  ConfigMap <app>-chart-values   data.values: the merged ConfigMap layers
  Secret    <app>-chart-secrets  data.values: the merged Secret layers

Both are controlled by the App (deleted with it) and written only when their
content changes. A change to any ConfigMap, Secret or Catalog an App uses
reaches its outputs within seconds.

An App reads only its own namespace and the namespaces --allowed-namespaces
lists (the Catalogs', the platform's configuration): a layer or Catalog
elsewhere fails the App (reason NamespaceNotAllowed) and nothing of it is
read. --allowed-namespaces='*' reads any namespace, as Giant Swarm's
app-operator does: only for a cluster whose App authors may read every
ConfigMap and Secret anyway.

The App's Ready condition tells whether the outputs are up to date. When a
layer is missing or invalid it turns False with a reason (NamespaceNotAllowed, InvalidSpec,
CatalogNotFound, ConfigMapMergeFailed, SecretMergeFailed, OutputConflict,
WriteFailed) and a message naming the object and the field listing it; the
last good outputs are kept, and a Warning Event is recorded.

Run several replicas with --leader-elect: they elect a leader on a Lease, and
only the leader writes. /metrics (controller-runtime's metrics and
strata_layers_*) and /healthz, /readyz are served on their own addresses
("0" turns one off). SIGTERM stops it gracefully.`,
		Example: `  strata layers controller --kubeconfig ~/.kube/config --namespace m2m01
  strata layers controller --allowed-namespaces giantswarm,platform-config
  strata layers controller --leader-elect --leader-election-namespace strata-system --log-format json`,
		Args: positional(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := g.logger()
			if err != nil {
				return err
			}
			if m.Concurrency < 1 {
				return fmt.Errorf("--concurrency %d: use 1 or more", m.Concurrency)
			}
			if m.Namespaces, err = layers.ParseNamespaces(allowed, "the controller's --allowed-namespaces"); err != nil {
				return err
			}
			cfg, err := kube.RESTConfig(kube.Options{Kubeconfig: kubeconfig, Context: kubeContext,
				UserAgent: "strata-layers-controller"})
			if err != nil {
				return err
			}
			controller.SetProcessLogger(log)
			logStart(log, "layers controller")
			if _, err := setMemoryLimit(log, "layers controller", nil); err != nil {
				return err
			}
			m.Config, m.Logger = cfg, log
			return m.Run(cmd.Context())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then the pod's service account)")
	fs.StringVar(&kubeContext, "context", "", "kubeconfig context (default: its current context)")
	fs.StringVar(&m.Namespace, "namespace", "", "reconcile the Apps of this namespace only, reading layers from it alone (default: all namespaces)")
	fs.BoolVar(&m.SkipCatalog, "no-catalog", false, "leave the Catalogs' layers out, and do not watch Catalogs")
	fs.StringSliceVar(&allowed, "allowed-namespaces", nil, "namespaces every App may read besides its own (Catalogs, platform config); '*' for any (default: its own only)")
	fs.IntVar(&m.Concurrency, "concurrency", m.Concurrency, "Apps reconciled at once")
	fs.BoolVar(&m.LeaderElection, "leader-elect", false, "elect a leader among the replicas on a Lease; only the leader reconciles")
	fs.StringVar(&m.LeaderElectionID, "leader-election-id", controller.DefaultLeaderElectionID, "name of the Lease")
	fs.StringVar(&m.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the Lease (default: the pod's namespace)")
	fs.StringVar(&m.MetricsBindAddress, "metrics-bind-address", m.MetricsBindAddress, "address of /metrics; 0 turns it off")
	fs.StringVar(&m.HealthProbeBindAddress, "health-probe-bind-address", m.HealthProbeBindAddress, "address of /healthz and /readyz; 0 turns them off")
	return cmd
}
