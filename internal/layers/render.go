package layers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/layers/v1alpha1"
	"github.com/strata-dev/strata/internal/values"
)

// The data keys a layer's values may be under. A ConfigMap holds them under
// "values"; a Secret under "values" or "secrets", not both.
var (
	ConfigMapValuesKeys = []string{"values"}
	SecretValuesKeys    = []string{"values", "secrets"}
)

// ErrCatalogNotFound is wrapped, beside ErrNotFound, by the error for an
// App whose Catalog does not exist.
var ErrCatalogNotFound = errors.New("catalog not found")

// fetchConcurrency bounds the objects fetched at once.
const fetchConcurrency = 8

// Renderer merges the values of Apps from the objects of a Source.
type Renderer struct {
	Source Source
	// Provenance records which layer set each key, for Rendered.Explain.
	Provenance bool
	// SkipCatalog leaves the Catalog's layers out.
	SkipCatalog bool
	// Limits bound each layer's values document; zero fields take
	// document.DefaultLimits.
	Limits document.Limits
	// MaxCost, when positive, bounds the memory the parsed layers of one
	// render may take together, in bytes (document.Limits.MaxCost): each
	// layer is parsed within what the layers before it left, and a layer
	// over it fails the render, refused before it is built. Layers are
	// then parsed one at a time, so that the budget holds.
	MaxCost int64
	// Namespaces are the namespaces an App may read besides its own; the
	// zero value allows its own only. A layer elsewhere is refused before
	// anything is read (ErrNamespaceNotAllowed).
	Namespaces Namespaces
}

// Rendered is the merged values of an App.
type Rendered struct {
	Plan *Plan
	// Missing lists the optional layers left out: their object or its
	// values key does not exist.
	Missing []Ref
	// ConfigMapValues is the merged ConfigMap chain, SecretValues the
	// merged Secret chain, Values the Secret chain merged over the
	// ConfigMap chain.
	ConfigMapValues map[string]any
	SecretValues    map[string]any
	Values          map[string]any

	cm, sec *values.Result
	cmCount int // layers merged in the ConfigMap chain
}

// Render validates app, orders its layers, fetches them and merges them.
// loc, when set, gives errors in the App their file and line.
func (r *Renderer) Render(ctx context.Context, app *v1alpha1.App, loc *Location) (*Rendered, error) {
	if r.Source == nil {
		return nil, errors.New("layers: Renderer.Source is nil")
	}
	if err := ValidateApp(app, loc); err != nil {
		return nil, err
	}
	var cat *v1alpha1.Catalog
	var catLoc *Location
	if !r.SkipCatalog {
		var err error
		if cat, catLoc, err = r.catalog(ctx, app, loc); err != nil {
			return nil, err
		}
	}
	plan, err := NewPlan(app, loc, cat, catLoc)
	if err != nil {
		return nil, err
	}
	if err := r.Namespaces.checkPlan(app, plan, loc); err != nil {
		return nil, err
	}
	out := &Rendered{Plan: plan}
	budget := &costBudget{left: r.MaxCost}
	cmLayers, err := r.fetch(ctx, plan, plan.ConfigMaps, out, budget)
	if err != nil {
		return nil, err
	}
	secLayers, err := r.fetch(ctx, plan, plan.Secrets, out, budget)
	if err != nil {
		return nil, err
	}
	opts := values.MergeOptions{Provenance: r.Provenance}
	out.cmCount = len(cmLayers)
	if out.cm, err = values.Merge(cmLayers, opts); err != nil {
		return nil, err
	}
	if out.sec, err = values.Merge(secLayers, opts); err != nil {
		return nil, err
	}
	both, err := values.Merge([]*values.Layer{
		{Name: "ConfigMaps", Values: out.cm.Values},
		{Name: "Secrets", Values: out.sec.Values},
	}, values.MergeOptions{})
	if err != nil {
		return nil, err
	}
	out.ConfigMapValues, out.SecretValues, out.Values = out.cm.Values, out.sec.Values, both.Values
	return out, nil
}

func (r *Renderer) catalog(ctx context.Context, app *v1alpha1.App, loc *Location) (*v1alpha1.Catalog, *Location, error) {
	if app.Spec.Catalog == "" {
		c := &checker{object: "App " + AppName(app), loc: loc}
		c.errorf(path("spec", "catalog"), "the catalog is empty: name the Catalog whose config is the bottom layer")
		return nil, nil, c.err()
	}
	ns := app.Spec.CatalogNamespace
	if ns == "" {
		ns = DefaultNamespace
	}
	if err := r.Namespaces.checkCatalogNamespace(app, ns, loc); err != nil {
		return nil, nil, err
	}
	cat, err := r.Source.Catalog(ctx, ns, app.Spec.Catalog)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			ce := &catalogError{app: AppName(app), err: err}
			if w := loc.where(path("spec", "catalog")); w != "" {
				ce.where = w + ": "
			}
			return nil, nil, ce
		}
		return nil, nil, fmt.Errorf("App %s: reading its Catalog: %w", AppName(app), err)
	}
	var catLoc *Location
	if l, ok := r.Source.(Locator); ok {
		catLoc = l.Locate(KindCatalog, ns, app.Spec.Catalog)
	}
	return cat, catLoc, nil
}

