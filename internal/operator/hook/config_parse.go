package hook

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/itchyny/gojq"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/operator/schedule"
)

// Limits of a hook's configuration: it is untrusted input.
const (
	maxBindings   = 1000 // schedule or kubernetes bindings of one hook
	maxListItems  = 1000 // names, values, expressions of one selector
	maxNameLength = 1024 // binding names, queues, groups
)

// configParser walks the tree of one --config output.
type configParser struct {
	hook string
	kind Kind
	pos  *document.Pos
}

// fail makes a ConfigError for the node at path.
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
	if c.Version == "v1" {
		err = p.v1(root, c)
	} else {
		err = p.v0(root, c)
	}
	if err != nil {
		return nil, err
	}
	// A hook with settings and no binding is accepted, as shell-operator
	// accepts it; one with nothing at all is surely a mistake.
	if len(c.Orders) == 0 && len(c.Schedules) == 0 && len(c.Kubernetes) == 0 && !c.HasWebhooks() && c.Settings == nil {
		return nil, &ConfigError{Hook: name, Msg: "the hook has no bindings, so it would never run; add one of " + joinBindings(append(slices.Clone(lifecycleKeys[k]), Schedule, Kubernetes))}
	}
	return c, nil
}

func joinBindings(bs []BindingType) string {
	s := make([]string, len(bs))
	for i, b := range bs {
		s[i] = string(b)
	}
	return strings.Join(s, ", ")
}

func describeValue(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case nil:
		return "null"
	case bool, int64, float64, json.Number:
		return fmt.Sprint(v)
	}
	return document.Describe(v)
}

