package cmpserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/params"
)

// What a plugin.yaml must say it is.
const (
	ConfigAPIVersion = "argoproj.io/v1alpha1"
	ConfigKind       = "ConfigManagementPlugin"
)

const (
	// MaxConfigBytes bounds the size of a plugin.yaml.
	MaxConfigBytes = 1 << 20
	// MaxSocketNameBytes bounds the socket file name that metadata.name
	// and spec.version make (Info.SocketName): the socket's whole path
	// must fit in the 108 bytes of a unix socket address, and the default
	// plugin folder takes 32 of them.
	MaxSocketNameBytes = 64
)

// ErrInvalidConfig is wrapped by the errors of ParseConfig about what a
// plugin.yaml says (a missing or malformed field), as opposed to its YAML
// syntax or an unknown field, which wrap the values package's sentinels.
var ErrInvalidConfig = errors.New("invalid plugin configuration")

// A Config is a plugin.yaml: an Argo CD ConfigManagementPlugin
// (apiVersion argoproj.io/v1alpha1). ParseConfig and LoadConfig return it
// checked; the fields name the YAML fields they come from.
type Config struct {
	// Source is where the configuration was read from, for messages.
	Source string

	Name    string // metadata.name
	Version string // spec.version; optional, part of the socket name

	Init     Command // spec.init; optional, run before Generate
	Generate Command // spec.generate; prints the manifests

	Discover   Discover   // spec.discover
	Parameters Parameters // spec.parameters

	PreserveFileMode bool // spec.preserveFileMode
	ProvideGitCreds  bool // spec.provideGitCreds

	// Warnings report what ParseConfig accepted but ignored (fields that
	// Argo CD ignores too, discovery rules shadowed by an earlier one,
	// repaired announcements). The caller logs them.
	Warnings []string
}

// A Command is a command of a plugin.yaml: {command: [...], args: [...]}.
// It runs as the argv Command followed by Args, never through a shell.
type Command struct {
	Command []string
	Args    []string
}

// Argv returns the command line: Command followed by Args.
func (c Command) Argv() []string {
	argv := make([]string, 0, len(c.Command)+len(c.Args))
	argv = append(argv, c.Command...)
	return append(argv, c.Args...)
}

// IsSet reports whether there is a command to run.
func (c Command) IsSet() bool { return len(c.Command) > 0 }

// Discover is spec.discover: how the plugin recognises the applications it
// handles. Only the first rule set, in the order of the fields, is used.
type Discover struct {
	// FileName (spec.discover.fileName) is a glob without "**", relative to
	// the application's directory; the plugin matches when it matches a file.
	FileName string
	// Find is spec.discover.find.
	Find Find
}

// Find is spec.discover.find. In plugin.yaml its command and args sit next
// to glob, as in Argo CD: find: {glob: ..., command: [...], args: [...]}.
type Find struct {
	// Glob may use "**"; it is relative to the application's directory.
	Glob string
	// Command matches when it exits 0 having printed something.
	Command Command
}

// Discovery methods, as Discover.Method names them.
const (
	DiscoverFileName    = "fileName"
	DiscoverFindGlob    = "find.glob"
	DiscoverFindCommand = "find.command"
)

// Method names the discovery rule that is used: the first one set of
// DiscoverFileName, DiscoverFindGlob and DiscoverFindCommand, or "" when
// there is none.
func (d Discover) Method() string {
	switch {
	case d.FileName != "":
		return DiscoverFileName
	case d.Find.Glob != "":
		return DiscoverFindGlob
	case d.Find.Command.IsSet():
		return DiscoverFindCommand
	}
	return ""
}

// Parameters is spec.parameters: the parameters the plugin announces.
type Parameters struct {
	// Static are announced for every application, checked and normalised
	// by params.DecodeAnnouncements.
	Static []params.Announcement
	// Dynamic prints a JSON list of further announcements for an application.
	Dynamic Command
}

// The shape of plugin.yaml, for document.Decode. Fields holding what Argo CD
// accepts and ignores are decoded to be reported, not used.
type configFile struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Metadata   fileMetadata `json:"metadata"`
	Spec       *fileSpec    `json:"spec"`
}

// fileMetadata accepts the usual object metadata: Argo CD reads a
// Kubernetes ObjectMeta here, and plugin.yaml files carry labels.
type fileMetadata struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

