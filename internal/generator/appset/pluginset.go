package appset

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/manifest"
)

// ArgoCDSecret is the Secret a plugin ConfigMap's "$key" token refers to.
const ArgoCDSecret = "argocd-secret"

// TokenEnvPrefix starts the environment variable that gives the token of a
// plugin: STRATA_APPSET_TOKEN_<NAME>, NAME being the ConfigMap name in
// upper case with every character other than A-Z and 0-9 replaced by '_'.
const TokenEnvPrefix = "STRATA_APPSET_TOKEN_"

// TokenEnv returns the environment variable that gives the token of the
// plugin configured by ConfigMap name.
func TokenEnv(name string) string {
	var b strings.Builder
	b.WriteString(TokenEnvPrefix)
	for _, r := range strings.ToUpper(name) {
		if r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// PluginConfig is how to reach one plugin, as its ConfigMap says.
type PluginConfig struct {
	Name    string // the ConfigMap's name, which configMapRef.name refers to
	BaseURL string
	Token   string        // never logged or printed
	Timeout time.Duration // 0: the client's default, 30 s as in Argo CD
}

// PluginSet holds the plugin ConfigMaps and Secrets the ApplicationSet
// controller would read, loaded from manifests, and resolves a ConfigMap
// name to a PluginConfig.
type PluginSet struct {
	// Tokens gives tokens by ConfigMap name; one here wins over the
	// environment and over the ConfigMap's token reference.
	Tokens map[string]string
	// LookupEnv, when set, looks up TokenEnv(name) before the ConfigMap's
	// token reference is resolved.
	LookupEnv func(string) (string, bool)

	configMaps map[string]*dataObject
	secrets    map[string]*dataObject
}

type dataObject struct {
	source string // file:line
	data   map[string]string
}

type configMapDoc struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   map[string]any    `json:"metadata"`
	Data       map[string]string `json:"data"`
	BinaryData any               `json:"binaryData"`
	Immutable  any               `json:"immutable"`
}

type secretDoc struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   map[string]any    `json:"metadata"`
	Data       map[string]string `json:"data"`
	StringData map[string]string `json:"stringData"`
	Type       any               `json:"type"`
	Immutable  any               `json:"immutable"`
}

// Load reads ConfigMap and Secret manifests from data (YAML documents
// separated by ---, or a kind: List); other kinds are an error. With
// secretsOnly, a ConfigMap is an error too.
func (s *PluginSet) Load(data []byte, source string, secretsOnly bool) error {
	if s.configMaps == nil {
		s.configMaps, s.secrets = map[string]*dataObject{}, map[string]*dataObject{}
	}
	docs, err := manifest.Parse(data, source, manifest.Limits{MaxBytes: fileLimits.MaxBytes, MaxDepth: fileLimits.MaxDepth, MaxNodes: fileLimits.MaxNodes})
	if err != nil {
		return err
	}
	found := 0
	for _, d := range docs {
		n, err := s.loadObject(d.Value, d.Pos, source, secretsOnly, 0)
		if err != nil {
			return err
		}
		found += n
	}
	if found == 0 {
		return fmt.Errorf("%s: no ConfigMap or Secret manifest in it", source)
	}
	return nil
}

func (s *PluginSet) loadObject(tree any, pos *document.Pos, source string, secretsOnly bool, depth int) (int, error) {
	m, ok := tree.(map[string]any)
	if !ok {
		return 0, invalidf(source, pos, "expected a ConfigMap or Secret manifest, found %s", document.Describe(tree))
	}
	kind, _ := m["kind"].(string)
	name := ""
	if md, ok := m["metadata"].(map[string]any); ok {
		name, _ = md["name"].(string)
	}
	switch kind {
	case "List":
		items, _ := m["items"].([]any)
		if depth > 0 {
			return 0, invalidf(source, pos, "a List inside a List")
		}
		total := 0
		for i, it := range items {
			n, err := s.loadObject(it, pos.Key("items").Item(i), source, secretsOnly, depth+1)
			if err != nil {
				return 0, err
			}
			total += n
		}
		return total, nil
	case "ConfigMap":
		if secretsOnly {
			return 0, invalidf(source, pos, "ConfigMap %q given as a Secret; pass plugin ConfigMaps with --plugin-config", name)
		}
		var doc configMapDoc
		if err := document.Decode(m, pos, source, &doc); err != nil {
			return 0, err
		}
		return 1, s.add(s.configMaps, "ConfigMap", name, source, pos, doc.Data)
	case "Secret":
		var doc secretDoc
		if err := document.Decode(m, pos, source, &doc); err != nil {
			return 0, err
		}
		data := make(map[string]string, len(doc.Data)+len(doc.StringData))
		for k, v := range doc.Data {
			b, err := base64.StdEncoding.DecodeString(v)
			if err != nil {
				return 0, invalidf(source, pos.Lookup(document.Path{document.Key("data"), document.Key(k)}),
					"Secret %q data.%s is not base64; put plain text under stringData instead", name, k)
			}
			data[k] = string(b)
		}
		for k, v := range doc.StringData {
			data[k] = v
		}
		return 1, s.add(s.secrets, "Secret", name, source, pos, data)
	}
	return 0, invalidf(source, pos, "kind %q: expected a ConfigMap or a Secret", kind)
}

