package config

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/values"
)

// Defaults of ConfigMap.
const (
	DefaultRequestTimeout = 30 * time.Second
	// InvalidConfigReason is the reason of the Kubernetes Event recorded
	// on the ConfigMap when its content is refused.
	InvalidConfigReason = "InvalidConfig"
	// DefaultEventComponent is the source of those Events.
	DefaultEventComponent = "strata-operator"
)

// ConfigMap is the config store on a cluster: the data of a ConfigMap,
// addon-operator's `ADDON_OPERATOR_CONFIG_MAP`, watched by an informer.
// A ConfigMap that does not exist is an empty config; the first Patch
// creates it. Hooks' config patches are written with the resourceVersion
// read (optimistic concurrency), so an edit made meanwhile (kubectl edit)
// is never overwritten: the patch is applied to it again. Refused content
// is reported through Watch and as a Warning Event on the ConfigMap. Set
// the fields before the first call; the methods are safe for concurrent
// use.
type ConfigMap struct {
	Client    kubernetes.Interface
	Namespace string
	Name      string
	// Limits bound the data: MaxBytes the sum of the keys' and values'
	// sizes, MaxKeys the keys.
	Limits Limits
	// Timeout bounds each request to the API server; 0 means
	// DefaultRequestTimeout.
	Timeout time.Duration
	// Retries bounds how often Patch starts over after a conflict; 0
	// means DefaultPatchRetries.
	Retries int
	// Component is the source of the Events recorded; "" means
	// DefaultEventComponent.
	Component string
	// Log receives what cannot be reported otherwise (an Event that could
	// not be recorded); nil means slog.Default().
	Log *slog.Logger

	mu       sync.Mutex
	check    func(*Config) error
	last     *Config           // the last good config loaded, patched or watched
	lastData map[string]string // the data last seen (good or not)
	lastRV   string            // the resourceVersion of lastData
	reported string            // the resourceVersion last refused with an Event
	feed     *feed             // the events of the running Watch
}

var _ Store = (*ConfigMap)(nil)

// NewConfigMap returns the config store on ConfigMap namespace/name.
func NewConfigMap(client kubernetes.Interface, namespace, name string) *ConfigMap {
	return &ConfigMap{Client: client, Namespace: namespace, Name: name}
}

// SetCheck sets a check Watch runs on each new config that parses (the
// engine's: every key is a module's, the values match the schemas). A
// config the check refuses is reported like one that does not parse, and
// the last good config stays.
func (s *ConfigMap) SetCheck(check func(*Config) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.check = check
}

// Source names the ConfigMap in errors: "ConfigMap ns/name".
func (s *ConfigMap) Source() string { return "ConfigMap " + s.Namespace + "/" + s.Name }

func (s *ConfigMap) timeout() time.Duration {
	if s.Timeout <= 0 {
		return DefaultRequestTimeout
	}
	return s.Timeout
}

func (s *ConfigMap) log() *slog.Logger {
	if s.Log == nil {
		return slog.Default()
	}
	return s.Log
}

// get reads the ConfigMap; nil when it does not exist.
func (s *ConfigMap) get(ctx context.Context) (*corev1.ConfigMap, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	cm, err := s.Client.CoreV1().ConfigMaps(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", s.Source(), err)
	}
	return cm, nil
}