type fileSpec struct {
	Version          string          `json:"version"`
	Init             *fileCommand    `json:"init"`
	Generate         *fileCommand    `json:"generate"`
	Discover         *fileDiscover   `json:"discover"`
	Parameters       *fileParameters `json:"parameters"`
	PreserveFileMode bool            `json:"preserveFileMode"`
	ProvideGitCreds  bool            `json:"provideGitCreds"`
	// Settings of Argo CD's older argocd-cm plugins, still found in
	// sidecar configurations; Argo CD ignores them there.
	AllowConcurrency any `json:"allowConcurrency"`
	LockRepo         any `json:"lockRepo"`
}

type fileCommand struct {
	Command []string `json:"command"`
	Args    []string `json:"args"`
}

type fileDiscover struct {
	FileName string    `json:"fileName"`
	Find     *fileFind `json:"find"`
}

type fileFind struct {
	Glob    string   `json:"glob"`
	Command []string `json:"command"`
	Args    []string `json:"args"`
}

type fileParameters struct {
	Static  any          `json:"static"` // decoded by params.DecodeAnnouncements
	Dynamic *fileCommand `json:"dynamic"`
}

// commandFields are the lists of strings of a plugin.yaml, checked before
// document.Decode so that the common mistakes get a message saying what to do.
var commandFields = []string{
	"spec.init.command", "spec.init.args",
	"spec.generate.command", "spec.generate.args",
	"spec.discover.find.command", "spec.discover.find.args",
	"spec.parameters.dynamic.command", "spec.parameters.dynamic.args",
}

// stringFields are the strings of a plugin.yaml, checked before document.Decode.
var stringFields = []string{
	"metadata.name", "metadata.namespace", "spec.version",
	"spec.discover.fileName", "spec.discover.find.glob",
}

// LoadConfig reads and parses a plugin.yaml of at most MaxConfigBytes.
func LoadConfig(file string) (*Config, error) {
	data, err := document.ReadFile(file, MaxConfigBytes)
	if errors.Is(err, document.ErrTooLarge) {
		return nil, fmt.Errorf("%w; a plugin configuration is much smaller: keep scripts in files of their own", err)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the plugin configuration: %w", err)
	}
	return ParseConfig(data, file)
}

// ParseConfig parses a plugin.yaml, naming it source in messages.
//
// The parsing is strict: kind must be ConfigManagementPlugin (apiVersion
// argoproj.io/v1alpha1 missing or different is a warning, since Argo CD
// ignores it); metadata.name and spec.generate.command are
// required; an unknown field, a value of the wrong type, a name or version
// that cannot be part of a socket file name, an empty command, and a
// discovery pattern that is invalid or reaches outside the application's
// directory are errors. spec.parameters.static is checked with
// params.DecodeAnnouncements. Errors are *document.LoadError (most wrapping
// ErrInvalidConfig) or *params.Error, naming the file, line and field and
// saying what to do; what is accepted but ignored is in Config.Warnings.
func ParseConfig(data []byte, source string) (*Config, error) {
	if len(data) > MaxConfigBytes {
		return nil, &document.LoadError{Source: source, Err: document.ErrTooLarge,
			Msg: fmt.Sprintf("the file is larger than %d bytes; a plugin configuration is much smaller: keep scripts in files of their own", MaxConfigBytes)}
	}
	// YAML 1.1, as Argo CD reads it (sigs.k8s.io/yaml): preserveFileMode:
	// yes is true, and an unquoted yes in a command is a boolean, refused.
	loader := document.Loader{Positions: true, YAML11: true, Limits: document.Limits{MaxBytes: MaxConfigBytes}}
	tree, pos, err := loader.ParseAny(data, source)
	if err != nil {
		return nil, err
	}
	p := &configParser{source: source, pos: pos}
	root, ok := tree.(map[string]any)
	if !ok {
		if tree == nil {
			return nil, p.errorf(nil, "the file is empty; it must hold a plugin configuration: apiVersion: %s, kind: %s, metadata.name and spec.generate", ConfigAPIVersion, ConfigKind)
		}
		return nil, p.errorf(pos, "the file holds %s; it must hold a map: a plugin configuration with apiVersion: %s, kind: %s, metadata and spec", document.Describe(tree), ConfigAPIVersion, ConfigKind)
	}
	p.root = root
	if err := p.checkType(); err != nil {
		return nil, err
	}
	if err := p.checkShapes(); err != nil {
		return nil, err
	}
	var file configFile
	if err := document.Decode(root, pos, source, &file); err != nil {
		return nil, err
	}
	return p.build(&file)
}

