package appset

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"sigs.k8s.io/yaml"

	"github.com/strata-dev/strata/internal/document"
)

// ErrTooLarge is wrapped by errors for output beyond the Limits.
var ErrTooLarge = errors.New("output too large")

// maxCount bounds the count argument of template functions that allocate
// in proportion to it (repeat, until, seq, indent, rand*), and maxBudget
// the sum of those counts over one render: nested loops over until cannot
// spin for hours.
const (
	maxCount  = 1 << 20
	maxBudget = 1 << 22
)

// engine renders strings in one of the two template modes.
type engine struct {
	goTemplate bool
	options    []string
	funcs      template.FuncMap
	cache      map[string]*template.Template
	maxString  int   // bytes of one rendered string
	maxTotal   int64 // bytes of all rendered strings
	total      int64
	budget     int64 // elements template functions may still allocate in this render
}

func newEngine(goTemplate bool, options []string, lim Limits) *engine {
	e := &engine{goTemplate: goTemplate, options: options, maxString: lim.MaxStringBytes, maxTotal: lim.MaxOutputBytes, budget: maxBudget}
	if goTemplate {
		e.funcs = funcMap(&e.budget)
		e.cache = map[string]*template.Template{}
	}
	return e
}

// replace renders one string with a parameter set.
func (e *engine) replace(s string, params map[string]any) (string, error) {
	var out string
	var err error
	if e.goTemplate {
		out, err = e.execute(s, params)
	} else {
		out, err = e.plain(s, params)
	}
	if err != nil {
		return "", err
	}
	e.total += int64(len(out))
	if e.maxTotal > 0 && e.total > e.maxTotal {
		return "", fmt.Errorf("%w: the rendered output exceeds %d bytes", ErrTooLarge, e.maxTotal)
	}
	return out, nil
}

// plain replaces {{key}} (spaces around key allowed) with the parameter's
// value where that value is a string, and leaves every other tag as it is,
// as Argo CD's fasttemplate-based renderer does. A "{{" without a closing
// "}}" is an error when the string holds any complete tag.
func (e *engine) plain(s string, params map[string]any) (string, error) {
	if !hasTag(s) {
		return s, nil
	}
	var b strings.Builder
	rest := s
	for {
		n := strings.Index(rest, "{{")
		if n < 0 {
			b.WriteString(rest)
			break
		}
		b.WriteString(rest[:n])
		rest = rest[n+2:]
		end := strings.Index(rest, "}}")
		if end < 0 {
			return "", fmt.Errorf("invalid template %q: a {{ has no closing }}", document.Clip(s, 80))
		}
		tag := rest[:end]
		rest = rest[end+2:]
		key := strings.TrimSpace(tag)
		if v, ok := params[key].(string); ok && key != "" {
			b.WriteString(v)
		} else {
			b.WriteString("{{" + tag + "}}")
		}
		if e.maxString > 0 && b.Len() > e.maxString {
			return "", fmt.Errorf("%w: a rendered string exceeds %d bytes", ErrTooLarge, e.maxString)
		}
	}
	if e.maxString > 0 && b.Len() > e.maxString {
		return "", fmt.Errorf("%w: a rendered string exceeds %d bytes", ErrTooLarge, e.maxString)
	}
	return b.String(), nil
}

// hasTag reports whether a line of s holds "{{" followed by "}}", which is
// what Argo CD's `.*{{.*}}.*` test checks before templating a string.
func hasTag(s string) bool {
	for line := range strings.SplitSeq(s, "\n") {
		if i := strings.Index(line, "{{"); i >= 0 && strings.Contains(line[i+2:], "}}") {
			return true
		}
	}
	return false
}

// execute runs s as a Go template over params.
func (e *engine) execute(s string, params map[string]any) (string, error) {
	t, ok := e.cache[s]
	if !ok {
		var err error
		if t, err = e.parse(s); err != nil {
			return "", err
		}
		if len(e.cache) < 4096 {
			e.cache[s] = t
		}
	}
	buf := &limitedBuffer{max: e.maxString}
	if err := t.Execute(buf, params); err != nil {
		var tooLarge *tooLargeError
		if errors.As(err, &tooLarge) {
			return "", fmt.Errorf("%w: a rendered string exceeds %d bytes", ErrTooLarge, e.maxString)
		}
		return "", fmt.Errorf("executing go template %q: %w", document.Clip(s, 120), err)
	}
	return buf.String(), nil
}