// Load reads the ConfigMap.
func (s *ConfigMap) Load(ctx context.Context) (*Config, error) {
	cm, err := s.get(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := ParseData(dataOf(cm), s.Source(), s.Limits)
	if err != nil {
		return nil, err
	}
	s.last, s.lastData, s.lastRV = c, dataOf(cm), rvOf(cm)
	return c, nil
}

// Patch applies a config patch to the ConfigMap as it is on the API
// server, checks the result and writes it with the resourceVersion read.
// When the ConfigMap changed meanwhile (a conflict), the patch is applied
// again to the new content, up to Retries times. An edit the patch was
// applied to that the running Watch has not reported yet is reported by
// Patch, with the config written.
func (s *ConfigMap) Patch(ctx context.Context, patch *values.JSONPatch, check func(*Config) error) (*Config, error) {
	retries := s.Retries
	if retries <= 0 {
		retries = DefaultPatchRetries
	}
	for range retries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cm, err := s.get(ctx)
		if err != nil {
			return nil, fmt.Errorf("cannot apply the config patch: %w", err)
		}
		data := dataOf(cm)
		cur, err := ParseData(data, s.Source(), s.Limits)
		if err != nil {
			return nil, fmt.Errorf("cannot apply the config patch: %w", err)
		}
		next, err := cur.Apply(patch)
		if err != nil {
			return nil, err
		}
		if check != nil {
			if err := check(next); err != nil {
				return nil, err
			}
		}
		newData, err := encodeData(data, cur, next)
		if err != nil {
			return nil, err
		}
		back, err := ParseData(newData, s.Source(), s.Limits)
		if err != nil || !Equal(back, next) {
			return nil, fmt.Errorf("updating %s: the new data does not read back as the patched config (%v); the ConfigMap was left as it was", s.Source(), err)
		}
		// The watch waits while we write, so that it sees our version as
		// ours when it comes.
		s.mu.Lock()
		written, err := s.write(ctx, cm, newData)
		if err == nil && newerRV(rvOf(written), s.lastRV) {
			// An edit the patch was applied to, which the watch has
			// not reported, is reported now (with the config as
			// written): its own version, older than ours, will be
			// passed over.
			if s.feed != nil && s.last != nil {
				if ch := Diff(s.last, cur); !ch.Empty() {
					s.feed.push(Event{Config: back, Change: ch})
				}
			}
			s.last, s.lastData, s.lastRV = back, newData, rvOf(written)
		}
		s.mu.Unlock()
		if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
			continue // edited (or created) meanwhile: apply the patch to that
		}
		if err != nil {
			return nil, fmt.Errorf("updating %s: %w", s.Source(), err)
		}
		return back, nil
	}
	return nil, fmt.Errorf("updating %s: the ConfigMap kept changing while the config patch was applied (%d conflicts); try again", s.Source(), retries)
}

// write stores data in the ConfigMap read as cm (nil: create it), with
// cm's resourceVersion.
func (s *ConfigMap) write(ctx context.Context, cm *corev1.ConfigMap, data map[string]string) (*corev1.ConfigMap, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	api := s.Client.CoreV1().ConfigMaps(s.Namespace)
	if cm == nil {
		return api.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace},
			Data:       data,
		}, metav1.CreateOptions{FieldManager: s.component()})
	}
	up := cm.DeepCopy()
	up.Data = data
	return api.Update(ctx, up, metav1.UpdateOptions{FieldManager: s.component()})
}

func (s *ConfigMap) component() string {
	if s.Component == "" {
		return DefaultEventComponent
	}
	return s.Component
}