type configParser struct {
	source   string
	root     map[string]any
	pos      *document.Pos
	warnings []string
}

func (p *configParser) errorf(pos *document.Pos, format string, args ...any) *document.LoadError {
	e := &document.LoadError{Source: p.source, Err: ErrInvalidConfig, Msg: fmt.Sprintf(format, args...)}
	if pos != nil {
		e.Line, e.Column = pos.Line, pos.Column
	}
	return e
}

func (p *configParser) warnf(pos *document.Pos, format string, args ...any) {
	where := p.source
	if pos != nil && pos.Line > 0 {
		where += ":" + strconv.Itoa(pos.Line)
	}
	p.warnings = append(p.warnings, where+": "+fmt.Sprintf(format, args...))
}

// lookup returns the value at a dotted path of map keys, whether it is
// there, and its position (or, when it is missing, the position of the
// nearest map on the way that is there).
func (p *configParser) lookup(dotted string) (any, bool, *document.Pos) {
	var v any = p.root
	pos := p.pos
	for _, k := range strings.Split(dotted, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false, pos
		}
		if v, ok = m[k]; !ok {
			return nil, false, pos
		}
		if kp := pos.Key(k); kp != nil {
			pos = kp
		}
	}
	return v, true, pos
}

// checkType checks kind before anything else: a file that is not a plugin
// configuration gets that said, not its unknown fields. apiVersion is
// only warned about: Argo CD's sidecar never reads it, and plugin.yaml
// files without it (Argo CD's own tests have one) work there.
func (p *configParser) checkType() error {
	v, ok, pos := p.lookup("kind")
	switch {
	case !ok || v == nil:
		return p.errorf(pos, "kind is missing; a plugin configuration starts with apiVersion: %s and kind: %s", ConfigAPIVersion, ConfigKind)
	case v != ConfigKind:
		return p.errorf(pos, "kind is %s; a plugin configuration has kind: %s", document.Describe(v), ConfigKind)
	}
	v, ok, pos = p.lookup("apiVersion")
	switch {
	case !ok || v == nil:
		p.warnf(pos, "apiVersion is missing; add apiVersion: %s (Argo CD ignores it, as strata does)", ConfigAPIVersion)
	case v != ConfigAPIVersion:
		if _, isString := v.(string); !isString {
			return p.errorf(pos, "apiVersion must be a string, not %s; write apiVersion: %s", document.Describe(v), ConfigAPIVersion)
		}
		p.warnf(pos, "apiVersion is %s, not %s; it is ignored, as Argo CD ignores it: correct it", document.Describe(v), ConfigAPIVersion)
	}
	return nil
}

// checkShapes reports strings and lists of strings of the wrong type with
// advice that document.Decode cannot give.
func (p *configParser) checkShapes() error {
	if _, ok, pos := p.lookup("spec.parameters.command"); ok {
		return p.errorf(pos, "unknown field \"spec.parameters.command\": the command that announces parameters goes under spec.parameters.dynamic (dynamic: {command: [...], args: [...]})")
	}
	for _, field := range stringFields {
		v, ok, pos := p.lookup(field)
		if !ok || v == nil {
			continue
		}
		if _, isString := v.(string); !isString {
			msg := fmt.Sprintf("%s must be a string, not %s", field, document.Describe(v))
			if isScalar(v) {
				msg += "; quote the value"
			}
			return p.errorf(pos, "%s", msg)
		}
	}
	for _, field := range commandFields {
		v, ok, pos := p.lookup(field)
		if !ok || v == nil {
			continue
		}
		list, isList := v.([]any)
		if !isList {
			return p.errorf(pos, "%s must be a list of strings, such as [sh, -c, \"kustomize build .\"], not %s: the command is run directly, never through a shell", field, document.Describe(v))
		}
		for i, item := range list {
			s, isString := item.(string)
			ipos := pos.Item(i)
			if ipos == nil {
				ipos = pos
			}
			switch {
			case !isString:
				msg := fmt.Sprintf("%s[%d] must be a string, not %s", field, i, document.Describe(item))
				if isScalar(item) {
					msg += "; quote it"
				}
				return p.errorf(ipos, "%s", msg)
			case strings.IndexByte(s, 0) >= 0:
				return p.errorf(ipos, "%s[%d] contains a NUL character, which no command argument can hold; remove it", field, i)
			case s == "" && strings.HasSuffix(field, ".command") && i == 0:
				return p.errorf(ipos, "%s[0] is empty; it must name the program to run", field)
			}
		}
	}
	return nil
}

