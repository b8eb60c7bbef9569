package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/generator"
	"github.com/strata-dev/strata/internal/generator/appset"
	"github.com/strata-dev/strata/internal/kube"
)

func newAppsetCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "appset",
		Short: "Work with Argo CD ApplicationSets without a cluster",
	}
	cmd.AddCommand(newAppsetRenderCmd(g))
	return cmd
}

// appsetRenderFlags binds the flags of appset render.
type appsetRenderFlags struct {
	pluginConfigs []string
	secrets       []string
	tokens        []string
	output        string
	timeout       time.Duration
	argocd        string
	templateTime  time.Duration
	templateSteps int64
	valueBytes    int64
	templateBytes int64
	repos         []string
	repoWorktree  bool
	newGlobbing   bool
	hiddenDirs    bool
	repoLimits    appset.RepoLimits
	maxApps       int
	objects       []string
	kubeconfig    string
	context       string
	namespace     string
}

func newAppsetRenderCmd(g *globals) *cobra.Command {
	var f appsetRenderFlags
	cmd := &cobra.Command{
		Use:   "render APPSET.yaml [--repo URL=DIR]... [--secret FILE]... [--objects FILE]... [--kubeconfig FILE] [--plugin-config FILE]... [-o yaml|json]",
		Short: "Print the Applications an ApplicationSet generates, as the ApplicationSet controller would",
		Long: `Evaluate an ApplicationSet's generators (list, git, clusters,
clusterDecisionResource, plugin, matrix, merge) and render
its template once per parameter set, with the ApplicationSet controller's
semantics, and print the Applications it would create: a YAML stream, or with
-o json a List.

Plugin generators call the plugin over HTTP, as the controller does, with the
base URL, token and requestTimeout of the plugin's ConfigMap. Pass that
ConfigMap with --plugin-config; its token ("$key" for a key of argocd-secret,
"$secret:key" for another Secret) is read from the Secret manifests passed
with --secret (or --plugin-config). --token NAME=VALUE, or the environment
variable STRATA_APPSET_TOKEN_<NAME> (NAME in upper case, other characters
as _), gives the token of ConfigMap NAME directly and wins over the Secret.

Git generators read the repository their repoURL names from a local
directory: --repo URL=DIR maps it. A DIR that is a git repository (a
checkout, a worktree, a bare repository) is read at the generator's revision
(a branch, a tag, a commit, HEAD) without a git process and without the
network; --repo-worktree reads its files as they are instead, uncommitted
changes included. Any other DIR is read as it is. Files are selected as the
repo-server selects them (git ls-files pathspecs, or doublestar globs with
--enable-new-git-file-globbing).

Clusters generators read Argo CD's cluster Secrets (label
argocd.argoproj.io/secret-type: cluster) from the Secret manifests passed
with --secret, or from a cluster with --kubeconfig/--context, in the Argo CD
namespace (--argocd-namespace); clusterDecisionResource generators read
their ConfigMap and duck-typed resources the same way, from --objects files
or the cluster. scmProvider and pullRequest generators, which ask an SCM
provider's API, are errors that say what to stand in for them.

The controller followed is that of the newest Argo CD (3.5); --argocd-version
selects an older release where they differ (nested selectors before 3.0, a
matrix's plugin values before 3.4.4, selectors over plugin values before
3.4): see docs/appset.md. Templates share a budget per file: --template-timeout
of running time, and bounded steps and sizes, so a hostile template fails
with an error instead of hanging or exhausting memory.`,
		Example: `  strata appset render examples/appset/list/appset.yaml
  strata appset render appset.yaml --repo https://github.com/org/gitops.git=.
  strata appset render appset.yaml --plugin-config plugin-cm.yaml --secret argocd-secret.yaml
  STRATA_APPSET_TOKEN_MY_PLUGIN=s3cr3t strata appset render appset.yaml --plugin-config cm.yaml -o json`,
		Args: positional("APPSET.yaml"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd.Context(), g, args[0])
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVar(&f.pluginConfigs, "plugin-config", nil, "a file of plugin ConfigMap manifests (Secrets in it are read too)")
	fs.StringArrayVar(&f.secrets, "secret", nil, "a file of Secret manifests that plugin ConfigMaps' tokens refer to")
	fs.StringArrayVar(&f.repos, "repo", nil, "URL=DIR: read the repository URL (as git generators name it) from DIR, a git repository read at the generator's revision or a plain directory")
	fs.BoolVar(&f.repoWorktree, "repo-worktree", false, "read git repositories given with --repo as their files are on disk, uncommitted changes included, ignoring revisions")
	fs.BoolVar(&f.newGlobbing, "enable-new-git-file-globbing", false, "select git files generator files with doublestar globs (* within a directory, ** across), as the controller does with this flag")
	fs.BoolVar(&f.hiddenDirs, "include-hidden-directories", false, "list directories whose names start with . to git directories generators, as the repo-server does with this flag")
	fs.IntVar(&f.maxApps, "max-applications", appset.DefaultLimits().MaxParamSets, "parameter sets one generator may produce, and Applications in all (0 or negative: the default)")
	fs.IntVar(&f.repoLimits.MaxFiles, "repo-max-files", appset.DefaultRepoLimits().MaxFiles, "files one git files pattern may select")
	fs.Int64Var(&f.repoLimits.MaxFileBytes, "repo-max-file-bytes", appset.DefaultRepoLimits().MaxFileBytes, "bytes of one file a git files generator reads")
	fs.IntVar(&f.repoLimits.MaxEntries, "repo-max-entries", appset.DefaultRepoLimits().MaxEntries, "files and directories of one repository tree")
	fs.StringArrayVar(&f.objects, "objects", nil, "a file of manifests in the Argo CD namespace that clusterDecisionResource generators read (ConfigMaps, duck-typed resources; cluster Secrets too)")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "read cluster Secrets, ConfigMaps and duck-typed resources from the cluster of this kubeconfig instead of files")
	fs.StringVar(&f.context, "context", "", "read them from the cluster of this kubeconfig context instead of files")
	fs.StringVar(&f.namespace, "argocd-namespace", appset.DefaultNamespace, "the namespace Argo CD (its ApplicationSet controller) runs in, where its cluster Secrets are")
	fs.StringArrayVar(&f.tokens, "token", nil, "NAME=VALUE: the token of the plugin configured by ConfigMap NAME (visible to other local users; prefer $STRATA_APPSET_TOKEN_<NAME>)")
	fs.StringVarP(&f.output, "output", "o", "yaml", "output format: yaml (a stream of documents), json (a List) or name (application.argoproj.io/NAME lines, as kubectl -o name prints)")
	fs.DurationVar(&f.timeout, "timeout", appset.DefaultTimeout, "give up rendering after this long, plugin calls included (0: the default; negative, e.g. -1s: no limit)")
	fs.StringVar(&f.argocd, "argocd-version", "", fmt.Sprintf("render as the ApplicationSet controller of this Argo CD release, MAJOR.MINOR[.PATCH], %d.%d to %d.%d (default: %d.%d, the newest)", appset.Oldest.Major, appset.Oldest.Minor, appset.Latest.Major, appset.Latest.Minor, appset.Latest.Major, appset.Latest.Minor))
	fs.DurationVar(&f.templateTime, "template-timeout", appset.DefaultTemplateTime, "time the templates of the file may run in all, plugin calls not included (0 or negative: the default)")
	fs.Int64Var(&f.templateSteps, "template-max-steps", appset.DefaultLimits().MaxTemplateOps, "steps the templates of the file may take in all: range iterations, template and function calls (0 or negative: the default)")
	fs.Int64Var(&f.valueBytes, "template-max-value-bytes", appset.DefaultLimits().MaxValueBytes, "bytes of one value a template function takes or returns (0 or negative: the default)")
	fs.Int64Var(&f.templateBytes, "template-max-bytes", appset.DefaultLimits().MaxTemplateBytes, "bytes template functions of the file may return in all (0 or negative: the default)")
	return cmd
}

