package helmplugin

import (
	"context"
	"fmt"
	"slices"
	"strings"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"

	"github.com/strata-dev/strata/internal/helmrender"
)

// DefaultKubeVersion is the Kubernetes version templates see when neither
// the kube-version parameter nor KUBE_VERSION gives one (see
// helmrender.DefaultKubeVersion).
const DefaultKubeVersion = helmrender.DefaultKubeVersion

// HelmVersion is the version of the Helm SDK strata links, which templates
// see in .Capabilities.HelmVersion (see helmrender.HelmVersion).
const HelmVersion = helmrender.HelmVersion

// effective are the render settings after defaults.
type effective struct {
	releaseName, namespace string
	kubeVersion            string
	apiVersions            []string
	// Where the release name and kube version came from, for errors.
	releaseFrom, kubeFrom string
}

// effective applies the defaults Argo CD applies: the release name is the
// Application's name (the part after "<namespace>_" when Argo CD qualifies
// it), the namespace is the destination namespace (ARGOCD_APP_NAMESPACE),
// the kube version and API versions are the destination cluster's
// (KUBE_VERSION, KUBE_API_VERSIONS), else Helm's defaults.
func (j *job) effective() effective {
	s := j.s
	var e effective
	switch {
	case s.hasRelease && s.releaseName != "":
		e.releaseName, e.releaseFrom = s.releaseName, "param"
	default:
		// ARGOCD_APP_NAME first: the repo-server's stream names the app
		// by its directory's base name in ManifestRequestMetadata.appName
		// (util/cmp's appMetadataRequest), not by the Application.
		name := j.env["ARGOCD_APP_NAME"]
		if name == "" {
			name = j.req.AppName
		}
		if i := strings.LastIndexByte(name, '_'); i >= 0 {
			name = name[i+1:]
		}
		if name == "" {
			name = "release-name" // helm template's own default
		}
		e.releaseName, e.releaseFrom = name, "app"
	}
	switch {
	case s.hasNamespace && s.namespace != "":
		e.namespace = s.namespace
	case j.env["ARGOCD_APP_NAMESPACE"] != "":
		e.namespace = j.env["ARGOCD_APP_NAMESPACE"]
	default:
		e.namespace = "default"
	}
	switch {
	case s.hasKube && s.kubeVersion != "":
		e.kubeVersion, e.kubeFrom = s.kubeVersion, "param"
	case strings.TrimSpace(j.env["KUBE_VERSION"]) != "":
		e.kubeVersion, e.kubeFrom = strings.TrimSpace(j.env["KUBE_VERSION"]), "env"
	default:
		e.kubeVersion, e.kubeFrom = DefaultKubeVersion, "default"
	}
	// An empty api-versions list overrides nothing, as an empty
	// apiVersions of an Argo CD Helm source.
	if s.hasAPIVersions && len(s.apiVersions) > 0 {
		e.apiVersions = s.apiVersions
	} else {
		e.apiVersions = splitAPIVersions([]string{j.env["KUBE_API_VERSIONS"]})
	}
	return e
}

// render renders the chart with the request's settings (see
// helmrender.Renderer.Render): the manifests as JSON objects.
func (j *job) render(ctx context.Context, ch *chart.Chart, vals map[string]any) ([]string, error) {
	e := j.effective()
	if err := chartutil.ValidateReleaseName(e.releaseName); err != nil {
		if e.releaseFrom == "param" {
			return nil, &paramError{name: ParamReleaseName, msg: fmt.Sprintf("release name %q", e.releaseName), err: err}
		}
		return nil, fmt.Errorf("the release name defaults to the Application's name %q, which Helm does not accept: %w; set the %s parameter", e.releaseName, err, ParamReleaseName)
	}
	kv, err := helmrender.ParseKubeVersion(e.kubeVersion)
	if err != nil {
		switch e.kubeFrom {
		case "param":
			return nil, &paramError{name: ParamKubeVersion, msg: fmt.Sprintf("invalid kube version %q", e.kubeVersion), err: err}
		default:
			return nil, fmt.Errorf("invalid kube version %q in KUBE_VERSION (the destination cluster's); set the %s parameter: %w", e.kubeVersion, ParamKubeVersion, err)
		}
	}
	if ch.Metadata.Type != "" && ch.Metadata.Type != "application" {
		return nil, fmt.Errorf("chart %q in %s: %s charts are not installable; point the Application at a chart of type application", ch.Name(), j.appRel, ch.Metadata.Type)
	}
	if missing := missingDependencies(ch); len(missing) > 0 {
		return nil, fmt.Errorf("chart %q in %s: dependencies found in Chart.yaml, but missing in charts/ directory: %s. strata renders without network access: run `helm dependency build` in the chart's directory and commit the charts/ directory (or its .tgz archives)",
			ch.Name(), j.appRel, strings.Join(missing, ", "))
	}

	return j.p.render.Render(ctx, ch, vals, helmrender.Release{
		Name: e.releaseName, Namespace: e.namespace, Capabilities: helmrender.Capabilities(kv, e.apiVersions),
		SkipSchema: j.s.skipSchema, SkipCRDs: j.s.skipCRDs, SkipTests: j.s.skipTests, Printed: j.printed,
	})
}

// missingDependencies lists the dependencies of Chart.yaml that are not
// vendored under charts/, as helm template checks them.
func missingDependencies(ch *chart.Chart) []string {
	var missing []string
	for _, d := range ch.Metadata.Dependencies {
		if d == nil {
			continue
		}
		found := slices.ContainsFunc(ch.Dependencies(), func(c *chart.Chart) bool { return c.Name() == d.Name })
		if !found {
			missing = append(missing, d.Name)
		}
	}
	return missing
}