func isScalar(v any) bool {
	switch v.(type) {
	case bool, int64, float64, json.Number:
		return true
	}
	return false
}

// build checks what document.Decode cannot and makes the Config.
func (p *configParser) build(f *configFile) (*Config, error) {
	cfg := &Config{Source: p.source, Name: f.Metadata.Name}

	_, _, namePos := p.lookup("metadata.name")
	if cfg.Name == "" {
		return nil, p.errorf(namePos, "metadata.name is missing; name the plugin: the name makes its socket file (<name>.sock) and Applications choose the plugin by it")
	}
	if err := p.checkSocketPart("metadata.name", cfg.Name, namePos); err != nil {
		return nil, err
	}
	spec := f.Spec
	if spec == nil {
		spec = &fileSpec{}
	}
	cfg.Version = spec.Version
	_, _, versionPos := p.lookup("spec.version")
	if cfg.Version != "" {
		if err := p.checkSocketPart("spec.version", cfg.Version, versionPos); err != nil {
			return nil, err
		}
	}
	if n := len(cfg.Info().SocketName()); n > MaxSocketNameBytes {
		return nil, p.errorf(namePos, "metadata.name and spec.version make the socket file name %q, %d bytes long; it may be at most %d bytes, for the socket's path must fit in 108 bytes: shorten the name or the version",
			cfg.Info().SocketName(), n, MaxSocketNameBytes)
	}

	if spec.Generate == nil || len(spec.Generate.Command) == 0 {
		_, _, pos := p.lookup("spec.generate.command")
		return nil, p.errorf(pos, "spec.generate.command is missing; set the command that prints the manifests, such as command: [sh, -c] and args: [\"kustomize build .\"]")
	}
	cfg.Generate = Command{Command: spec.Generate.Command, Args: spec.Generate.Args}
	var err error
	if cfg.Init, err = p.optionalCommand("spec.init", spec.Init); err != nil {
		return nil, err
	}
	if spec.Parameters != nil {
		if cfg.Parameters.Dynamic, err = p.optionalCommand("spec.parameters.dynamic", spec.Parameters.Dynamic); err != nil {
			return nil, err
		}
		if static, ok, pos := p.lookup("spec.parameters.static"); ok {
			list, warnings, err := params.DecodeAnnouncements(static, pos, p.source)
			if err != nil {
				return nil, err
			}
			cfg.Parameters.Static = list
			for _, w := range warnings {
				p.warnings = append(p.warnings, w.String())
			}
		}
	}
	if err := p.discover(cfg, spec.Discover); err != nil {
		return nil, err
	}
	cfg.PreserveFileMode = spec.PreserveFileMode
	cfg.ProvideGitCreds = spec.ProvideGitCreds
	for _, field := range []string{"spec.allowConcurrency", "spec.lockRepo"} {
		if _, ok, pos := p.lookup(field); ok {
			p.warnf(pos, "%s is ignored, as Argo CD ignores it in a sidecar plugin's configuration; remove it", field)
		}
	}
	cfg.Warnings = p.warnings
	return cfg, nil
}

// optionalCommand checks a command that may be left out, but not half
// written.
func (p *configParser) optionalCommand(field string, c *fileCommand) (Command, error) {
	if c == nil {
		return Command{}, nil
	}
	if len(c.Command) == 0 {
		_, _, pos := p.lookup(field)
		return Command{}, p.errorf(pos, "%s.command is missing; set the command to run, or remove %s", field, field)
	}
	return Command{Command: c.Command, Args: c.Args}, nil
}

