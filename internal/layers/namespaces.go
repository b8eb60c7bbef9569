package layers

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/layers/v1alpha1"
)

// ErrNamespaceNotAllowed is wrapped, beside ErrInvalid, by the *FieldError
// of a reference to a namespace the App may not read.
var ErrNamespaceNotAllowed = errors.New("namespace not allowed")

// AnyNamespace, given alone in a list of allowed namespaces, lets Apps read
// every namespace.
const AnyNamespace = "*"

// Namespaces says which namespaces an App's layers may be read from: the
// App's own namespace, and the namespaces listed in Allowed. Every object
// read for an App is checked, before it is read: its Catalog
// (spec.catalogNamespace), the Catalog's ConfigMap and Secret, and the
// App's config, userConfig and extraConfigs. The zero value allows the
// App's own namespace only, as Flux's --no-cross-namespace-refs does.
type Namespaces struct {
	// Any lets Apps read every namespace, as Giant Swarm's app-operator
	// does: for a cluster whose every App author may read every
	// ConfigMap and Secret anyway.
	Any bool
	// Allowed are the namespaces any App may read besides its own: the
	// Catalogs' and the platform's configuration.
	Allowed []string
	// Setting names where an administrator sets Allowed, for the refusal's
	// message ("the controller's --allowed-namespaces"); empty means
	// "the allowed namespaces".
	Setting string
}

// ParseNamespaces reads a list of allowed namespaces (a flag's value):
// namespace names, or "*" alone for any namespace.
func ParseNamespaces(list []string, setting string) (Namespaces, error) {
	n := Namespaces{Setting: setting}
	for _, ns := range list {
		ns = strings.TrimSpace(ns)
		switch {
		case ns == AnyNamespace:
			if len(list) > 1 {
				return Namespaces{}, fmt.Errorf("%s: %q allows every namespace and goes alone; drop the other names or the %q", orSetting(setting), AnyNamespace, AnyNamespace)
			}
			n.Any = true
		case ns == "":
			return Namespaces{}, fmt.Errorf("%s: an empty namespace name in %q", orSetting(setting), strings.Join(list, ","))
		default:
			if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
				return Namespaces{}, fmt.Errorf("%s: %q is not a namespace name: %s", orSetting(setting), ns, strings.Join(errs, "; "))
			}
			if !slices.Contains(n.Allowed, ns) {
				n.Allowed = append(n.Allowed, ns)
			}
		}
	}
	return n, nil
}

func orSetting(s string) string {
	if s == "" {
		return "the allowed namespaces"
	}
	return s
}

// Allows reports whether an App of namespace app may read namespace ns.
func (n Namespaces) Allows(app, ns string) bool {
	return n.Any || ns == app || slices.Contains(n.Allowed, ns)
}

// String describes what an App of namespace app may read.
func (n Namespaces) String() string {
	if n.Any {
		return "any namespace"
	}
	if len(n.Allowed) == 0 {
		return "its own namespace only"
	}
	return "its own namespace and " + strings.Join(n.Allowed, ", ")
}

// refuse returns the error for an App reading kind namespace/name through
// field.
func (n Namespaces) refuse(c *checker, app *v1alpha1.App, p document.Path, field, what string) {
	fe := &FieldError{Object: c.object, Field: field, Err: ErrNamespaceNotAllowed,
		Msg: fmt.Sprintf("%s is outside the namespaces an App of namespace %s may read (%s, set by %s): "+
			"keep the object in namespace %s, or ask the cluster's administrator to add its namespace to %s",
			what, app.Namespace, n.String(), orSetting(n.Setting), app.Namespace, orSetting(n.Setting))}
	if c.loc != nil && p != nil {
		fe.File, fe.Line = c.loc.File, c.loc.Line(p)
	}
	c.errs = append(c.errs, fe)
}

// checkCatalogNamespace refuses an App's Catalog in a namespace it may not
// read, before the Catalog is read.
func (n Namespaces) checkCatalogNamespace(app *v1alpha1.App, ns string, loc *Location) error {
	if n.Allows(app.Namespace, ns) {
		return nil
	}
	c := &checker{object: "App " + AppName(app), loc: loc}
	field := "spec.catalogNamespace"
	if app.Spec.CatalogNamespace == "" {
		field += " (empty: " + DefaultNamespace + ")"
	}
	n.refuse(c, app, path("spec", "catalogNamespace"), field, "Catalog "+ns+"/"+app.Spec.Catalog)
	return c.err()
}

// checkPlan refuses every layer of the plan in a namespace the App may not
// read, before any is read. The message is the same whether the object
// exists or not.
func (n Namespaces) checkPlan(app *v1alpha1.App, plan *Plan, loc *Location) error {
	c := &checker{object: "App " + AppName(app), loc: loc}
	for _, chain := range [][]Ref{plan.ConfigMaps, plan.Secrets} {
		for _, r := range chain {
			if n.Allows(app.Namespace, r.Namespace) {
				continue
			}
			var p document.Path
			if r.Role != RoleCatalog {
				p = refPath(r).Append(document.Key("namespace"))
			}
			n.refuse(c, app, p, r.Field+".namespace", r.String())
		}
	}
	return c.err()
}

// refPath is the path of the field listing an App's own layer.
func refPath(r Ref) document.Path {
	if r.Role == RoleExtraConfig {
		return path("spec", "extraConfigs", r.Index)
	}
	key := "configMap"
	if r.Kind == KindSecret {
		key = "secret"
	}
	return path("spec", string(r.Role), key)
}
