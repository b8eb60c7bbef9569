package hook

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/operator/schedule"
)

// The shapes of a hook's configuration, as document.Decode reads them: one
// root per configVersion, sharing the binding shapes where the fields are
// the same (a v1 schedule is a v0 one with more fields). Each type says in
// its CheckTree what a value must be and what to write instead, so every
// value of the tree meets a Checker before encoding/json decodes it;
// config_parse.go turns the shapes into a Config and checks what involves
// several fields. The webhook bindings' shapes are in config_webhook.go.

// configV1 is a configVersion v1 configuration but for configVersion and
// the lifecycle bindings, which parseConfig reads itself (their keys
// depend on the kind of hook).
type configV1 struct {
	Schedule   schedules          `json:"schedule"`
	Kubernetes kubernetesBindings `json:"kubernetes"`
	Validating validatingWebhooks `json:"kubernetesValidating"`
	Conversion conversionBindings `json:"kubernetesCustomResourceConversion"`
	Settings   *settingsShape     `json:"settings"`
}

// configV0 is the legacy configuration (no configVersion), likewise.
type configV0 struct {
	Schedule          schedulesV0          `json:"schedule"`
	OnKubernetesEvent kubernetesV0Bindings `json:"onKubernetesEvent"`
}

type (
	schedulesV0          []scheduleV0Shape
	schedules            []scheduleShape
	kubernetesV0Bindings []kubernetesV0Shape
	kubernetesBindings   []kubernetesShape
)

func (schedulesV0) CheckTree(v any) error {
	return checkList(v, `schedules such as {crontab: "*/5 * * * *"}`, "")
}
func (schedules) CheckTree(v any) error {
	return checkList(v, `schedules such as {crontab: "*/5 * * * *"}`, `remove it or add a schedule such as {crontab: "*/5 * * * *"}`)
}
func (kubernetesV0Bindings) CheckTree(v any) error {
	return checkList(v, "bindings such as {kind: Pod}", "")
}
func (kubernetesBindings) CheckTree(v any) error {
	return checkList(v, "kubernetes bindings such as {apiVersion: v1, kind: Pod}", "remove it or add a binding such as {apiVersion: v1, kind: Pod}")
}

// scheduleV0Shape is a schedule binding of configVersion v0.
type scheduleV0Shape struct {
	Name         str     `json:"name"`
	Crontab      crontab `json:"crontab"`
	AllowFailure flag    `json:"allowFailure"`
}

func (scheduleV0Shape) CheckTree(v any) error {
	return checkMap(v, `a schedule such as {crontab: "*/5 * * * *"}`)
}

// scheduleShape is a schedule binding of configVersion v1.
type scheduleShape struct {
	scheduleV0Shape
	IncludeSnapshotsFrom snapshotNames `json:"includeSnapshotsFrom"`
	Queue                str           `json:"queue"`
	Group                str           `json:"group"`
}

// kubernetesShape is a kubernetes binding of configVersion v1.
type kubernetesShape struct {
	Name                         str                 `json:"name"`
	APIVersion                   apiVersion          `json:"apiVersion"`
	Kind                         str                 `json:"kind"`
	NameSelector                 *nameSelectorShape  `json:"nameSelector"`
	LabelSelector                *labelSelectorShape `json:"labelSelector"`
	FieldSelector                *fieldSelectorShape `json:"fieldSelector"`
	Namespace                    *namespaceShape     `json:"namespace"`
	JqFilter                     jqFilter            `json:"jqFilter"`
	ExecuteHookOnEvent           watchEvents         `json:"executeHookOnEvent"`
	WatchEvent                   watchEvents         `json:"watchEvent"`
	ExecuteHookOnSynchronization *flag               `json:"executeHookOnSynchronization"`
	WaitForSynchronization       *flag               `json:"waitForSynchronization"`
	KeepFullObjectsInMemory      *flag               `json:"keepFullObjectsInMemory"`
	AllowFailure                 flag                `json:"allowFailure"`
	ResynchronizationPeriod      str                 `json:"resynchronizationPeriod"`
	IncludeSnapshotsFrom         snapshotNames       `json:"includeSnapshotsFrom"`
	Queue                        str                 `json:"queue"`
	Group                        str                 `json:"group"`
}

func (kubernetesShape) CheckTree(v any) error {
	return checkMap(v, "a kubernetes binding such as {apiVersion: v1, kind: Pod}")
}

func (kubernetesShape) UnknownField(key string, _ []string) string {
	if key == "namespaceSelector" {
		return "namespaceSelector is the v0 name; with configVersion: v1 write namespace: {nameSelector: {matchNames: [...]}}"
	}
	return ""
}