func (e *engine) parse(s string) (*template.Template, error) {
	t := template.New("").Funcs(e.funcs)
	for _, o := range e.options {
		t = t.Option(o) // validated by Parse
	}
	t = t.Funcs(template.FuncMap{"tpl": tplFunc(t)})
	t, err := t.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("parsing go template %q: %w", document.Clip(s, 120), err)
	}
	return t, nil
}

// tplFunc renders a string as a template with the functions and options of
// parent, like Helm's and Argo CD's tpl.
func tplFunc(parent *template.Template) func(string, any) (string, error) {
	return func(text string, data any) (string, error) {
		t, err := parent.Clone()
		if err != nil {
			return "", fmt.Errorf("tpl: %w", err)
		}
		if t, err = t.New(parent.Name()).Parse(text); err != nil {
			return "", fmt.Errorf("tpl: parsing %q: %w", document.Clip(text, 80), err)
		}
		var b strings.Builder
		if err := t.Execute(&limitedWriter{w: &b, max: maxCount * 16}, data); err != nil {
			return "", fmt.Errorf("tpl: executing %q: %w", document.Clip(text, 80), err)
		}
		return strings.ReplaceAll(b.String(), "<no value>", ""), nil
	}
}

// tooLargeError stops a template that writes too much.
type tooLargeError struct{}

func (*tooLargeError) Error() string { return "output too large" }

type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.max > 0 && b.Len()+len(p) > b.max {
		return 0, &tooLargeError{}
	}
	return b.Buffer.Write(p)
}

type limitedWriter struct {
	w   *strings.Builder
	max int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.w.Len()+len(p) > l.max {
		return 0, &tooLargeError{}
	}
	return l.w.Write(p)
}

// funcMap is sprig's function map as the ApplicationSet controller offers
// it: without env, expandenv and getHostByName, with normalize, slugify,
// toYaml, fromYaml and fromYamlArray (tpl is bound per template). Functions
// that allocate in proportion to a count argument refuse counts above
// maxCount instead of exhausting memory.
func funcMap(budget *int64) template.FuncMap {
	fm := template.FuncMap{}
	for k, v := range sprig.GenericFuncMap() {
		fm[k] = v
	}
	delete(fm, "env")
	delete(fm, "expandenv")
	delete(fm, "getHostByName")
	fm["normalize"] = sanitizeName
	fm["slugify"] = slugify
	fm["toYaml"] = toYAML
	fm["fromYaml"] = fromYAML
	fm["fromYamlArray"] = fromYAMLArray
	for _, name := range []string{"repeat", "until", "indent", "nindent", "randAlphaNum", "randAlpha", "randNumeric", "randAscii", "randBytes"} {
		if f, ok := fm[name]; ok {
			fm[name] = bounded(name, f, budget, func(args []reflect.Value) int64 { return intArg(args, 0) })
		}
	}
	if f, ok := fm["untilStep"]; ok {
		fm["untilStep"] = bounded("untilStep", f, budget, func(args []reflect.Value) int64 {
			start, stop, step := intArg(args, 0), intArg(args, 1), intArg(args, 2)
			if step == 0 {
				return 0
			}
			return (stop - start) / step
		})
	}
	if f, ok := fm["seq"]; ok {
		fm["seq"] = bounded("seq", f, budget, func(args []reflect.Value) int64 {
			if len(args) != 1 || args[0].Kind() != reflect.Slice {
				return 0
			}
			var n []int64
			for i := 0; i < args[0].Len(); i++ {
				n = append(n, args[0].Index(i).Int())
			}
			switch len(n) {
			case 1:
				return n[0]
			case 2:
				return n[1] - n[0]
			case 3:
				if n[1] == 0 {
					return 0
				}
				return (n[2] - n[0]) / n[1]
			}
			return 0
		})
	}
	return fm
}

func intArg(args []reflect.Value, i int) int64 {
	if i < len(args) && args[i].CanInt() {
		return args[i].Int()
	}
	return 0
}

// bounded wraps f (a function value) so that a call whose count is beyond
// maxCount, or beyond what is left of budget, fails; text/template turns
// the panic into an execution error.
func bounded(name string, f any, budget *int64, count func([]reflect.Value) int64) any {
	fv := reflect.ValueOf(f)
	if fv.Kind() != reflect.Func {
		return f
	}
	return reflect.MakeFunc(fv.Type(), func(args []reflect.Value) []reflect.Value {
		n := count(args)
		if n > maxCount || n < -maxCount {
			panic(fmt.Errorf("%s: count %d is beyond the limit of %d", name, n, maxCount))
		}
		if n < 0 {
			n = -n
		}
		if *budget -= n; *budget < 0 {
			panic(fmt.Errorf("%s: the templates of this ApplicationSet asked for more than %d elements in all", name, int64(maxBudget)))
		}
		if fv.Type().IsVariadic() {
			return fv.CallSlice(args)
		}
		return fv.Call(args)
	}).Interface()
}