func (s *PluginSet) add(into map[string]*dataObject, kind, name, source string, pos *document.Pos, data map[string]string) error {
	if name == "" {
		return invalidf(source, pos, "%s without metadata.name", kind)
	}
	where := fmt.Sprintf("%s:%d", source, lineOf(pos))
	if prev, dup := into[name]; dup {
		return invalidf(source, pos, "%s %q is given twice (first at %s)", kind, name, prev.source)
	}
	into[name] = &dataObject{source: where, data: data}
	return nil
}

// Names lists the ConfigMaps loaded, sorted.
func (s *PluginSet) Names() []string {
	names := make([]string, 0, len(s.configMaps))
	for n := range s.configMaps {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ErrNoPlugin is wrapped by Config when no ConfigMap of the name was loaded.
var ErrNoPlugin = errors.New("plugin not configured")

// Config resolves the plugin configured by ConfigMap name: its base URL,
// its request timeout and its token, read from --token, the environment or
// the Secret the ConfigMap's token refers to ("$key" for a key of
// argocd-secret, "$secret:key" for a key of another Secret).
func (s *PluginSet) Config(name string) (PluginConfig, error) {
	cm, ok := s.configMaps[name]
	if !ok {
		if len(s.configMaps) == 0 {
			return PluginConfig{}, fmt.Errorf("%w: no plugin ConfigMap was given; pass the ConfigMap named %q with --plugin-config FILE", ErrNoPlugin, name)
		}
		return PluginConfig{}, fmt.Errorf("%w: no plugin ConfigMap named %q was given; the ConfigMaps given are %s", ErrNoPlugin, name, strings.Join(s.Names(), ", "))
	}
	cfg := PluginConfig{Name: name, BaseURL: cm.data["baseUrl"]}
	if cfg.BaseURL == "" {
		return PluginConfig{}, fmt.Errorf("ConfigMap %q (%s) has no data.baseUrl: set it to the plugin's URL, e.g. http://my-plugin.argocd.svc:8080", name, cm.source)
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return PluginConfig{}, fmt.Errorf("ConfigMap %q (%s) data.baseUrl %q is not an http(s) URL", name, cm.source, cfg.BaseURL)
	}
	if t, ok := cm.data["requestTimeout"]; ok {
		// The controller's strconv.Atoi: no spaces, no unit.
		n, err := strconv.Atoi(t)
		if err != nil {
			return PluginConfig{}, fmt.Errorf("ConfigMap %q (%s) data.requestTimeout %q: give whole seconds, e.g. \"30\", without spaces or a unit; the controller refuses it too", name, cm.source, t)
		}
		if n < 0 {
			// The controller then waits without a limit; strata refuses.
			return PluginConfig{}, fmt.Errorf("ConfigMap %q (%s) data.requestTimeout %q is negative: the controller would wait for the plugin without a limit; give whole seconds, e.g. \"30\" (0 is the default, 30)", name, cm.source, t)
		}
		cfg.Timeout = time.Duration(n) * time.Second
	}
	if cfg.Token, err = s.token(name, cm); err != nil {
		return PluginConfig{}, err
	}
	return cfg, nil
}

func (s *PluginSet) token(name string, cm *dataObject) (string, error) {
	if t, ok := s.Tokens[name]; ok {
		return t, nil
	}
	if s.LookupEnv != nil {
		if t, ok := s.LookupEnv(TokenEnv(name)); ok {
			return t, nil
		}
	}
	ref := cm.data["token"]
	if !strings.HasPrefix(ref, "$") || len(ref) < 2 {
		return "", fmt.Errorf("ConfigMap %q (%s) data.token must refer to a Secret key, as \"$key\" (a key of %s) or \"$secret:key\"; the controller refuses it otherwise. Or give the token with --token %s=VALUE or $%s",
			name, cm.source, ArgoCDSecret, name, TokenEnv(name))
	}
	// As the controller splits it: "$secret:key", anything after a second
	// colon ignored.
	secretName, key := ArgoCDSecret, ref[1:]
	if parts := strings.Split(ref[1:], ":"); len(parts) > 1 {
		secretName, key = parts[0], parts[1]
	}
	sec, ok := s.secrets[secretName]
	if !ok {
		return "", fmt.Errorf("ConfigMap %q (%s) data.token %q refers to Secret %q, which was not given: pass it with --secret FILE, or give the token with --token %s=VALUE or $%s",
			name, cm.source, ref, secretName, name, TokenEnv(name))
	}
	t, ok := sec.data[key]
	if !ok {
		return "", fmt.Errorf("ConfigMap %q (%s) data.token %q: Secret %q (%s) has no key %q", name, cm.source, ref, secretName, sec.source, key)
	}
	// The controller trims spaces and line breaks around a Secret's token.
	return strings.TrimSpace(t), nil
}

// Resolver returns a PluginFunc that builds a ParamsGetter for each
// plugin with newGetter.
func (s *PluginSet) Resolver(newGetter func(PluginConfig) ParamsGetter) PluginFunc {
	return func(_ context.Context, name string) (ParamsGetter, error) {
		cfg, err := s.Config(name)
		if err != nil {
			return nil, err
		}
		return newGetter(cfg), nil
	}
}