func (f *appsetRenderFlags) run(ctx context.Context, g *globals, file string) error {
	log, err := g.logger()
	if err != nil {
		return err
	}
	byName := f.output == "name"
	format := document.YAML
	if !byName {
		if format, err = document.ParseFormat(f.output); err != nil {
			return fmt.Errorf("%w, or name", err)
		}
	}
	plugins := &appset.PluginSet{Tokens: map[string]string{}, LookupEnv: os.LookupEnv}
	for _, t := range f.tokens {
		name, val, ok := strings.Cut(t, "=")
		if !ok || name == "" {
			return fmt.Errorf("--token %q: use NAME=VALUE, NAME being the plugin's ConfigMap name", tokenArgHint(t))
		}
		plugins.Tokens[name] = val
	}
	for _, files := range []struct {
		list        []string
		secretsOnly bool
	}{{f.pluginConfigs, false}, {f.secrets, true}} {
		for _, p := range files.list {
			data, err := readAppsetFile(g, p, appset.MaxFileBytes)
			if err != nil {
				return err
			}
			if err := plugins.Load(data, p, files.secretsOnly); err != nil {
				return err
			}
		}
	}
	repos := &appset.LocalRepos{Worktree: f.repoWorktree, NewGlobbing: f.newGlobbing, IncludeHiddenDirectories: f.hiddenDirs,
		Limits: f.repoLimits, Warn: func(m string) { log.Warn(m) }}
	for _, r := range f.repos {
		url, dir, ok := strings.Cut(r, "=")
		if !ok || url == "" || dir == "" {
			return fmt.Errorf("--repo %q: use URL=DIR, URL as the generators' repoURL names it, DIR a checkout or a git repository", r)
		}
		if err := repos.Map(url, dir); err != nil {
			return fmt.Errorf("--repo %s: %w", r, err)
		}
	}
	objects, err := f.objectLister(g)
	if err != nil {
		return err
	}
	var version appset.Version
	if f.argocd != "" {
		var newer bool
		if version, newer, err = appset.ParseVersion(f.argocd); err != nil {
			return fmt.Errorf("--argocd-version: %w", err)
		}
		if newer {
			log.Warn("strata does not know this Argo CD release yet; rendering as the newest it knows", "argocdVersion", f.argocd, "renderingAs", version.String())
		}
	}
	data, err := readAppsetFile(g, file, appset.MaxFileBytes)
	if err != nil {
		return err
	}
	sets, err := appset.ParseAll(data, file)
	if err != nil {
		return err
	}
	render := appset.File{
		Renderer: &appset.Renderer{
			Plugins: plugins.Resolver(func(c appset.PluginConfig) appset.ParamsGetter {
				log.Debug("plugin configured", "configMap", c.Name, "baseUrl", c.BaseURL, "timeout", c.Timeout, "token", c.Token != "")
				return &generator.Client{BaseURL: c.BaseURL, Token: c.Token, Timeout: c.Timeout, Warn: func(m string) { log.Warn(m) }}
			}),
			Repos:     repos,
			Objects:   objects,
			Namespace: f.namespace,
			Version:   version,
			Limits:    appset.Limits{MaxParamSets: f.maxApps, TemplateTime: f.templateTime, MaxTemplateOps: f.templateSteps, MaxValueBytes: f.valueBytes, MaxTemplateBytes: f.templateBytes},
		},
		Timeout: f.timeout,
		Logger:  log,
	}
	apps, err := render.Render(ctx, sets)
	if errors.Is(err, appset.ErrTimeout) {
		return fmt.Errorf("rendering %s: %w (--timeout)", file, err)
	}
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if byName {
		writeNames(&b, apps)
	} else if format == document.JSON {
		items := make([]any, len(apps))
		for i, a := range apps {
			items[i] = a
		}
		list := map[string]any{"apiVersion": "v1", "kind": "List", "items": items}
		if err := document.Encode(&b, list, document.JSON); err != nil {
			return err
		}
	} else {
		for i, a := range apps {
			if i > 0 {
				b.WriteString("---\n")
			}
			if err := document.Encode(&b, a, document.YAML); err != nil {
				return err
			}
		}
	}
	_, err = g.stdout.Write(b.Bytes())
	return err
}