var invalidDNSChars = regexp.MustCompile(`[^-a-z0-9.]`)

// sanitizeName is the controller's normalize: lower case, characters other
// than [-a-z0-9.] replaced by '-', at most 253 bytes, no leading or
// trailing '-' or '.'.
func sanitizeName(name string) string {
	name = strings.ToLower(name)
	name = invalidDNSChars.ReplaceAllString(name, "-")
	if len(name) > 253 {
		name = name[:253]
	}
	return strings.Trim(name, "-.")
}

var multipleDashes = regexp.MustCompile(`-+`)

// slugify is the controller's slugify: [maxLength [smartTruncate]] name,
// defaults 50 and true. It normalizes the name, turns '.' into '-',
// collapses dashes and cuts the result to maxLength, at the last '-' before
// the limit when smartTruncate is set.
func slugify(args ...any) (string, error) {
	maxLen, smart, name := 50, true, ""
	for i, a := range args {
		switch {
		case i == len(args)-1:
			s, ok := a.(string)
			if !ok {
				return "", fmt.Errorf("slugify: the name (last argument) must be a string, not %T", a)
			}
			name = s
		case i == 0:
			n, ok := a.(int)
			if !ok || n < 0 {
				return "", fmt.Errorf("slugify: the first argument is the maximum length, a non-negative integer, not %v", a)
			}
			maxLen = n
		case i == 1:
			b, ok := a.(bool)
			if !ok {
				return "", fmt.Errorf("slugify: the second argument enables smart truncation, a boolean, not %v", a)
			}
			smart = b
		default:
			return "", fmt.Errorf("slugify: takes at most 3 arguments: maxLength, smartTruncate, name")
		}
	}
	s := sanitizeName(name)
	if !smart && len(s) >= maxLen {
		s = s[:maxLen]
	}
	s = strings.ReplaceAll(s, ".", "-")
	s = multipleDashes.ReplaceAllString(s, "-")
	s = strings.Trim(s, "-_")
	if smart && maxLen > 0 && len(s) > maxLen {
		cut := maxLen
		for i := maxLen; i >= 0; i-- {
			if s[i] == '-' {
				cut = i
				break
			}
		}
		s = s[:cut]
	}
	return s, nil
}

func toYAML(v any) (string, error) {
	data, err := yaml.Marshal(v)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(string(data), "\n"), nil
}

func fromYAML(s string) (map[string]any, error) {
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		return nil, err
	}
	return m, nil
}

func fromYAMLArray(s string) ([]any, error) {
	a := []any{}
	if err := yaml.Unmarshal([]byte(s), &a); err != nil {
		return nil, err
	}
	return a, nil
}

// fieldError is an error rendering the string at path of a tree.
type fieldError struct {
	path document.Path
	err  error
}

func (e *fieldError) Error() string { return e.path.String() + ": " + e.err.Error() }
func (e *fieldError) Unwrap() error { return e.err }

// renderTree templates every string of v, map keys included, with params.
// Maps and lists are copied; v is not modified.
func (e *engine) renderTree(v any, params map[string]any, path document.Path) (any, error) {
	switch v := v.(type) {
	case string:
		s, err := e.replace(v, params)
		if err != nil {
			return nil, &fieldError{path: path, err: err}
		}
		return s, nil
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make(map[string]any, len(v))
		for _, k := range keys {
			if v[k] == nil {
				continue // the controller drops null values of maps
			}
			kp := path.Append(document.Key(k))
			rv, err := e.renderTree(v[k], params, kp)
			if err != nil {
				return nil, err
			}
			rk, err := e.replace(k, params)
			if err != nil {
				return nil, &fieldError{path: kp, err: fmt.Errorf("the key: %w", err)}
			}
			if _, dup := out[rk]; dup {
				return nil, &fieldError{path: kp, err: fmt.Errorf("the key renders to %q, which another key of this map renders to as well", rk)}
			}
			out[rk] = rv
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, e2 := range v {
			rv, err := e.renderTree(e2, params, path.Append(document.Index(i)))
			if err != nil {
				return nil, err
			}
			out[i] = rv
		}
		return out, nil
	}
	return v, nil
}
