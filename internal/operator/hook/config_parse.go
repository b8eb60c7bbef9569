package hook

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/itchyny/gojq"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/operator/schedule"
)

// Limits of a hook's configuration: it is untrusted input.
const (
	maxBindings   = 1000 // items of one list: bindings, names, expressions
	maxNameLength = 1024 // strings: names, queues, groups, crontabs, filters
)

// configParser reads one --config output: its top level by hand (the keys
// allowed there depend on the kind of hook and the version), each binding
// list with document.Decode into the shapes of config_shape.go, then
// converts the shapes into a Config.
type configParser struct {
	hook string
	kind Kind
	pos  *document.Pos
}

// fail makes a ConfigError for the node at path, at the line of the node
// or of its nearest parent with one.
func (p *configParser) fail(path document.Path, format string, args ...any) error {
	line := 0
	for n := len(path); n >= 0 && line == 0; n-- {
		line, _ = p.pos.Lookup(path[:n]).At()
	}
	return &ConfigError{Hook: p.hook, Line: line, Field: fieldName(path), Msg: fmt.Sprintf(format, args...)}
}

// fieldName writes a path the way hooks' authors read it:
// kubernetes[0].namespace.nameSelector.
func fieldName(path document.Path) string {
	var b strings.Builder
	for _, s := range path {
		if s.IsIndex {
			b.WriteString("[" + strconv.Itoa(s.Index) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.Key)
	}
	return b.String()
}

// lifecycleKeys are the lifecycle bindings each kind of hook may have.
var lifecycleKeys = map[Kind][]BindingType{
	Global: {OnStartup, BeforeAll, AfterAll},
	Module: {OnStartup, BeforeHelm, AfterHelm, BeforeDeleteHelm, AfterDeleteHelm},
}

// otherKindKeys are the lifecycle bindings of the other kind, for a
// helpful error.
var otherKindKeys = map[Kind][]BindingType{
	Global: {BeforeHelm, AfterHelm, BeforeDeleteHelm, AfterDeleteHelm},
	Module: {BeforeAll, AfterAll},
}

// v0Keys are the top-level keys of a configuration without configVersion.
var v0Keys = map[Kind][]string{
	Global: {"configVersion", "onStartup", "beforeAll", "afterAll", "schedule", "onKubernetesEvent"},
	Module: {"configVersion", "onStartup", "beforeHelm", "afterHelm", "beforeDeleteHelm", "afterDeleteHelm", "schedule", "onKubernetesEvent"},
}

func parseConfig(data []byte, k Kind, name string) (*Config, error) {
	if k != Global && k != Module {
		return nil, fmt.Errorf("hook %s: ParseConfig: kind %v is neither Global nor Module", name, k)
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil, &ConfigError{Hook: name, Msg: "printed nothing; a hook run with --config must print its bindings as YAML or JSON, such as {\"configVersion\":\"v1\",\"onStartup\":10}"}
	}
	v, pos, err := document.Loader{Positions: true, Limits: document.Limits{MaxBytes: max(DefaultMaxConfigBytes, int64(len(data))), MaxDepth: 64, MaxNodes: 100_000}}.ParseAny(data, "hook "+name+" --config")
	if err != nil {
		var le *document.LoadError
		if errors.As(err, &le) {
			return nil, &ConfigError{Hook: name, Line: le.Line, Msg: le.Msg + " (the output of --config must be one YAML or JSON document)"}
		}
		return nil, &ConfigError{Hook: name, Msg: err.Error()}
	}
	root, ok := v.(map[string]any)
	if !ok {
		line, _ := pos.At()
		return nil, &ConfigError{Hook: name, Line: line, Msg: fmt.Sprintf("the configuration is %s; it must be a map such as {\"configVersion\":\"v1\",\"onStartup\":10}", document.Describe(v))}
	}
	p := &configParser{hook: name, kind: k, pos: pos}
	c := &Config{Version: "v0", Orders: map[BindingType]float64{}}
	if rv, ok := root["configVersion"]; ok {
		s, ok := rv.(string)
		if !ok || (s != "v1" && s != "v0") {
			return nil, p.fail(document.Path{document.Key("configVersion")}, "%s is not a known version; write configVersion: v1", describeValue(rv))
		}
		c.Version = s
	}
	if err := p.top(root, c); err != nil {
		return nil, err
	}
	// A hook with settings and no binding is accepted, as shell-operator
	// accepts it; one with nothing at all is surely a mistake.
	if len(c.Orders) == 0 && len(c.Schedules) == 0 && len(c.Kubernetes) == 0 && !c.HasWebhooks() && c.Settings == nil {
		return nil, &ConfigError{Hook: name, Msg: "the hook has no bindings, so it would never run; add one of " + joinBindings(append(slices.Clone(lifecycleKeys[k]), Schedule, Kubernetes))}
	}
	return c, nil
}

// top reads the top level. Like shell-operator, it reports every top-level
// field that is wrong, not only the first (each field's own checks stop at
// its first problem); the checks across bindings run when the fields are
// right.
func (p *configParser) top(root map[string]any, c *Config) error {
	var errs []error
	for _, key := range keys(root) {
		path := document.Path{document.Key(key)}
		var err error
		switch {
		case key == "configVersion":
		case slices.Contains(lifecycleKeys[p.kind], BindingType(key)):
			c.Orders[BindingType(key)], err = p.order(path, root[key])
		case c.Version == "v1":
			var s configV1
			if err = p.decode(c.Version, key, root[key], &s); err == nil {
				err = p.fromV1(&s, c)
			}
		default:
			var s configV0
			if err = p.decode(c.Version, key, root[key], &s); err == nil {
				err = p.fromV0(&s, c)
			}
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 || c.Version == "v0" {
		return errors.Join(errs...)
	}
	if err := p.crossChecks(c); err != nil {
		return err
	}
	return p.webhookChecks(c)
}

// decode decodes the top-level key and its value into the root shape of
// the version, out.
func (p *configParser) decode(version, key string, value, out any) error {
	err := document.Decode(map[string]any{key: value}, p.pos, p.hook, out)
	if err == nil {
		return nil
	}
	var le *document.LoadError
	if !errors.As(err, &le) {
		return &ConfigError{Hook: p.hook, Msg: err.Error()}
	}
	var ue *document.UnknownFieldError
	switch {
	case !errors.As(le.Err, &ue):
		return p.fail(le.Path, "%s", le.Msg)
	case len(le.Path) == 1:
		return p.unknownTop(version, le.Path, key)
	case ue.Reason != "":
		return p.fail(le.Path, "%s", ue.Reason)
	case ue.Suggestion != "":
		return p.fail(le.Path, "unknown field; did you mean %s?", ue.Suggestion)
	}
	return p.fail(le.Path, "unknown field; known fields are %s", strings.Join(ue.Known, ", "))
}

// unknownTop is the error for a top-level key the version does not have.
func (p *configParser) unknownTop(version string, path document.Path, key string) error {
	switch b := BindingType(key); {
	case slices.Contains(otherKindKeys[p.kind], b):
		other := Module
		if p.kind == Module {
			other = Global
		}
		return p.fail(path, "%s is a binding of %s hooks, and this is a %s hook; use one of %s", key, other, p.kind, joinBindings(lifecycleKeys[p.kind]))
	case version == "v0" && (key == "kubernetes" || key == "settings"):
		return p.fail(path, "%s needs configVersion: v1; add configVersion: v1 (and use kubernetes, not onKubernetesEvent)", key)
	case version == "v0":
		// "is a forbidden property" is shell-operator's wording for it.
		if s := document.Closest(key, v0Keys[p.kind]); s != "" {
			return p.fail(path, "unknown field (%s is a forbidden property); did you mean %s?", key, s)
		}
		return p.fail(path, "unknown field (%s is a forbidden property) of a configuration without configVersion (v0); write configVersion: v1 and the v1 bindings", key)
	case key == "onKubernetesEvent":
		return p.fail(path, "onKubernetesEvent is the configVersion v0 name; with configVersion: v1 write kubernetes")
	case key == "kubernetesMutating":
		return p.fail(path, "mutating webhooks are not supported by strata's operator (kubernetesValidating and kubernetesCustomResourceConversion are); move this binding to a hook run by shell-operator or remove it")
	}
	if s := document.Closest(key, topKeys(p.kind)); s != "" {
		return p.fail(path, "unknown field (%s is a forbidden property); did you mean %s?", key, s)
	}
	return p.fail(path, "unknown field (%s is a forbidden property); a %s hook's configuration has %s", key, p.kind, strings.Join(topKeys(p.kind), ", "))
}

func topKeys(k Kind) []string {
	out := []string{"configVersion"}
	for _, b := range lifecycleKeys[k] {
		out = append(out, string(b))
	}
	return append(out, "schedule", "kubernetes", string(KubernetesValidating), string(KubernetesConversion), "settings")
}

// order reads a lifecycle binding's order: an integer.
func (p *configParser) order(path document.Path, v any) (float64, error) {
	var f float64
	switch n := v.(type) {
	case int64:
		f = float64(n)
	case float64:
		f = n
	case json.Number:
		return 0, p.fail(path, "order %s is too large; write an integer such as 10", n)
	default:
		return 0, p.fail(path, "the order is %s; write an integer such as %s: 10 (hooks run by order, then by name)", describeValue(v), path[0].Key)
	}
	if math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, p.fail(path, "order %v is not an integer; write an integer such as %s: 10", v, path[0].Key)
	}
	return f, nil
}

// fromV1 converts what s holds of a v1 configuration into c.
func (p *configParser) fromV1(s *configV1, c *Config) error {
	for i := range s.Schedule {
		b, err := p.schedule(document.Path{document.Key("schedule"), document.Index(i)}, &s.Schedule[i])
		if err != nil {
			return err
		}
		c.Schedules = append(c.Schedules, b)
	}
	for i := range s.Kubernetes {
		k, err := p.kubernetes(document.Path{document.Key("kubernetes"), document.Index(i)}, &s.Kubernetes[i])
		if err != nil {
			return err
		}
		c.Kubernetes = append(c.Kubernetes, k)
	}
	if err := p.validating(document.Path{document.Key(string(KubernetesValidating))}, s.Validating, c); err != nil {
		return err
	}
	if err := p.conversion(document.Path{document.Key(string(KubernetesConversion))}, s.Conversion, c); err != nil {
		return err
	}
	if st := s.Settings; st != nil {
		d, _ := time.ParseDuration(string(st.ExecutionMinInterval)) // "" when not given: 0
		c.Settings = &Settings{ExecutionMinInterval: d, ExecutionBurst: int(st.ExecutionBurst)}
	}
	return nil
}

// fromV0 converts what s holds of a v0 configuration into c.
func (p *configParser) fromV0(s *configV0, c *Config) error {
	for i := range s.Schedule {
		b, err := p.schedule(document.Path{document.Key("schedule"), document.Index(i)}, &scheduleShape{scheduleV0Shape: s.Schedule[i]})
		if err != nil {
			return err
		}
		c.Schedules = append(c.Schedules, b)
	}
	for i, s := range s.OnKubernetesEvent {
		at := document.Path{document.Key("onKubernetesEvent"), document.Index(i)}
		k := &KubernetesBinding{
			Name:                    cmp.Or(string(s.Name), "onKubernetesEvent"),
			Kind:                    string(s.Kind),
			Queue:                   DefaultQueue,
			ExecuteHookOnEvent:      []WatchEvent{Added, Modified, Deleted},
			WaitForSynchronization:  true,
			KeepFullObjectsInMemory: true,
			// v0 monitors send no Synchronization, only events.
			ExecuteHookOnSynchronization: false,
			JqFilter:                     string(s.JqFilter),
			AllowFailure:                 bool(s.AllowFailure),
		}
		k.filter, _ = compileJQ(k.JqFilter) // compiled by jqFilter.CheckTree
		if s.Event != nil {
			k.ExecuteHookOnEvent = make([]WatchEvent, len(s.Event))
			for j, e := range s.Event {
				k.ExecuteHookOnEvent[j] = v0EventNames[string(e)]
			}
		}
		var err error
		if k.LabelSelector, err = p.labelSelector(at.Append(document.Key("selector")), s.Selector); err != nil {
			return err
		}
		if s.ObjectName != "" {
			k.NameSelector = []string{string(s.ObjectName)}
		}
		if ns := s.NamespaceSelector; ns != nil && !ns.Any {
			k.Namespace = &NamespaceSelector{NameSelector: strs(ns.MatchNames)}
		}
		if k.Kind == "" {
			return p.fail(at, "has no kind; add the kind of the objects to watch, such as kind: Pod")
		}
		c.Kubernetes = append(c.Kubernetes, k)
	}
	return nil
}

func (p *configParser) schedule(at document.Path, s *scheduleShape) (*ScheduleBinding, error) {
	if s.Crontab == "" {
		return nil, p.fail(at, "has no crontab; add crontab: \"*/5 * * * *\" (5 fields, or 6 with seconds first)")
	}
	spec, err := schedule.Parse(string(s.Crontab))
	if err != nil { // checked by crontab.CheckTree
		return nil, p.fail(at.Append(document.Key("crontab")), "%v", err)
	}
	return &ScheduleBinding{
		Name: cmp.Or(string(s.Name), string(Schedule)), Crontab: string(s.Crontab), Spec: spec,
		AllowFailure: bool(s.AllowFailure), Queue: cmp.Or(string(s.Queue), DefaultQueue), Group: string(s.Group),
		IncludeSnapshotsFrom: strs(s.IncludeSnapshotsFrom),
	}, nil
}

func (p *configParser) kubernetes(at document.Path, s *kubernetesShape) (*KubernetesBinding, error) {
	k := &KubernetesBinding{
		Name:       cmp.Or(string(s.Name), string(Kubernetes)),
		APIVersion: string(s.APIVersion), Kind: string(s.Kind),
		JqFilter:           string(s.JqFilter),
		ExecuteHookOnEvent: []WatchEvent{Added, Modified, Deleted},
		// Waiting can be turned off only with a queue given, as
		// shell-operator reads it.
		WaitForSynchronization:       s.WaitForSynchronization.or(true) || s.Queue == "",
		ExecuteHookOnSynchronization: s.ExecuteHookOnSynchronization.or(true),
		KeepFullObjectsInMemory:      s.KeepFullObjectsInMemory.or(true),
		AllowFailure:                 bool(s.AllowFailure),
		ResynchronizationPeriod:      string(s.ResynchronizationPeriod),
		Queue:                        cmp.Or(string(s.Queue), DefaultQueue),
		Group:                        string(s.Group),
		IncludeSnapshotsFrom:         strs(s.IncludeSnapshotsFrom),
	}
	k.filter, _ = compileJQ(k.JqFilter) // compiled by jqFilter.CheckTree
	// executeHookOnEvent wins over its old name watchEvent.
	e := s.ExecuteHookOnEvent
	if e == nil {
		e = s.WatchEvent
	}
	if e != nil {
		k.ExecuteHookOnEvent = make([]WatchEvent, len(e))
		for i, x := range e {
			k.ExecuteHookOnEvent[i] = WatchEvent(x)
		}
	}
	var err error
	if n := s.NameSelector; n != nil {
		if n.MatchNames == nil {
			return nil, p.fail(at.Append(document.Key("nameSelector")), "has no matchNames; write nameSelector: {matchNames: [name, ...]}")
		}
		k.NameSelector = strs(n.MatchNames)
	}
	if k.LabelSelector, err = p.labelSelector(at.Append(document.Key("labelSelector")), s.LabelSelector); err != nil {
		return nil, err
	}
	if f := s.FieldSelector; f != nil {
		fat := at.Append(document.Key("fieldSelector"))
		if f.MatchExpressions == nil {
			return nil, p.fail(fat, "has no matchExpressions; write fieldSelector: {matchExpressions: [{field: metadata.name, operator: Equals, value: x}]}")
		}
		for i, r := range f.MatchExpressions {
			if r.Field == "" {
				return nil, p.fail(fat.Append(document.Key("matchExpressions"), document.Index(i)), "has no field; write a field path such as field: metadata.name")
			}
			switch r.Operator {
			case "=", "==", "Equals", "!=", "NotEquals":
			default:
				return nil, p.fail(fat.Append(document.Key("matchExpressions"), document.Index(i)), "operator %q is not one of =, ==, Equals, !=, NotEquals", r.Operator)
			}
			k.FieldSelector = append(k.FieldSelector, FieldRequirement{Field: string(r.Field), Operator: string(r.Operator), Value: string(r.Value)})
		}
	}
	if ns := s.Namespace; ns != nil {
		k.Namespace = &NamespaceSelector{}
		if n := ns.NameSelector; n != nil {
			if n.MatchNames == nil {
				return nil, p.fail(at.Append(document.Key("namespace"), document.Key("nameSelector")), "has no matchNames; write nameSelector: {matchNames: [name, ...]}")
			}
			k.Namespace.NameSelector = strs(n.MatchNames)
		}
		if k.Namespace.LabelSelector, err = p.labelSelector(at.Append(document.Key("namespace"), document.Key("labelSelector")), ns.LabelSelector); err != nil {
			return nil, err
		}
	}
	if k.Kind == "" {
		return nil, p.fail(at, "has no kind; add the kind of the objects to watch, such as kind: Pod")
	}
	if k.NameSelector != nil {
		for i, r := range k.FieldSelector {
			if r.Field == "metadata.name" {
				return nil, p.fail(at.Append(document.Key("fieldSelector"), document.Key("matchExpressions"), document.Index(i)),
					"a fieldSelector on metadata.name and nameSelector.matchNames exclude each other; keep one of them")
			}
		}
	}
	return k, nil
}

// labelSelector converts the label selector at path; nil stays nil.
func (p *configParser) labelSelector(path document.Path, s *labelSelectorShape) (*LabelSelector, error) {
	if s == nil {
		return nil, nil
	}
	out := &LabelSelector{}
	if s.MatchLabels != nil {
		out.MatchLabels = make(map[string]string, len(s.MatchLabels))
		for k, v := range s.MatchLabels {
			out.MatchLabels[k] = string(v)
		}
	}
	for i, e := range s.MatchExpressions {
		at := path.Append(document.Key("matchExpressions"), document.Index(i))
		r := LabelRequirement{Key: string(e.Key), Operator: string(e.Operator), Values: strs(e.Values)}
		if r.Key == "" {
			return nil, p.fail(at, "has no key; write the label's name, such as key: app")
		}
		switch r.Operator {
		case "In", "NotIn":
			if len(r.Values) == 0 {
				return nil, p.fail(at, "operator %s needs a non-empty values list", r.Operator)
			}
		case "Exists", "DoesNotExist":
			if len(r.Values) > 0 {
				return nil, p.fail(at, "operator %s takes no values; remove values", r.Operator)
			}
		default: // "": labelOperator.CheckTree lets no other through
			return nil, p.fail(at, "has no operator; write one of In, NotIn, Exists, DoesNotExist")
		}
		out.MatchExpressions = append(out.MatchExpressions, r)
	}
	return out, nil
}

// crossChecks checks what involves several bindings: includeSnapshotsFrom
// naming kubernetes bindings, and groups adding their bindings' snapshots.
// Names need not be unique, as in shell-operator (several bindings without
// a name are all "kubernetes"); a snapshot of a shared name, and the
// refreshed objects of its Synchronization, are the first such binding's,
// as shell-operator reads them.
func (p *configParser) crossChecks(c *Config) error {
	for i, k := range c.Kubernetes {
		if err := p.checkSnapshots(c, document.Path{document.Key("kubernetes"), document.Index(i), document.Key("includeSnapshotsFrom")}, k.IncludeSnapshotsFrom); err != nil {
			return err
		}
	}
	for i, s := range c.Schedules {
		if err := p.checkSnapshots(c, document.Path{document.Key("schedule"), document.Index(i), document.Key("includeSnapshotsFrom")}, s.IncludeSnapshotsFrom); err != nil {
			return err
		}
	}
	groups := groupsOf(c)
	for _, k := range c.Kubernetes {
		if g, ok := groups[k.Group]; ok {
			k.IncludeSnapshotsFrom = mergeNames(k.IncludeSnapshotsFrom, g)
		}
	}
	for _, s := range c.Schedules {
		if g, ok := groups[s.Group]; ok {
			s.IncludeSnapshotsFrom = mergeNames(s.IncludeSnapshotsFrom, g)
		}
	}
	return nil
}

// checkSnapshots checks that names, the includeSnapshotsFrom at path, name
// kubernetes bindings of the hook.
func (p *configParser) checkSnapshots(c *Config, path document.Path, names []string) error {
	for j, n := range names {
		if c.KubernetesBinding(n) != nil {
			continue
		}
		hint := "this hook has no kubernetes bindings"
		if len(c.Kubernetes) > 0 {
			var all []string
			for _, k := range c.Kubernetes {
				if !slices.Contains(all, k.Name) {
					all = append(all, k.Name)
				}
			}
			hint = "this hook's kubernetes bindings are " + strings.Join(all, ", ")
		}
		return p.fail(path.Append(document.Index(j)), "%q names no kubernetes binding of this hook; %s", n, hint)
	}
	return nil
}

// groupsOf maps each group to the kubernetes bindings in it.
func groupsOf(c *Config) map[string][]string {
	groups := map[string][]string{}
	for _, k := range c.Kubernetes {
		if k.Group != "" {
			groups[k.Group] = append(groups[k.Group], k.Name)
		}
	}
	return groups
}

// mergeNames returns a followed by the names of b not in a.
func mergeNames(a, b []string) []string {
	out := slices.Clone(a)
	for _, n := range b {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func joinBindings(bs []BindingType) string {
	s := make([]string, len(bs))
	for i, b := range bs {
		s[i] = string(b)
	}
	return strings.Join(s, ", ")
}

// keys returns m's keys sorted, so that errors come in a stable order.
func keys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

// checkAPIVersion checks group/version or version, as Kubernetes parses it.
func checkAPIVersion(s string) error {
	if s == "" {
		return nil
	}
	parts := strings.Split(s, "/")
	if len(parts) > 2 || slices.Contains(parts, "") || strings.ContainsAny(s, " \t\n") {
		return fmt.Errorf("apiVersion %q is not GROUP/VERSION or VERSION; write v1 or apps/v1", s)
	}
	return nil
}

func compileJQ(src string) (*gojq.Code, error) {
	if strings.TrimSpace(src) == "" {
		return nil, nil
	}
	q, err := gojq.Parse(src)
	if err != nil {
		return nil, fmt.Errorf("jq program %q does not parse: %v", document.Clip(src, 80), err)
	}
	code, err := gojq.Compile(q)
	if err != nil {
		return nil, fmt.Errorf("jq program %q does not compile: %v", document.Clip(src, 80), err)
	}
	return code, nil
}