type catalogError struct {
	where string // "file:line: ", when known
	app   string
	err   error
}

func (e *catalogError) Error() string {
	return fmt.Sprintf("%sApp %s: spec.catalog: %v", e.where, e.app, e.err)
}

func (e *catalogError) Unwrap() []error { return []error{e.err, ErrCatalogNotFound} }

// fetched is one layer's object, read: its values text and where it is.
type fetched struct {
	layer   *values.Layer
	missing bool
	err     error
}

// costBudget is what the layers of one render may still cost; left <= 0
// with MaxCost unset means no budget.
type costBudget struct {
	left int64
}

// fetch reads the layers of one chain, a few at a time (one at a time
// within a budget), in order.
func (r *Renderer) fetch(ctx context.Context, plan *Plan, refs []Ref, out *Rendered, budget *costBudget) ([]*values.Layer, error) {
	res := make([]fetched, len(refs))
	conc := fetchConcurrency
	if r.MaxCost > 0 {
		conc = 1
	}
	sem := make(chan struct{}, conc)
	var wg sync.WaitGroup
	for i := range refs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			res[i] = r.layer(ctx, plan, refs[i], budget)
		}()
	}
	wg.Wait()
	var layers []*values.Layer
	for i, f := range res {
		switch {
		case f.err != nil:
			return nil, f.err
		case f.missing:
			out.Missing = append(out.Missing, refs[i])
		default:
			layers = append(layers, f.layer)
		}
	}
	return layers, nil
}

// layer fetches one layer's object and parses its values.
func (r *Renderer) layer(ctx context.Context, plan *Plan, ref Ref, budget *costBudget) fetched {
	listed := "listed at App " + plan.App + " " + ref.Field
	if ref.Role == RoleCatalog {
		listed = "listed at " + ref.Field
	}
	var data map[string][]byte
	var keys []string
	switch ref.Kind {
	case KindConfigMap:
		cm, err := r.Source.ConfigMap(ctx, ref.Namespace, ref.Name)
		if err != nil {
			return r.fetchError(ref, listed, err)
		}
		data = make(map[string][]byte, len(cm.Data))
		for k, v := range cm.Data {
			data[k] = []byte(v)
		}
		keys = ConfigMapValuesKeys
	case KindSecret:
		s, err := r.Source.Secret(ctx, ref.Namespace, ref.Name)
		if err != nil {
			return r.fetchError(ref, listed, err)
		}
		data, keys = s.Data, SecretValuesKeys
	default:
		return fetched{err: fmt.Errorf("%s: unknown kind %q", listed, ref.Kind)}
	}
	var loc *Location
	if l, ok := r.Source.(Locator); ok {
		loc = l.Locate(ref.Kind, ref.Namespace, ref.Name)
	}
	key, err := valuesKey(ref, data, keys)
	if err != nil {
		if errors.Is(err, ErrNoValuesKey) && ref.Optional {
			return fetched{missing: true}
		}
		if w := loc.where(nil); w != "" {
			return fetched{err: fmt.Errorf("%s: %w (%s)", w, err, listed)}
		}
		return fetched{err: fmt.Errorf("%w (%s)", err, listed)}
	}
	l, err := r.parse(ref, key, data[key], loc, listed, budget)
	if err != nil {
		return fetched{err: err}
	}
	return fetched{layer: l}
}

func (r *Renderer) fetchError(ref Ref, listed string, err error) fetched {
	if errors.Is(err, ErrNotFound) {
		if ref.Optional {
			return fetched{missing: true}
		}
		return fetched{err: fmt.Errorf("%w (%s; mark it optional: true if it may be absent)", err, listed)}
	}
	var le *document.LoadError
	if errors.As(err, &le) {
		c := *le
		c.Msg += " (" + listed + ")"
		return fetched{err: &c}
	}
	// Sources name the object in their errors.
	return fetched{err: fmt.Errorf("%w (%s)", err, listed)}
}

// ErrNoValuesKey is wrapped by the error for a ConfigMap or Secret without
// a values key.
var ErrNoValuesKey = errors.New("no values key")

// ErrAmbiguousValuesKey is wrapped by the error for a Secret with both
// values keys.
var ErrAmbiguousValuesKey = errors.New("more than one values key")

// valuesKey picks the data key holding ref's values.
func valuesKey(ref Ref, data map[string][]byte, candidates []string) (string, error) {
	var found []string
	for _, k := range candidates {
		if _, ok := data[k]; ok {
			found = append(found, k)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		have := "it has no data"
		switch {
		case len(data) > 0 && ref.Kind == KindSecret:
			// A Secret's key names are its own: they stay out of the
			// message, which reaches the App's status and Events.
			have = "it has " + plural(len(data), "other data key") + " (not named: it is a Secret)"
		case len(data) > 0:
			have = "it has " + strings.Join(slices.Sorted(maps.Keys(data)), ", ")
		}
		return "", fmt.Errorf("%s: %w: strata reads the values from the data key %s; %s",
			ref, ErrNoValuesKey, quoteOr(candidates), have)
	}
	return "", fmt.Errorf("%s: %w: it has both %s; keep one", ref, ErrAmbiguousValuesKey, strings.Join(found, " and "))
}

func quoteOr(keys []string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = fmt.Sprintf("%q", k)
	}
	return strings.Join(q, " or ")
}