// kubernetesV0Shape is an onKubernetesEvent binding of configVersion v0.
type kubernetesV0Shape struct {
	Name              str                 `json:"name"`
	Event             v0Events            `json:"event"`
	Kind              str                 `json:"kind"`
	Selector          *labelSelectorShape `json:"selector"`
	ObjectName        str                 `json:"objectName"`
	NamespaceSelector *namespaceV0Shape   `json:"namespaceSelector"`
	JqFilter          jqFilter            `json:"jqFilter"`
	AllowFailure      flag                `json:"allowFailure"`
}

func (kubernetesV0Shape) CheckTree(v any) error { return checkMap(v, "a binding such as {kind: Pod}") }

type nameSelectorShape struct {
	MatchNames objectNames `json:"matchNames"`
}

func (nameSelectorShape) CheckTree(v any) error { return checkMap(v, "{matchNames: [name, ...]}") }

type labelSelectorShape struct {
	MatchLabels      labelMap   `json:"matchLabels"`
	MatchExpressions labelExprs `json:"matchExpressions"`
}

func (labelSelectorShape) CheckTree(v any) error {
	if err := checkMap(v, "{matchLabels: {...}, matchExpressions: [...]}"); err != nil {
		return err
	}
	if len(v.(map[string]any)) == 0 {
		return errors.New("is empty; give matchLabels or matchExpressions, or remove it")
	}
	return nil
}

type labelExprs []labelExprShape

func (labelExprs) CheckTree(v any) error {
	return checkList(v, "expressions {key, operator, values}", "")
}

type labelExprShape struct {
	Key      str           `json:"key"`
	Operator labelOperator `json:"operator"`
	Values   labelValues   `json:"values"`
}

func (labelExprShape) CheckTree(v any) error { return checkMap(v, "{key, operator, values}") }

type fieldSelectorShape struct {
	MatchExpressions fieldExprs `json:"matchExpressions"`
}

func (fieldSelectorShape) CheckTree(v any) error {
	return checkMap(v, "{matchExpressions: [{field, operator, value}]}")
}

type fieldExprs []fieldExprShape

func (fieldExprs) CheckTree(v any) error {
	return checkList(v, "expressions {field, operator, value}", "")
}

type fieldExprShape struct {
	Field    str `json:"field"`
	Operator str `json:"operator"`
	Value    str `json:"value"`
}

func (fieldExprShape) CheckTree(v any) error { return checkMap(v, "{field, operator, value}") }

type namespaceShape struct {
	NameSelector  *nameSelectorShape  `json:"nameSelector"`
	LabelSelector *labelSelectorShape `json:"labelSelector"`
}

func (namespaceShape) CheckTree(v any) error {
	if err := checkMap(v, "{nameSelector: {matchNames: [...]}} or {labelSelector: {...}}"); err != nil {
		return err
	}
	if len(v.(map[string]any)) == 0 {
		return errors.New("is empty; give nameSelector or labelSelector, or remove it to watch every namespace")
	}
	return nil
}

type namespaceV0Shape struct {
	MatchNames namespaceNames `json:"matchNames"`
	Any        flag           `json:"any"`
}

func (namespaceV0Shape) CheckTree(v any) error {
	return checkMap(v, "{matchNames: [...]} or {any: true}")
}

type settingsShape struct {
	ExecutionMinInterval duration `json:"executionMinInterval"`
	ExecutionBurst       count    `json:"executionBurst"`
}

func (settingsShape) CheckTree(v any) error {
	return checkMap(v, "{executionMinInterval: 5s, executionBurst: 1}")
}

func (settingsShape) UnknownField(key string, _ []string) string {
	if key == "executionMinPeriod" {
		return "unknown field; the setting is called executionMinInterval"
	}
	return ""
}

// The values, each with its rules.
type (
	str            string // a string of at most maxNameLength bytes
	flag           bool
	crontab        string
	apiVersion     string
	jqFilter       string
	duration       string // a time.ParseDuration, not negative
	count          int    // a non-negative int32
	watchEvent     string
	v0Event        string // add, update or delete
	labelOperator  string // In, NotIn, Exists, DoesNotExist or ""
	labelValue     string
	labelMap       map[string]labelValue
	watchEvents    []watchEvent
	v0Events       []v0Event
	snapshotNames  []str // includeSnapshotsFrom of a schedule or kubernetes binding
	objectNames    []str
	namespaceNames []str
	labelValues    []str
)

func (str) CheckTree(v any) error { return checkStr(v) }

func (flag) CheckTree(v any) error {
	switch b := v.(type) {
	case bool:
		return nil
	case string:
		return fmt.Errorf("must be a boolean, not the string %q; write true or false without quotes", b)
	}
	return fmt.Errorf("must be true or false, not %s", describeValue(v))
}

// or returns the flag's value, def when it was not given.
func (f *flag) or(def bool) bool {
	if f == nil {
		return def
	}
	return bool(*f)
}