// checkSocketPart checks a name or version that becomes part of the
// socket's file name.
func (p *configParser) checkSocketPart(field, s string, pos *document.Pos) error {
	var problem string
	switch {
	case s == "." || s == "..":
		problem = "is not a file name"
	case strings.ContainsAny(s, `/\`):
		problem = "contains a slash"
	case !utf8.ValidString(s):
		problem = "is not valid UTF-8"
	default:
		for _, r := range s {
			if !unicode.IsPrint(r) || unicode.IsSpace(r) {
				problem = fmt.Sprintf("contains the character %q", r)
				break
			}
		}
	}
	if problem == "" {
		return nil
	}
	return p.errorf(pos, "%s %q %s; it becomes part of the socket's file name: use letters, digits, '-', '_' and '.'", field, s, problem)
}

// discover checks spec.discover and warns about rules that are not used.
func (p *configParser) discover(cfg *Config, d *fileDiscover) error {
	if d == nil {
		return nil
	}
	cfg.Discover.FileName = d.FileName
	if d.Find != nil {
		cfg.Discover.Find = Find{Glob: d.Find.Glob, Command: Command{Command: d.Find.Command, Args: d.Find.Args}}
		if len(d.Find.Command) == 0 && len(d.Find.Args) > 0 {
			_, _, pos := p.lookup("spec.discover.find.args")
			return p.errorf(pos, "spec.discover.find.args is set but spec.discover.find.command is not; set the command, or remove the args")
		}
	}
	if d.FileName != "" {
		_, _, pos := p.lookup("spec.discover.fileName")
		if strings.Contains(d.FileName, "**") {
			// Argo CD accepts it, and ** matches as * does.
			p.warnf(pos, "spec.discover.fileName %q uses **, which fileName does not support: it matches like * (one directory level), as in Argo CD; use spec.discover.find.glob for patterns that reach into subdirectories", d.FileName)
		}
		if _, err := filepath.Match(d.FileName, ""); err != nil {
			return p.errorf(pos, "spec.discover.fileName %q is not a valid glob pattern (%v); see https://pkg.go.dev/path/filepath#Match", d.FileName, err)
		}
		if _, ok := discoveryPattern(d.FileName); !ok {
			return p.errorf(pos, "spec.discover.fileName %q reaches outside the application's directory; patterns are relative to it", d.FileName)
		}
	}
	if d.Find != nil && d.Find.Glob != "" {
		_, _, pos := p.lookup("spec.discover.find.glob")
		if !doublestar.ValidatePattern(d.Find.Glob) {
			return p.errorf(pos, "spec.discover.find.glob %q is not a valid glob pattern; see https://github.com/bmatcuk/doublestar#patterns", d.Find.Glob)
		}
		if _, ok := discoveryPattern(d.Find.Glob); !ok {
			return p.errorf(pos, "spec.discover.find.glob %q reaches outside the application's directory; patterns are relative to it", d.Find.Glob)
		}
	}

	method := cfg.Discover.Method()
	_, _, discoverPos := p.lookup("spec.discover")
	if method == "" {
		p.warnf(discoverPos, "spec.discover sets none of fileName, find.glob and find.command; the plugin is used only for Applications that name it")
		return nil
	}
	var ignored []string
	if method == DiscoverFileName && d.Find != nil && d.Find.Glob != "" {
		ignored = append(ignored, "spec.discover.find.glob")
	}
	if method != DiscoverFindCommand && d.Find != nil && len(d.Find.Command) > 0 {
		ignored = append(ignored, "spec.discover.find.command")
	}
	for _, field := range ignored {
		_, _, pos := p.lookup(field)
		p.warnf(pos, "%s is ignored: spec.discover.%s is set, and only the first of fileName, find.glob and find.command is used", field, method)
	}
	return nil
}

// discoveryPattern turns a discovery pattern into one relative to the
// application's directory, for an fs.FS rooted there. As in Argo CD, which
// joins the pattern to the directory, a leading slash does not make it
// absolute. It reports false for a pattern that climbs out with "..".
func discoveryPattern(pattern string) (string, bool) {
	p := path.Clean(strings.TrimLeft(filepath.ToSlash(pattern), "/"))
	if p == ".." || strings.HasPrefix(p, "../") {
		return "", false
	}
	return p, true
}

// Info describes the plugin this configuration defines.
func (c *Config) Info() Info {
	return Info{
		Name:                c.Name,
		Version:             c.Version,
		DiscoveryConfigured: c.Discover.Method() != "",
		ProvideGitCreds:     c.ProvideGitCreds,
		PreserveFileMode:    c.PreserveFileMode,
	}
}