// parse parses a layer's values; lines in errors and explanations point
// into the object's file when the values are a literal block there.
func (r *Renderer) parse(ref Ref, key string, text []byte, loc *Location, listed string, budget *costBudget) (*values.Layer, error) {
	field := "data." + key
	var block *Block
	if loc != nil {
		if b, ok := loc.Blocks["stringData."+key]; ok && ref.Kind == KindSecret {
			field, block = "stringData."+key, &b
		} else if b, ok := loc.Blocks["data."+key]; ok && ref.Kind == KindConfigMap {
			block = &b
		}
	}
	name := ref.String() + " " + field
	lim := r.Limits
	if r.MaxCost > 0 {
		if budget.left < document.NodeCost {
			return nil, r.overBudget(name, listed)
		}
		lim.MaxCost = budget.left
	}
	m, pos, err := document.Loader{Positions: r.Provenance, Limits: lim}.Parse(text, name)
	if err == nil && r.MaxCost > 0 {
		budget.left -= int64(treeNodes(m)) * document.NodeCost
	}
	if err != nil && r.MaxCost > 0 && errors.Is(err, document.ErrTooLarge) {
		var le *document.LoadError
		if errors.As(err, &le) {
			le.Msg += fmt.Sprintf(" (the layers of one App may cost %d MiB of memory together, about %d values: shrink or split the values)",
				r.MaxCost>>20, r.MaxCost/document.NodeCost)
		}
	}
	if err != nil {
		var le *document.LoadError
		if !errors.As(err, &le) {
			return nil, fmt.Errorf("%s: %w (%s)", name, err, listed)
		}
		if ref.Kind == KindSecret {
			redactLoadError(le)
		}
		switch {
		case block != nil:
			if le.Line > 0 {
				le.Line += block.Line
				if le.Column > 0 {
					le.Column += block.Indent
				}
			}
			// Lines the message mentions are the block's too.
			msg := lineRef.ReplaceAllStringFunc(le.Msg, func(m string) string {
				n, _ := strconv.Atoi(strings.TrimPrefix(m, "line "))
				return "line " + strconv.Itoa(n+block.Line)
			})
			le.Source, le.Msg = loc.File, name+": "+msg+" ("+listed+")"
		case loc != nil:
			le.Msg += " (" + listed + "; the object is at " + loc.where(nil) + ")"
		default:
			le.Msg += " (" + listed + ")"
		}
		return nil, le
	}
	prio := ref.Priority
	l := &values.Layer{Name: ref.LayerName(), Source: field, Priority: &prio,
		Sensitive: ref.Kind == KindSecret, Values: m, Pos: pos}
	if block != nil {
		shiftLines(pos, block.Line, block.Indent)
		l.Source = loc.File
	}
	return l, nil
}

var lineRef = regexp.MustCompile(`line [0-9]+`)

func (r *Renderer) overBudget(name, listed string) error {
	return &document.LoadError{Source: name, Err: document.ErrTooLarge, Msg: fmt.Sprintf(
		"the layers before this one took the memory the layers of one App may cost together (%d MiB, about %d values): shrink or split the values (%s)",
		r.MaxCost>>20, r.MaxCost/document.NodeCost, listed)}
}

// treeNodes counts the maps, lists and values of a tree.
func treeNodes(v any) int {
	n := 1
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			n += treeNodes(e)
		}
	case []any:
		for _, e := range v {
			n += treeNodes(e)
		}
	}
	return n
}

// redactLoadError keeps a Secret's content out of an error message: the
// messages of these sentinels may quote values.
func redactLoadError(le *document.LoadError) {
	switch {
	case errors.Is(le, document.ErrNotMap):
		le.Msg = "the values must be a map of keys to values"
	case errors.Is(le, document.ErrSyntax) && strings.ContainsAny(le.Msg, `"'`):
		le.Msg = "invalid YAML (the parser's message is withheld: it quotes the Secret's content)"
	}
}

// Redacted returns SecretValues and Values with every value a Secret set
// replaced by values.Redacted, for output that must not show secrets.
func (r *Rendered) Redacted() (secretValues, merged map[string]any, err error) {
	secretValues, _ = redactTree(r.SecretValues).(map[string]any)
	if secretValues == nil {
		secretValues = map[string]any{}
	}
	// Redacting keeps every map a map and every list as long: merging the
	// redacted tree places the same keys as merging the real one.
	res, err := values.Merge([]*values.Layer{
		{Name: "ConfigMaps", Values: r.ConfigMapValues},
		{Name: "Secrets", Values: secretValues},
	}, values.MergeOptions{})
	if err != nil {
		return nil, nil, err
	}
	return secretValues, res.Values, nil
}

func redactTree(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = redactTree(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = redactTree(e)
		}
		return out
	}
	return values.Redacted
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}
