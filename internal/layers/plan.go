package layers

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/layers/v1alpha1"
)

// Priorities of the platform layers, and the range of extraConfigs'.
const (
	PriorityCatalog    = 0
	PriorityDefault    = 25 // an extraConfig without a priority
	PriorityConfig     = 50
	PriorityUserConfig = 100
	PriorityMax        = 150
)

// MaxExtraConfigs bounds the length of spec.extraConfigs.
const MaxExtraConfigs = 1000

// ErrInvalid is wrapped by every *FieldError.
var ErrInvalid = errors.New("invalid")

// Role is the part a layer plays in an App.
type Role string

// Roles of layers.
const (
	RoleCatalog     Role = "catalog"
	RoleConfig      Role = "config"
	RoleUserConfig  Role = "userConfig"
	RoleExtraConfig Role = "extraConfig"
)

// Ref is one layer of a plan: a ConfigMap or Secret, and why it is there.
type Ref struct {
	Kind      string // KindConfigMap or KindSecret
	Namespace string
	Name      string
	Role      Role
	// Field is where the layer is listed: "spec.extraConfigs[3]",
	// "spec.config.configMap", or for the catalog's
	// "Catalog default/giantswarm spec.config.configMap".
	Field string
	// Priority is the effective priority: 25 for an extraConfig without one.
	Priority int
	// Index is the entry's position in spec.extraConfigs (0-based), -1
	// for the other roles.
	Index int
	// Optional layers may be missing, or lack a values key.
	Optional bool
}

// String names the object: "ConfigMap m2m01/ingress-values".
func (r Ref) String() string { return r.Kind + " " + r.Namespace + "/" + r.Name }

// LayerName names the layer in explanations: the object and where it is
// listed.
func (r Ref) LayerName() string { return r.String() + " (" + r.Field + ")" }

// Plan is the ordered layers of an App's values, bottom first: the
// ConfigMap chain and the Secret chain, merged separately.
type Plan struct {
	App        string // namespace/name
	Catalog    string // namespace/name of the Catalog; "" without one
	ConfigMaps []Ref
	Secrets    []Ref
}

// FieldError is a problem with one field of an App or a Catalog.
type FieldError struct {
	Object string // "App m2m01/ingress-nginx"
	Field  string // "spec.extraConfigs[3].priority"
	File   string // when read from a file
	Line   int
	Msg    string
	// Err, when set, is a sentinel the error wraps beside ErrInvalid
	// (ErrNamespaceNotAllowed).
	Err error
}

func (e *FieldError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	}
	b.WriteString(e.Object)
	if e.Field != "" {
		b.WriteString(": " + e.Field)
	}
	b.WriteString(": " + e.Msg)
	return b.String()
}

func (e *FieldError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrInvalid, e.Err}
	}
	return []error{ErrInvalid}
}

type checker struct {
	object string
	loc    *Location
	errs   []error
}

func (c *checker) errorf(path document.Path, format string, args ...any) {
	fe := &FieldError{Object: c.object, Field: path.String(), Msg: fmt.Sprintf(format, args...)}
	if c.loc != nil {
		fe.File, fe.Line = c.loc.File, c.loc.Line(path)
	}
	c.errs = append(c.errs, fe)
}

func (c *checker) err() error { return errors.Join(c.errs...) }

func path(keys ...any) document.Path {
	var p document.Path
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			p = append(p, document.Key(k))
		case int:
			p = append(p, document.Index(k))
		}
	}
	return p
}

// AppName is "namespace/name" of an App.
func AppName(app *v1alpha1.App) string { return app.Namespace + "/" + app.Name }

// ValidateApp checks the layers an App lists: every problem is reported,
// each a *FieldError naming the field (and its file and line when loc is
// set).
func ValidateApp(app *v1alpha1.App, loc *Location) error {
	_, err := appRefs(app, loc)
	return err
}