// Watch watches the ConfigMap with an informer (this namespace, this
// name) and reports its changes. Versions the store wrote itself, and
// older ones, are not reported.
func (s *ConfigMap) Watch(ctx context.Context) (<-chan Event, error) {
	sel := fields.OneTermEqualSelector("metadata.name", s.Name).String()
	api := s.Client.CoreV1().ConfigMaps(s.Namespace)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			ctx, cancel := context.WithTimeout(ctx, s.timeout())
			defer cancel()
			return api.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return api.Watch(ctx, o)
		},
	}
	inf := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
	// The informer retries on its own; an error (RBAC, the API server
	// away) is worth a line in the log, not a refused config.
	err := inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, _ *cache.Reflector, err error) {
		if ctx.Err() == nil && !errors.Is(err, io.EOF) {
			s.log().Warn("watching the config store; retrying", "configmap", s.Namespace+"/"+s.Name, "error", err)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("watching %s: %w", s.Source(), err)
	}
	f := &feed{wake: make(chan struct{}, 1)}
	s.mu.Lock()
	s.feed = f
	s.mu.Unlock()
	on := func(obj any, deleted bool) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		cm, _ := obj.(*corev1.ConfigMap)
		if cm == nil || cm.Name != s.Name {
			return
		}
		if ev, ok := s.observe(ctx, cm, deleted); ok {
			f.push(ev)
		}
	}
	_, err = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { on(obj, false) },
		UpdateFunc: func(_, obj any) { on(obj, false) },
		DeleteFunc: func(obj any) { on(obj, true) },
	})
	if err != nil {
		return nil, fmt.Errorf("watching %s: %w", s.Source(), err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.RunWithContext(ctx)
	}()
	out := make(chan Event, 1)
	go func() {
		defer close(out)
		defer func() { <-done }()
		defer func() {
			s.mu.Lock()
			if s.feed == f {
				s.feed = nil
			}
			s.mu.Unlock()
		}()
		for {
			select {
			case <-ctx.Done():
				return
			case <-f.wake:
			}
			for ev, ok := f.pop(); ok; ev, ok = f.pop() {
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out, nil
}

// A feed queues the events of a watch, in order, without blocking their
// producers (the informer, Patch).
type feed struct {
	mu   sync.Mutex
	q    []Event
	wake chan struct{}
}

func (f *feed) push(ev Event) {
	f.mu.Lock()
	f.q = append(f.q, ev)
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *feed) pop() (Event, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.q) == 0 {
		return Event{}, false
	}
	ev := f.q[0]
	f.q = f.q[1:]
	return ev, true
}

// observe takes a version of the ConfigMap the informer delivered and
// tells whether there is an event to report.
func (s *ConfigMap) observe(ctx context.Context, cm *corev1.ConfigMap, deleted bool) (Event, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rv := cm.ResourceVersion
	if s.lastRV != "" && !newerRV(rv, s.lastRV) && !(deleted && rv == s.lastRV) {
		return Event{}, false // ours, or older than what we have
	}
	data := cm.Data
	if deleted {
		data = nil
	}
	if (s.last != nil || s.lastRV != "") && maps.Equal(data, s.lastData) {
		s.lastRV = rv // a change of something else (labels, annotations)
		return Event{}, false
	}
	s.lastData, s.lastRV = maps.Clone(data), rv
	c, err := ParseData(data, s.Source(), s.Limits)
	if err == nil && s.check != nil {
		if err = s.check(c); err != nil {
			err = fmt.Errorf("%s: %w", s.Source(), err)
		}
	}
	if err != nil {
		if !deleted && s.reported != rv {
			s.reported = rv
			s.recordEvent(ctx, cm, err)
		}
		return Event{Err: err}, true
	}
	ch := Diff(s.last, c)
	s.last = c
	if ch.Empty() {
		return Event{}, false
	}
	return Event{Config: c, Change: ch}, true
}

// recordEvent records a Warning Event on the ConfigMap telling why its
// content was refused.
func (s *ConfigMap) recordEvent(ctx context.Context, cm *corev1.ConfigMap, cause error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	now := metav1.Now()
	msg := cause.Error()
	if len(msg) > 1024 {
		msg = msg[:1021] + "..."
	}
	prefix := cm.Name
	if len(prefix) > 200 { // an Event's name is at most 253 bytes too
		prefix = strings.TrimRight(prefix[:200], "-.")
	}
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:      prefix + "." + strconv.FormatInt(now.UnixNano(), 36),
			Namespace: cm.Namespace,
		},
		InvolvedObject: corev1.ObjectReference{
			Kind: "ConfigMap", APIVersion: "v1", Namespace: cm.Namespace, Name: cm.Name,
			UID: cm.UID, ResourceVersion: cm.ResourceVersion,
		},
		Reason:              InvalidConfigReason,
		Message:             "the config is refused and the last good one stays: " + msg,
		Type:                corev1.EventTypeWarning,
		Source:              corev1.EventSource{Component: s.component()},
		ReportingController: s.component(),
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
	}
	if _, err := s.Client.CoreV1().Events(cm.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		s.log().Warn("recording the Event of a refused config", "configmap", s.Namespace+"/"+s.Name, "error", err)
	}
}

func dataOf(cm *corev1.ConfigMap) map[string]string {
	if cm == nil {
		return nil
	}
	return cm.Data
}

func rvOf(cm *corev1.ConfigMap) string {
	if cm == nil {
		return ""
	}
	return cm.ResourceVersion
}

// newerRV reports whether resourceVersion a is newer than b. The API
// server's resourceVersions are etcd revisions, decimal numbers; when
// one is not, any other version counts as newer.
func newerRV(a, b string) bool {
	if b == "" {
		return true
	}
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	if err1 != nil || err2 != nil {
		return a != b
	}
	return x > y
}