func (crontab) CheckTree(v any) error {
	if err := checkStr(v); err != nil {
		return err
	}
	_, err := schedule.Parse(v.(string))
	return err
}

func (apiVersion) CheckTree(v any) error {
	if err := checkStr(v); err != nil {
		return err
	}
	return checkAPIVersion(v.(string))
}

func (jqFilter) CheckTree(v any) error {
	if err := checkStr(v); err != nil {
		return err
	}
	_, err := compileJQ(v.(string))
	return err
}

func (duration) CheckTree(v any) error {
	if err := checkStr(v); err != nil {
		return err
	}
	if d, err := time.ParseDuration(v.(string)); err != nil || d < 0 {
		return fmt.Errorf("%q is not a duration; write one such as 5s or 1m", v)
	}
	return nil
}

func (count) CheckTree(v any) error {
	if n, ok := v.(int64); !ok || n < 0 || n > math.MaxInt32 {
		return fmt.Errorf("%s is not a count; write a non-negative integer such as 1", describeValue(v))
	}
	return nil
}

func (watchEvent) CheckTree(v any) error {
	if err := checkStr(v); err != nil {
		return err
	}
	s := v.(string)
	switch WatchEvent(s) {
	case Added, Modified, Deleted:
		return nil
	}
	hint := "Added, Modified or Deleted"
	if x := document.Closest(s, []string{"Added", "Modified", "Deleted"}); x != "" {
		hint = x
	}
	return fmt.Errorf("%q is not a watch event; write %s", s, hint)
}

// v0EventNames maps the v0 event names onto the watch events.
var v0EventNames = map[string]WatchEvent{"add": Added, "update": Modified, "delete": Deleted}

func (v0Event) CheckTree(v any) error {
	if err := checkStr(v); err != nil {
		return err
	}
	if _, ok := v0EventNames[v.(string)]; !ok {
		return fmt.Errorf("%q is not a v0 event; write add, update or delete", v)
	}
	return nil
}

func (labelOperator) CheckTree(v any) error {
	if err := checkStr(v); err != nil {
		return err
	}
	switch v {
	case "In", "NotIn", "Exists", "DoesNotExist", "":
		return nil
	}
	return fmt.Errorf("%q is not an operator; write one of In, NotIn, Exists, DoesNotExist", v)
}

func (labelValue) CheckTree(v any) error {
	if _, ok := v.(string); !ok {
		return fmt.Errorf("label values are strings; quote %s", describeValue(v))
	}
	return nil
}

func (labelMap) CheckTree(v any) error { return checkMap(v, "label: value pairs") }
func (watchEvents) CheckTree(v any) error {
	return checkList(v, "watch events (Added, Modified, Deleted)", "")
}
func (v0Events) CheckTree(v any) error { return checkList(v, "events (add, update, delete)", "") }
func (snapshotNames) CheckTree(v any) error {
	return checkList(v, "kubernetes binding names", "remove it or name kubernetes bindings of this hook")
}
func (objectNames) CheckTree(v any) error    { return checkList(v, "object names", "") }
func (namespaceNames) CheckTree(v any) error { return checkList(v, "namespace names", "") }
func (labelValues) CheckTree(v any) error    { return checkList(v, "label values", "") }

// checkStr is the rule of every string of the configuration.
func checkStr(v any) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("must be a string, not %s", describeValue(v))
	}
	if len(s) > maxNameLength {
		return fmt.Errorf("is longer than %d bytes", maxNameLength)
	}
	return nil
}

// checkMap is the rule of every map; what shows what to write.
func checkMap(v any, what string) error {
	if _, ok := v.(map[string]any); !ok {
		return fmt.Errorf("must be a map (%s), not %s", what, describeValue(v))
	}
	return nil
}

// checkList is the rule of every list: what names its items; ifEmpty, when
// not "", is what to do about an empty one, which is then an error.
func checkList(v any, what, ifEmpty string) error {
	l, ok := v.([]any)
	switch {
	case !ok:
		return fmt.Errorf("must be a list of %s, not %s", what, describeValue(v))
	case len(l) > maxBindings:
		return fmt.Errorf("has %d items; at most %d are allowed", len(l), maxBindings)
	case len(l) == 0 && ifEmpty != "":
		return errors.New("is an empty list; " + ifEmpty)
	}
	return nil
}

// strs returns the strings of a decoded list: nil for none, empty for [].
func strs[L ~[]E, E ~string](l L) []string {
	if l == nil {
		return nil
	}
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = string(s)
	}
	return out
}

// describeValue writes a value of the tree for a message.
func describeValue(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("%q", v)
	case nil:
		return "null"
	case bool, int64, float64, json.Number:
		return fmt.Sprint(v)
	}
	return document.Describe(v)
}