// keys returns m's keys sorted, so that errors come in a stable order.
func keys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// v1 reads a configVersion v1 configuration. Like shell-operator, it
// reports every top-level field that is wrong, not only the first (each
// field's own checks stop at its first problem); the checks across
// bindings run when the fields are right.
func (p *configParser) v1(root map[string]any, c *Config) error {
	var errs []error
	for _, key := range keys(root) {
		path := document.Path{document.Key(key)}
		val := root[key]
		b := BindingType(key)
		switch {
		case key == "configVersion":
		case slices.Contains(lifecycleKeys[p.kind], b):
			o, err := p.order(path, val)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			c.Orders[b] = o
		case key == "schedule":
			if err := p.schedules(path, val, c, false); err != nil {
				errs = append(errs, err)
			}
		case key == "kubernetes":
			if err := p.kubernetesList(path, val, c); err != nil {
				errs = append(errs, err)
			}
		case key == string(KubernetesValidating):
			if err := p.validatingList(path, val, c); err != nil {
				errs = append(errs, err)
			}
		case key == string(KubernetesConversion):
			if err := p.conversionList(path, val, c); err != nil {
				errs = append(errs, err)
			}
		case key == "settings":
			s, err := p.settings(path, val)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			c.Settings = s
		default:
			errs = append(errs, p.unknownTop(path, key))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := p.crossChecks(c); err != nil {
		return err
	}
	return p.webhookChecks(c)
}

func (p *configParser) unknownTop(path document.Path, key string) error {
	b := BindingType(key)
	switch {
	case slices.Contains(otherKindKeys[p.kind], b):
		other := Module
		if p.kind == Module {
			other = Global
		}
		return p.fail(path, "%s is a binding of %s hooks, and this is a %s hook; use one of %s", key, other, p.kind, joinBindings(lifecycleKeys[p.kind]))
	case key == "onKubernetesEvent":
		return p.fail(path, "onKubernetesEvent is the configVersion v0 name; with configVersion: v1 write kubernetes")
	case key == "kubernetesMutating":
		return p.fail(path, "mutating webhooks are not supported by strata's operator (kubernetesValidating and kubernetesCustomResourceConversion are); move this binding to a hook run by shell-operator or remove it")
	}
	// "is a forbidden property" is shell-operator's wording for it.
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

func (p *configParser) str(path document.Path, v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", p.fail(path, "must be a string, not %s", describeValue(v))
	}
	if len(s) > maxNameLength {
		return "", p.fail(path, "is longer than %d bytes", maxNameLength)
	}
	return s, nil
}

func (p *configParser) boolean(path document.Path, v any) (bool, error) {
	switch b := v.(type) {
	case bool:
		return b, nil
	case string:
		return false, p.fail(path, "must be a boolean, not the string %q; write true or false without quotes", b)
	}
	return false, p.fail(path, "must be true or false, not %s", describeValue(v))
}

func (p *configParser) mapAt(path document.Path, v any, what string) (map[string]any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, p.fail(path, "must be a map (%s), not %s", what, describeValue(v))
	}
	return m, nil
}

func (p *configParser) list(path document.Path, v any, what string) ([]any, error) {
	l, ok := v.([]any)
	if !ok {
		return nil, p.fail(path, "must be a list of %s, not %s", what, describeValue(v))
	}
	if len(l) > maxBindings {
		return nil, p.fail(path, "has %d items; at most %d are allowed", len(l), maxBindings)
	}
	return l, nil
}

func (p *configParser) strList(path document.Path, v any, what string) ([]string, error) {
	l, err := p.list(path, v, what)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(l))
	for i, x := range l {
		s, err := p.str(path.Append(document.Index(i)), x)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func (p *configParser) unknown(path document.Path, key string, known []string) error {
	if s := document.Closest(key, known); s != "" {
		return p.fail(path, "unknown field; did you mean %s?", s)
	}
	return p.fail(path, "unknown field; known fields are %s", strings.Join(known, ", "))
}

var scheduleKeys = []string{"name", "crontab", "allowFailure", "includeSnapshotsFrom", "queue", "group"}
var scheduleKeysV0 = []string{"name", "crontab", "allowFailure"}

func (p *configParser) schedules(path document.Path, v any, c *Config, v0 bool) error {
	l, err := p.list(path, v, "schedules such as {crontab: \"*/5 * * * *\"}")
	if err != nil {
		return err
	}
	if len(l) == 0 && !v0 {
		return p.fail(path, "is an empty list; remove it or add a schedule such as {crontab: \"*/5 * * * *\"}")
	}
	known := scheduleKeys
	if v0 {
		known = scheduleKeysV0
	}
	for i, item := range l {
		ipath := path.Append(document.Index(i))
		m, err := p.mapAt(ipath, item, "a schedule such as {crontab: \"*/5 * * * *\"}")
		if err != nil {
			return err
		}
		s := &ScheduleBinding{Name: string(Schedule), Queue: DefaultQueue}
		for _, key := range keys(m) {
			kpath := ipath.Append(document.Key(key))
			val := m[key]
			switch {
			case !slices.Contains(known, key):
				return p.unknown(kpath, key, known)
			case key == "name":
				if s.Name, err = p.str(kpath, val); err != nil {
					return err
				}
				if s.Name == "" {
					s.Name = string(Schedule)
				}
			case key == "crontab":
				if s.Crontab, err = p.str(kpath, val); err != nil {
					return err
				}
				if s.Spec, err = schedule.Parse(s.Crontab); err != nil {
					return p.fail(kpath, "%v", err)
				}
			case key == "allowFailure":
				if s.AllowFailure, err = p.boolean(kpath, val); err != nil {
					return err
				}
			case key == "includeSnapshotsFrom":
				if s.IncludeSnapshotsFrom, err = p.strList(kpath, val, "kubernetes binding names"); err != nil {
					return err
				}
				if len(s.IncludeSnapshotsFrom) == 0 {
					return p.fail(kpath, "is an empty list; remove it or name kubernetes bindings of this hook")
				}
			case key == "queue":
				if s.Queue, err = p.queue(kpath, val); err != nil {
					return err
				}
			case key == "group":
				if s.Group, err = p.str(kpath, val); err != nil {
					return err
				}
			}
		}
		if s.Spec == nil {
			return p.fail(ipath, "has no crontab; add crontab: \"*/5 * * * *\" (5 fields, or 6 with seconds first)")
		}
		c.Schedules = append(c.Schedules, s)
	}
	return nil
}

func (p *configParser) queue(path document.Path, v any) (string, error) {
	s, err := p.str(path, v)
	if err != nil {
		return "", err
	}
	if s == "" {
		return DefaultQueue, nil
	}
	return s, nil
}

var kubernetesKeys = []string{"name", "apiVersion", "kind", "nameSelector", "labelSelector", "fieldSelector", "namespace",
	"jqFilter", "executeHookOnEvent", "watchEvent", "executeHookOnSynchronization", "waitForSynchronization",
	"keepFullObjectsInMemory", "allowFailure", "resynchronizationPeriod", "includeSnapshotsFrom", "queue", "group"}

func (p *configParser) kubernetesList(path document.Path, v any, c *Config) error {
	l, err := p.list(path, v, "kubernetes bindings such as {apiVersion: v1, kind: Pod}")
	if err != nil {
		return err
	}
	if len(l) == 0 {
		return p.fail(path, "is an empty list; remove it or add a binding such as {apiVersion: v1, kind: Pod}")
	}
	for i, item := range l {
		ipath := path.Append(document.Index(i))
		m, err := p.mapAt(ipath, item, "a kubernetes binding such as {apiVersion: v1, kind: Pod}")
		if err != nil {
			return err
		}
		k, err := p.kubernetes(ipath, m)
		if err != nil {
			return err
		}
		c.Kubernetes = append(c.Kubernetes, k)
	}
	return nil
}

func (p *configParser) kubernetes(ipath document.Path, m map[string]any) (*KubernetesBinding, error) {
	k := &KubernetesBinding{
		Name:                         string(Kubernetes),
		Queue:                        DefaultQueue,
		ExecuteHookOnEvent:           []WatchEvent{Added, Modified, Deleted},
		ExecuteHookOnSynchronization: true,
		WaitForSynchronization:       true,
		KeepFullObjectsInMemory:      true,
	}
	var err error
	var onEvent, watchEvent []WatchEvent
	hasOnEvent, hasWatchEvent, queueSet := false, false, false
	waitSync := true
	for _, key := range keys(m) {
		kpath := ipath.Append(document.Key(key))
		val := m[key]
		switch key {
		case "name":
			if k.Name, err = p.str(kpath, val); err != nil {
				return nil, err
			}
			if k.Name == "" {
				k.Name = string(Kubernetes)
			}
		case "apiVersion":
			if k.APIVersion, err = p.str(kpath, val); err != nil {
				return nil, err
			}
			if err := checkAPIVersion(k.APIVersion); err != nil {
				return nil, p.fail(kpath, "%v", err)
			}
		case "kind":
			if k.Kind, err = p.str(kpath, val); err != nil {
				return nil, err
			}
		case "nameSelector":
			if k.NameSelector, err = p.nameSelector(kpath, val); err != nil {
				return nil, err
			}
		case "labelSelector":
			if k.LabelSelector, err = p.labelSelector(kpath, val); err != nil {
				return nil, err
			}
		case "fieldSelector":
			if k.FieldSelector, err = p.fieldSelector(kpath, val); err != nil {
				return nil, err
			}
		case "namespace":
			if k.Namespace, err = p.namespaceSelector(kpath, val); err != nil {
				return nil, err
			}
		case "jqFilter":
			if k.JqFilter, err = p.str(kpath, val); err != nil {
				return nil, err
			}
			if k.filter, err = compileJQ(k.JqFilter); err != nil {
				return nil, p.fail(kpath, "%v", err)
			}
		case "executeHookOnEvent":
			hasOnEvent = true
			if onEvent, err = p.watchEvents(kpath, val); err != nil {
				return nil, err
			}
		case "watchEvent":
			hasWatchEvent = true
			if watchEvent, err = p.watchEvents(kpath, val); err != nil {
				return nil, err
			}
		case "executeHookOnSynchronization":
			if k.ExecuteHookOnSynchronization, err = p.boolean(kpath, val); err != nil {
				return nil, err
			}
		case "waitForSynchronization":
			if waitSync, err = p.boolean(kpath, val); err != nil {
				return nil, err
			}
		case "keepFullObjectsInMemory":
			if k.KeepFullObjectsInMemory, err = p.boolean(kpath, val); err != nil {
				return nil, err
			}
		case "allowFailure":
			if k.AllowFailure, err = p.boolean(kpath, val); err != nil {
				return nil, err
			}
		case "resynchronizationPeriod":
			if k.ResynchronizationPeriod, err = p.str(kpath, val); err != nil {
				return nil, err
			}
		case "includeSnapshotsFrom":
			if k.IncludeSnapshotsFrom, err = p.strList(kpath, val, "kubernetes binding names"); err != nil {
				return nil, err
			}
			if len(k.IncludeSnapshotsFrom) == 0 {
				return nil, p.fail(kpath, "is an empty list; remove it or name kubernetes bindings of this hook")
			}
		case "queue":
			if k.Queue, err = p.queue(kpath, val); err != nil {
				return nil, err
			}
			s, _ := val.(string)
			queueSet = s != ""
		case "group":
			if k.Group, err = p.str(kpath, val); err != nil {
				return nil, err
			}
		case "namespaceSelector":
			return nil, p.fail(kpath, "namespaceSelector is the v0 name; with configVersion: v1 write namespace: {nameSelector: {matchNames: [...]}}")
		default:
			return nil, p.unknown(kpath, key, kubernetesKeys)
		}
	}
	if k.Kind == "" {
		return nil, p.fail(ipath, "has no kind; add the kind of the objects to watch, such as kind: Pod")
	}
	// executeHookOnEvent wins over its old name watchEvent.
	switch {
	case hasOnEvent:
		k.ExecuteHookOnEvent = onEvent
	case hasWatchEvent:
		k.ExecuteHookOnEvent = watchEvent
	}
	// Waiting can be turned off only for a queue other than main.
	k.WaitForSynchronization = waitSync || !queueSet
	if k.NameSelector != nil {
		for i, r := range k.FieldSelector {
			if r.Field == "metadata.name" {
				return nil, p.fail(ipath.Append(document.Key("fieldSelector")).Append(document.Key("matchExpressions")).Append(document.Index(i)),
					"a fieldSelector on metadata.name and nameSelector.matchNames exclude each other; keep one of them")
			}
		}
	}
	return k, nil
}

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

func (p *configParser) watchEvents(path document.Path, v any) ([]WatchEvent, error) {
	l, err := p.strList(path, v, "watch events (Added, Modified, Deleted)")
	if err != nil {
		return nil, err
	}
	out := []WatchEvent{}
	for i, s := range l {
		e := WatchEvent(s)
		if e != Added && e != Modified && e != Deleted {
			hint := "Added, Modified or Deleted"
			if x := document.Closest(s, []string{"Added", "Modified", "Deleted"}); x != "" {
				hint = x
			}
			return nil, p.fail(path.Append(document.Index(i)), "%q is not a watch event; write %s", s, hint)
		}
		out = append(out, e)
	}
	return out, nil
}

func (p *configParser) nameSelector(path document.Path, v any) ([]string, error) {
	m, err := p.mapAt(path, v, "{matchNames: [name, ...]}")
	if err != nil {
		return nil, err
	}
	var names []string
	has := false
	for _, key := range keys(m) {
		kpath := path.Append(document.Key(key))
		if key != "matchNames" {
			return nil, p.unknown(kpath, key, []string{"matchNames"})
		}
		has = true
		if names, err = p.strList(kpath, m[key], "object names"); err != nil {
			return nil, err
		}
	}
	if !has {
		return nil, p.fail(path, "has no matchNames; write nameSelector: {matchNames: [name, ...]}")
	}
	return names, nil
}

func (p *configParser) labelSelector(path document.Path, v any) (*LabelSelector, error) {
	m, err := p.mapAt(path, v, "{matchLabels: {...}, matchExpressions: [...]}")
	if err != nil {
		return nil, err
	}
	if len(m) == 0 {
		return nil, p.fail(path, "is empty; give matchLabels or matchExpressions, or remove it")
	}
	s := &LabelSelector{}
	for _, key := range keys(m) {
		kpath := path.Append(document.Key(key))
		switch key {
		case "matchLabels":
			lm, err := p.mapAt(kpath, m[key], "label: value pairs")
			if err != nil {
				return nil, err
			}
			s.MatchLabels = make(map[string]string, len(lm))
			for _, lk := range keys(lm) {
				lv, ok := lm[lk].(string)
				if !ok {
					return nil, p.fail(kpath.Append(document.Key(lk)), "label values are strings; quote %s", describeValue(lm[lk]))
				}
				s.MatchLabels[lk] = lv
			}
		case "matchExpressions":
			l, err := p.list(kpath, m[key], "expressions {key, operator, values}")
			if err != nil {
				return nil, err
			}
			for i, item := range l {
				r, err := p.labelRequirement(kpath.Append(document.Index(i)), item)
				if err != nil {
					return nil, err
				}
				s.MatchExpressions = append(s.MatchExpressions, r)
			}
		default:
			return nil, p.unknown(kpath, key, []string{"matchLabels", "matchExpressions"})
		}
	}
	return s, nil
}

func (p *configParser) labelRequirement(path document.Path, v any) (LabelRequirement, error) {
	var r LabelRequirement
	m, err := p.mapAt(path, v, "{key, operator, values}")
	if err != nil {
		return r, err
	}
	hasValues := false
	for _, key := range keys(m) {
		kpath := path.Append(document.Key(key))
		switch key {
		case "key":
			if r.Key, err = p.str(kpath, m[key]); err != nil {
				return r, err
			}
		case "operator":
			if r.Operator, err = p.str(kpath, m[key]); err != nil {
				return r, err
			}
		case "values":
			hasValues = true
			if r.Values, err = p.strList(kpath, m[key], "label values"); err != nil {
				return r, err
			}
		default:
			return r, p.unknown(kpath, key, []string{"key", "operator", "values"})
		}
	}
	if r.Key == "" {
		return r, p.fail(path, "has no key; write the label's name, such as key: app")
	}
	switch r.Operator {
	case "In", "NotIn":
		if len(r.Values) == 0 {
			return r, p.fail(path, "operator %s needs a non-empty values list", r.Operator)
		}
	case "Exists", "DoesNotExist":
		if hasValues && len(r.Values) > 0 {
			return r, p.fail(path, "operator %s takes no values; remove values", r.Operator)
		}
	case "":
		return r, p.fail(path, "has no operator; write one of In, NotIn, Exists, DoesNotExist")
	default:
		return r, p.fail(path.Append(document.Key("operator")), "%q is not an operator; write one of In, NotIn, Exists, DoesNotExist", r.Operator)
	}
	return r, nil
}

func (p *configParser) fieldSelector(path document.Path, v any) ([]FieldRequirement, error) {
	m, err := p.mapAt(path, v, "{matchExpressions: [{field, operator, value}]}")
	if err != nil {
		return nil, err
	}
	var out []FieldRequirement
	has := false
	for _, key := range keys(m) {
		kpath := path.Append(document.Key(key))
		if key != "matchExpressions" {
			return nil, p.unknown(kpath, key, []string{"matchExpressions"})
		}
		has = true
		l, err := p.list(kpath, m[key], "expressions {field, operator, value}")
		if err != nil {
			return nil, err
		}
		for i, item := range l {
			ipath := kpath.Append(document.Index(i))
			im, err := p.mapAt(ipath, item, "{field, operator, value}")
			if err != nil {
				return nil, err
			}
			var r FieldRequirement
			for _, ik := range keys(im) {
				fpath := ipath.Append(document.Key(ik))
				switch ik {
				case "field":
					r.Field, err = p.str(fpath, im[ik])
				case "operator":
					r.Operator, err = p.str(fpath, im[ik])
				case "value":
					r.Value, err = p.str(fpath, im[ik])
				default:
					err = p.unknown(fpath, ik, []string{"field", "operator", "value"})
				}
				if err != nil {
					return nil, err
				}
			}
			if r.Field == "" {
				return nil, p.fail(ipath, "has no field; write a field path such as field: metadata.name")
			}
			switch r.Operator {
			case "=", "==", "Equals", "!=", "NotEquals":
			default:
				return nil, p.fail(ipath, "operator %q is not one of =, ==, Equals, !=, NotEquals", r.Operator)
			}
			out = append(out, r)
		}
	}
	if !has {
		return nil, p.fail(path, "has no matchExpressions; write fieldSelector: {matchExpressions: [{field: metadata.name, operator: Equals, value: x}]}")
	}
	return out, nil
}

func (p *configParser) namespaceSelector(path document.Path, v any) (*NamespaceSelector, error) {
	m, err := p.mapAt(path, v, "{nameSelector: {matchNames: [...]}} or {labelSelector: {...}}")
	if err != nil {
		return nil, err
	}
	if len(m) == 0 {
		return nil, p.fail(path, "is empty; give nameSelector or labelSelector, or remove it to watch every namespace")
	}
	s := &NamespaceSelector{}
	for _, key := range keys(m) {
		kpath := path.Append(document.Key(key))
		switch key {
		case "nameSelector":
			if s.NameSelector, err = p.nameSelector(kpath, m[key]); err != nil {
				return nil, err
			}
		case "labelSelector":
			if s.LabelSelector, err = p.labelSelector(kpath, m[key]); err != nil {
				return nil, err
			}
		default:
			return nil, p.unknown(kpath, key, []string{"nameSelector", "labelSelector"})
		}
	}
	return s, nil
}

func (p *configParser) settings(path document.Path, v any) (*Settings, error) {
	m, err := p.mapAt(path, v, "{executionMinInterval: 5s, executionBurst: 1}")
	if err != nil {
		return nil, err
	}
	s := &Settings{}
	for _, key := range keys(m) {
		kpath := path.Append(document.Key(key))
		switch key {
		case "executionMinInterval":
			str, err := p.str(kpath, m[key])
			if err != nil {
				return nil, err
			}
			d, err := time.ParseDuration(str)
			if err != nil || d < 0 {
				return nil, p.fail(kpath, "%q is not a duration; write one such as 5s or 1m", str)
			}
			s.ExecutionMinInterval = d
		case "executionBurst":
			n, ok := m[key].(int64)
			if !ok || n < 0 || n > math.MaxInt32 {
				return nil, p.fail(kpath, "%s is not a count; write a non-negative integer such as 1", describeValue(m[key]))
			}
			s.ExecutionBurst = int(n)
		case "executionMinPeriod":
			return nil, p.fail(kpath, "unknown field; the setting is called executionMinInterval")
		default:
			return nil, p.unknown(kpath, key, []string{"executionMinInterval", "executionBurst"})
		}
	}
	return s, nil
}

// crossChecks checks what involves several bindings: includeSnapshotsFrom
// naming kubernetes bindings, and groups adding their bindings' snapshots.
// Names need not be unique, as in shell-operator (several bindings without
// a name are all "kubernetes"); a snapshot of a shared name, and the
// refreshed objects of its Synchronization, are the first such binding's,
// as shell-operator reads them.
func (p *configParser) crossChecks(c *Config) error {
	seen := map[string]int{}
	for i, k := range c.Kubernetes {
		if _, ok := seen[k.Name]; !ok {
			seen[k.Name] = i
		}
	}
	check := func(path document.Path, names []string) error {
		for j, n := range names {
			if _, ok := seen[n]; !ok {
				var all []string
				for _, k := range c.Kubernetes {
					all = append(all, k.Name)
				}
				hint := "this hook has no kubernetes bindings"
				if len(all) > 0 {
					hint = "this hook's kubernetes bindings are " + strings.Join(all, ", ")
				}
				return p.fail(path.Append(document.Index(j)), "%q names no kubernetes binding of this hook; %s", n, hint)
			}
		}
		return nil
	}
	for i, k := range c.Kubernetes {
		if err := check(document.Path{document.Key("kubernetes"), document.Index(i), document.Key("includeSnapshotsFrom")}, k.IncludeSnapshotsFrom); err != nil {
			return err
		}
	}
	for i, s := range c.Schedules {
		if err := check(document.Path{document.Key("schedule"), document.Index(i), document.Key("includeSnapshotsFrom")}, s.IncludeSnapshotsFrom); err != nil {
			return err
		}
	}
	groups := map[string][]string{}
	for _, k := range c.Kubernetes {
		if k.Group != "" {
			groups[k.Group] = append(groups[k.Group], k.Name)
		}
	}
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

var v0Keys = map[Kind][]string{
	Global: {"onStartup", "beforeAll", "afterAll", "schedule", "onKubernetesEvent"},
	Module: {"onStartup", "beforeHelm", "afterHelm", "beforeDeleteHelm", "afterDeleteHelm", "schedule", "onKubernetesEvent"},
}

// v0 reads the legacy configuration (no configVersion).
func (p *configParser) v0(root map[string]any, c *Config) error {
	var errs []error
	for _, key := range keys(root) {
		path := document.Path{document.Key(key)}
		val := root[key]
		b := BindingType(key)
		switch {
		case key == "configVersion":
		case slices.Contains(lifecycleKeys[p.kind], b):
			o, err := p.order(path, val)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			c.Orders[b] = o
		case key == "schedule":
			if err := p.schedules(path, val, c, true); err != nil {
				errs = append(errs, err)
			}
		case key == "onKubernetesEvent":
			if err := p.kubernetesV0(path, val, c); err != nil {
				errs = append(errs, err)
			}
		case key == "kubernetes" || key == "settings":
			errs = append(errs, p.fail(path, "%s needs configVersion: v1; add configVersion: v1 (and use kubernetes, not onKubernetesEvent)", key))
		case slices.Contains(otherKindKeys[p.kind], b):
			errs = append(errs, p.unknownTop(path, key))
		default:
			if s := document.Closest(key, append([]string{"configVersion"}, v0Keys[p.kind]...)); s != "" {
				errs = append(errs, p.fail(path, "unknown field (%s is a forbidden property); did you mean %s?", key, s))
				continue
			}
			errs = append(errs, p.fail(path, "unknown field (%s is a forbidden property) of a configuration without configVersion (v0); write configVersion: v1 and the v1 bindings", key))
		}
	}
	return errors.Join(errs...)
}

var kubernetesKeysV0 = []string{"name", "event", "kind", "selector", "objectName", "namespaceSelector", "jqFilter", "allowFailure"}

func (p *configParser) kubernetesV0(path document.Path, v any, c *Config) error {
	l, err := p.list(path, v, "bindings such as {kind: Pod}")
	if err != nil {
		return err
	}
	for i, item := range l {
		ipath := path.Append(document.Index(i))
		m, err := p.mapAt(ipath, item, "a binding such as {kind: Pod}")
		if err != nil {
			return err
		}
		k := &KubernetesBinding{
			Name:                    "onKubernetesEvent",
			Queue:                   DefaultQueue,
			ExecuteHookOnEvent:      []WatchEvent{Added, Modified, Deleted},
			WaitForSynchronization:  true,
			KeepFullObjectsInMemory: true,
			// v0 monitors send no Synchronization, only events.
			ExecuteHookOnSynchronization: false,
		}
		for _, key := range keys(m) {
			kpath := ipath.Append(document.Key(key))
			val := m[key]
			switch key {
			case "name":
				if k.Name, err = p.str(kpath, val); err != nil {
					return err
				}
				if k.Name == "" {
					k.Name = "onKubernetesEvent"
				}
			case "event":
				evs, err := p.strList(kpath, val, "events (add, update, delete)")
				if err != nil {
					return err
				}
				k.ExecuteHookOnEvent = []WatchEvent{}
				for j, e := range evs {
					switch e {
					case "add":
						k.ExecuteHookOnEvent = append(k.ExecuteHookOnEvent, Added)
					case "update":
						k.ExecuteHookOnEvent = append(k.ExecuteHookOnEvent, Modified)
					case "delete":
						k.ExecuteHookOnEvent = append(k.ExecuteHookOnEvent, Deleted)
					default:
						return p.fail(kpath.Append(document.Index(j)), "%q is not a v0 event; write add, update or delete", e)
					}
				}
			case "kind":
				if k.Kind, err = p.str(kpath, val); err != nil {
					return err
				}
			case "selector":
				if k.LabelSelector, err = p.labelSelector(kpath, val); err != nil {
					return err
				}
			case "objectName":
				name, err := p.str(kpath, val)
				if err != nil {
					return err
				}
				if name != "" {
					k.NameSelector = []string{name}
				}
			case "namespaceSelector":
				ns, err := p.mapAt(kpath, val, "{matchNames: [...]} or {any: true}")
				if err != nil {
					return err
				}
				var names []string
				anyNS := false
				for _, nk := range keys(ns) {
					npath := kpath.Append(document.Key(nk))
					switch nk {
					case "matchNames":
						if names, err = p.strList(npath, ns[nk], "namespace names"); err != nil {
							return err
						}
					case "any":
						if anyNS, err = p.boolean(npath, ns[nk]); err != nil {
							return err
						}
					default:
						return p.unknown(npath, nk, []string{"matchNames", "any"})
					}
				}
				if !anyNS {
					k.Namespace = &NamespaceSelector{NameSelector: names}
				}
			case "jqFilter":
				if k.JqFilter, err = p.str(kpath, val); err != nil {
					return err
				}
				if k.filter, err = compileJQ(k.JqFilter); err != nil {
					return p.fail(kpath, "%v", err)
				}
			case "allowFailure":
				if k.AllowFailure, err = p.boolean(kpath, val); err != nil {
					return err
				}
			default:
				return p.unknown(kpath, key, kubernetesKeysV0)
			}
		}
		if k.Kind == "" {
			return p.fail(ipath, "has no kind; add the kind of the objects to watch, such as kind: Pod")
		}
		c.Kubernetes = append(c.Kubernetes, k)
	}
	return nil
}