// writeNames writes kubectl's -o name line for each Application:
// kind.group/name, the kind in lower case.
func writeNames(b *bytes.Buffer, apps []map[string]any) {
	for _, a := range apps {
		name, _ := nestedString(a, "metadata", "name")
		b.WriteString("application.argoproj.io/" + name + "\n")
	}
}

// nestedString returns the string at keys inside m.
func nestedString(m map[string]any, keys ...string) (string, bool) {
	var v any = m
	for _, k := range keys {
		mm, ok := v.(map[string]any)
		if !ok {
			return "", false
		}
		v = mm[k]
	}
	s, ok := v.(string)
	return s, ok
}

// readAppsetFile reads a file ("-": standard input) of at most max bytes.
func readAppsetFile(g *globals, path string, max int64) ([]byte, error) {
	if path == "-" {
		return document.ReadAll(g.stdin, max, "<stdin>")
	}
	return document.ReadFile(path, max)
}

// tokenArgHint shows a malformed --token argument without its value.
func tokenArgHint(s string) string {
	if len(s) > 8 {
		return s[:4] + "..."
	}
	return "..."
}

// objectLister is where clusters and clusterDecisionResource generators
// read objects: the cluster with --kubeconfig or --context, else the
// --secret and --objects files, else nowhere (those generators are errors
// naming the flags).
func (f *appsetRenderFlags) objectLister(g *globals) (appset.ObjectLister, error) {
	if f.kubeconfig != "" || f.context != "" {
		if len(f.objects) > 0 {
			return nil, errors.New("--objects reads files, --kubeconfig and --context a cluster: use one or the other")
		}
		cfg, err := kube.RESTConfig(kube.Options{Kubeconfig: f.kubeconfig, Context: f.context})
		if err != nil {
			return nil, err
		}
		c, err := kube.New(cfg)
		if err != nil {
			return nil, err
		}
		return clusterObjects{c}, nil
	}
	if len(f.secrets) == 0 && len(f.objects) == 0 {
		return nil, nil
	}
	objs := &appset.Objects{}
	for _, p := range append(append([]string(nil), f.secrets...), f.objects...) {
		data, err := readAppsetFile(g, p, appset.MaxFileBytes)
		if err != nil {
			return nil, err
		}
		if err := objs.Load(data, p); err != nil {
			return nil, err
		}
	}
	return objs, nil
}

// clusterObjects lists objects from an API server.
type clusterObjects struct{ c *kube.Client }

func (k clusterObjects) List(ctx context.Context, q appset.Query) ([]map[string]any, error) {
	gv, err := schema.ParseGroupVersion(q.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("apiVersion %q: %w", q.APIVersion, err)
	}
	field := ""
	if q.Name != "" {
		field = fields.OneTermEqualSelector("metadata.name", q.Name).String()
	}
	return k.c.List(ctx, gv.WithResource(q.Resource), q.Namespace, q.LabelSelector, field)
}