// appRefs validates the App's own layers and returns them in list order:
// config, userConfig, then extraConfigs.
func appRefs(app *v1alpha1.App, loc *Location) ([]Ref, error) {
	c := &checker{object: "App " + AppName(app), loc: loc}
	var refs []Ref
	seen := map[objectKey]string{}
	add := func(r Ref, p document.Path) {
		k := objectKey{r.Kind, r.Namespace, r.Name}
		if first, dup := seen[k]; dup {
			c.errorf(p, "%s is already listed at %s: list each object once", r, first)
			return
		}
		seen[k] = r.Field
		refs = append(refs, r)
	}
	for _, cfg := range []struct {
		role Role
		key  string
		prio int
		ac   v1alpha1.AppConfig
	}{
		{RoleConfig, "config", PriorityConfig, app.Spec.Config},
		{RoleUserConfig, "userConfig", PriorityUserConfig, app.Spec.UserConfig},
	} {
		for _, o := range []struct {
			kind, key string
			ref       v1alpha1.ObjectRef
		}{
			{KindConfigMap, "configMap", cfg.ac.ConfigMap},
			{KindSecret, "secret", cfg.ac.Secret},
		} {
			if !o.ref.IsSet() {
				continue
			}
			p := path("spec", cfg.key, o.key)
			if !checkRef(c, p, o.ref) {
				continue
			}
			add(Ref{Kind: o.kind, Namespace: o.ref.Namespace, Name: o.ref.Name, Role: cfg.role,
				Field: p.String(), Priority: cfg.prio, Index: -1}, p)
		}
	}
	if n := len(app.Spec.ExtraConfigs); n > MaxExtraConfigs {
		c.errorf(path("spec", "extraConfigs"), "%d entries: at most %d are allowed", n, MaxExtraConfigs)
		return nil, c.err()
	}
	for i, e := range app.Spec.ExtraConfigs {
		p := path("spec", "extraConfigs", i)
		ok := true
		kind := ""
		switch e.Kind {
		case "", v1alpha1.KindConfigMap:
			kind = KindConfigMap
		case v1alpha1.KindSecret:
			kind = KindSecret
		default:
			hint := ""
			if strings.EqualFold(e.Kind, v1alpha1.KindConfigMap) || strings.EqualFold(e.Kind, v1alpha1.KindSecret) {
				hint = " (kinds are case-sensitive)"
			}
			c.errorf(p.Append(document.Key("kind")), "unknown kind %q: use %s or %s%s", e.Kind, v1alpha1.KindConfigMap, v1alpha1.KindSecret, hint)
			ok = false
		}
		if e.Name == "" {
			c.errorf(p.Append(document.Key("name")), "the name is empty: name the %s", orAny(kind))
			ok = false
		}
		if e.Namespace == "" {
			c.errorf(p.Append(document.Key("namespace")), "the namespace is empty: set the namespace of %s %s", orAny(kind), e.Name)
			ok = false
		}
		prio := e.Priority
		switch {
		case prio == 0:
			prio = PriorityDefault
		case prio < 1 || prio > PriorityMax:
			c.errorf(p.Append(document.Key("priority")),
				"%d is out of range: use 1..%d (1..%d merge before config, %d..%d before userConfig, %d..%d after it; unset means %d)",
				prio, PriorityMax, PriorityConfig, PriorityConfig+1, PriorityUserConfig, PriorityUserConfig+1, PriorityMax, PriorityDefault)
			ok = false
		}
		if !ok {
			continue
		}
		add(Ref{Kind: kind, Namespace: e.Namespace, Name: e.Name, Role: RoleExtraConfig,
			Field: p.String(), Priority: prio, Index: i, Optional: e.Optional}, p)
	}
	return refs, c.err()
}

func orAny(kind string) string {
	if kind == "" {
		return "object"
	}
	return kind
}

func checkRef(c *checker, p document.Path, r v1alpha1.ObjectRef) bool {
	ok := true
	if r.Name == "" {
		c.errorf(p.Append(document.Key("name")), "the namespace is set but the name is empty: set both, or remove the reference")
		ok = false
	}
	if r.Namespace == "" {
		c.errorf(p.Append(document.Key("namespace")), "the namespace of %s is empty: set it", r.Name)
		ok = false
	}
	return ok
}

// catalogRefs validates a Catalog's config and returns its layers.
func catalogRefs(cat *v1alpha1.Catalog, loc *Location) ([]Ref, error) {
	c := &checker{object: "Catalog " + cat.Namespace + "/" + cat.Name, loc: loc}
	var refs []Ref
	for _, o := range []struct {
		kind, key string
		ref       v1alpha1.ObjectRef
	}{
		{KindConfigMap, "configMap", cat.Spec.Config.ConfigMap},
		{KindSecret, "secret", cat.Spec.Config.Secret},
	} {
		if !o.ref.IsSet() {
			continue
		}
		p := path("spec", "config", o.key)
		if !checkRef(c, p, o.ref) {
			continue
		}
		refs = append(refs, Ref{Kind: o.kind, Namespace: o.ref.Namespace, Name: o.ref.Name, Role: RoleCatalog,
			Field: c.object + " " + p.String(), Priority: PriorityCatalog, Index: -1})
	}
	return refs, c.err()
}

// NewPlan validates app (and catalog, when not nil) and orders their
// layers. appLoc and catLoc, when set, give errors their file and line.
func NewPlan(app *v1alpha1.App, appLoc *Location, catalog *v1alpha1.Catalog, catLoc *Location) (*Plan, error) {
	refs, err := appRefs(app, appLoc)
	var cat []Ref
	if catalog != nil {
		var cerr error
		cat, cerr = catalogRefs(catalog, catLoc)
		err = errors.Join(err, cerr)
	}
	if err != nil {
		return nil, err
	}
	p := &Plan{App: AppName(app)}
	if catalog != nil {
		p.Catalog = catalog.Namespace + "/" + catalog.Name
	}
	all := append(cat, refs...)
	// Ascending priority; at equal priority the extraConfigs first, in
	// list order, then config or userConfig: an extra at exactly 50 merges
	// before config, at exactly 100 before userConfig. The catalog alone
	// has priority 0.
	sort.SliceStable(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if a.Priority != b.Priority {
			return a.Priority < b.Priority
		}
		if (a.Role == RoleExtraConfig) != (b.Role == RoleExtraConfig) {
			return a.Role == RoleExtraConfig
		}
		return a.Index < b.Index
	})
	for _, r := range all {
		if r.Kind == KindSecret {
			p.Secrets = append(p.Secrets, r)
		} else {
			p.ConfigMaps = append(p.ConfigMaps, r)
		}
	}
	return p, nil
}