// ParseData reads the data of a ConfigMap: each key a section (YAML
// text), or a `<moduleKey>Enabled` flag ("true"/"false"). source names
// the ConfigMap in errors, which name the key, and the line within the
// key's text when there is one. Nil data is an empty config.
func ParseData(data map[string]string, source string, lim Limits) (*Config, error) {
	c := Empty(source)
	if len(data) > lim.maxKeys() {
		return nil, &document.LoadError{Source: source, Err: document.ErrTooLarge,
			Msg: fmt.Sprintf("%d keys, more than the limit of %d", len(data), lim.maxKeys())}
	}
	var size int64
	for k, v := range data {
		size += int64(len(k) + len(v))
	}
	if size > lim.maxBytes() {
		return nil, &document.LoadError{Source: source, Err: document.ErrTooLarge,
			Msg: fmt.Sprintf("the data holds %d bytes, more than the limit of %d", size, lim.maxBytes())}
	}
	for _, k := range slices.Sorted(maps.Keys(data)) {
		doc, err := yaml.Marshal(map[string]string{k: data[k]})
		if err != nil {
			return nil, fmt.Errorf("%s: key %s: %w", source, k, err)
		}
		one, err := Parse(doc, source, lim)
		if err != nil {
			return nil, keyError(err, doc, k)
		}
		switch kind, key := classify(k); kind {
		case keyEnabled:
			c.Enabled[key] = one.Enabled[key]
		case keyMaintenance:
			c.Maintenance[key] = one.Maintenance[key]
		case keyGlobal:
			one.Global.Line = 0
			c.Global = one.Global
		default:
			s := one.Modules[key]
			if s == nil { // a ConfigMap-shaped key (kind, apiVersion) taken otherwise
				return nil, &document.LoadError{Source: source, Err: document.ErrSyntax, Msg: k + ": not a config key"}
			}
			s.Line = 0
			c.Modules[key] = s
		}
	}
	return c, nil
}

// keyError rewrites an error of Parse on the one-key document doc so that
// it names the key, and the line within the key's text.
func keyError(err error, doc []byte, key string) error {
	var le *document.LoadError
	if !errors.As(err, &le) {
		return err
	}
	out := *le
	first, _, _ := strings.Cut(string(doc), "\n")
	block := strings.HasSuffix(first, "|") || strings.HasSuffix(first, "|-") || strings.HasSuffix(first, "|+")
	out.Column = 0
	if block && le.Line > 1 {
		out.Msg = fmt.Sprintf("%s (line %d of key %s)", le.Msg, le.Line-1, key)
	} else if !strings.HasPrefix(le.Msg, key+":") && !strings.Contains(le.Msg, "section "+key) {
		out.Msg = "key " + key + ": " + le.Msg
	}
	out.Line = 0
	return &out
}

// encodeData writes next as ConfigMap data: keys whose value did not
// change from cur keep their text (data); changed sections are written as
// YAML text, flags as "true"/"false".
func encodeData(data map[string]string, cur, next *Config) (map[string]string, error) {
	out := map[string]string{}
	put := func(k string, same bool, section map[string]any) error {
		if old, ok := data[k]; ok && same {
			out[k] = old
			return nil
		}
		if len(section) == 0 {
			out[k] = "{}"
			return nil
		}
		b, err := document.MarshalYAML(section)
		if err != nil {
			return fmt.Errorf("encoding key %s: %w", k, err)
		}
		out[k] = string(b)
		return nil
	}
	if next.Global != nil {
		if err := put(GlobalKey, cur.Global != nil && sameValues(cur.Global.Values, next.Global.Values), next.Global.Values); err != nil {
			return nil, err
		}
	}
	for k, sec := range next.Modules {
		old, had := cur.Modules[k]
		if err := put(k, had && sameValues(old.Values, sec.Values), sec.Values); err != nil {
			return nil, err
		}
	}
	for k, b := range next.Enabled {
		ob, had := cur.Enabled[k]
		if old, ok := data[k+EnabledSuffix]; ok && had && ob == b {
			out[k+EnabledSuffix] = old
			continue
		}
		out[k+EnabledSuffix] = strconv.FormatBool(b)
	}
	for k, u := range next.Maintenance {
		out[k+MaintenanceSuffix] = maintenanceText(u)
	}
	return out, nil
}
