package appset

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"
	"time"

	"github.com/Masterminds/sprig/v3"
	"sigs.k8s.io/yaml"

	"github.com/strata-dev/strata/internal/document"
)

// ErrTooLarge is wrapped by errors for output beyond the Limits.
var ErrTooLarge = errors.New("output too large")

// ErrTemplateTimeout is wrapped by the error of a render whose templates ran
// longer than Limits.TemplateTime.
var ErrTemplateTimeout = errors.New("template time limit exceeded")

// maxCount bounds the count argument of template functions that allocate
// in proportion to it (repeat, until, seq, indent, rand*).
const maxCount = 1 << 20

// maxValueDepth bounds the nesting of a value a template function returns:
// deeper is a self-referencing dict or list.
const maxValueDepth = 1000

// engine renders strings in one of the two template modes.
type engine struct {
	goTemplate bool
	options    []string
	funcs      template.FuncMap
	cache      map[string]*template.Template
	lim        Limits
	b          *budget
}

func newEngine(goTemplate bool, options []string, lim Limits, b *budget) *engine {
	if b == nil {
		b = newBudget(context.Background(), lim)
	}
	e := &engine{goTemplate: goTemplate, options: options, lim: lim, b: b}
	if goTemplate {
		e.funcs = e.funcMap()
		e.cache = map[string]*template.Template{}
	}
	return e
}

// withOptions returns an engine sharing e's functions and budget with other
// goTemplateOptions.
func (e *engine) withOptions(options []string) *engine {
	return &engine{goTemplate: e.goTemplate, options: options, funcs: e.funcs, cache: map[string]*template.Template{}, lim: e.lim, b: e.b}
}

// budget is what the templates of one render (one file, for File) may
// still spend. Go's text/template cannot be interrupted: the budget is
// checked by the template functions, at every iteration of a range and at
// every call of a defined template (Parse adds those checks), so a
// template stops soon after it is spent.
type budget struct {
	ctx     context.Context
	lim     Limits
	ops     int64 // steps left: range iterations, template and function calls
	bytes   int64 // bytes of values template functions may still return
	output  int64 // bytes of rendered strings so far
	spent   time.Duration
	started time.Time // of the template running now; zero between templates
	steps   uint32
}

func newBudget(ctx context.Context, lim Limits) *budget {
	return &budget{ctx: ctx, lim: lim, ops: lim.MaxTemplateOps, bytes: lim.MaxTemplateBytes}
}

// step spends n steps, and checks the time every 64 steps or when force.
func (b *budget) step(n int64, force bool) error {
	b.ops -= n
	if b.ops < 0 {
		return fmt.Errorf("%w: the templates took more than %d steps (range iterations, template and function calls); a loop that large is a mistake or an attack (--template-max-steps)", ErrTooLarge, b.lim.MaxTemplateOps)
	}
	b.steps++
	if force || b.steps%64 == 0 {
		return b.checkTime()
	}
	return nil
}

func (b *budget) checkTime() error {
	if b.started.IsZero() {
		return nil
	}
	if b.ctx != nil {
		if err := b.ctx.Err(); err != nil {
			return err
		}
	}
	if b.spent+time.Since(b.started) > b.lim.TemplateTime {
		return fmt.Errorf("%w: the templates ran for more than %s (--template-timeout)", ErrTemplateTimeout, b.lim.TemplateTime)
	}
	return nil
}

// produce spends the bytes of a value a template function returned.
func (b *budget) produce(n int64) error {
	b.bytes -= n
	if b.bytes < 0 {
		return fmt.Errorf("%w: the template functions returned more than %d bytes in all (--template-max-bytes)", ErrTooLarge, b.lim.MaxTemplateBytes)
	}
	return nil
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
	e.b.output += int64(len(out))
	if e.b.output > e.lim.MaxOutputBytes {
		return "", fmt.Errorf("%w: the rendered output exceeds %d bytes", ErrTooLarge, e.lim.MaxOutputBytes)
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
	maxString := e.lim.MaxStringBytes
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
		if b.Len() > maxString {
			return "", fmt.Errorf("%w: a rendered string exceeds %d bytes", ErrTooLarge, maxString)
		}
	}
	if b.Len() > maxString {
		return "", fmt.Errorf("%w: a rendered string exceeds %d bytes", ErrTooLarge, maxString)
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
	buf := &limitedBuffer{max: e.lim.MaxStringBytes}
	e.b.started = time.Now()
	err := e.b.checkTime()
	if err == nil {
		err = t.Execute(buf, params)
	}
	e.b.spent += time.Since(e.b.started)
	e.b.started = time.Time{}
	if err != nil {
		var tooLarge *tooLargeError
		var le *limitError
		switch {
		case errors.As(err, &le):
			return "", fmt.Errorf("executing go template %q: %w", document.Clip(s, 120), le.err)
		case errors.As(err, &tooLarge):
			return "", fmt.Errorf("%w: a rendered string exceeds %d bytes", ErrTooLarge, e.lim.MaxStringBytes)
		case strings.Contains(err.Error(), "appset.rawJSON"):
			return "", fmt.Errorf("executing go template %q: %w\n(generator.input.parameters holds each parameter as JSON text, as the controller does: toJson gives the value's JSON; to reach into it, use (fromJson (toJson .generator.input.parameters)))", document.Clip(s, 120), err)
		}
		return "", fmt.Errorf("executing go template %q: %w", document.Clip(s, 120), err)
	}
	return buf.String(), nil
}

// Names of the functions Parse adds to every template: a step at each
// iteration of a range and each call of a defined template, and a check of
// the size of what a range ranges over.
const (
	stepFunc  = "strataStep_"
	iterFunc  = "strataIter_"
	rangeFunc = "strataRange_"
)

func (e *engine) parse(s string) (*template.Template, error) {
	t := template.New("base").Funcs(e.funcs) // the controller's name, seen in errors
	for _, o := range e.options {
		t = t.Option(o) // validated by Parse
	}
	t, err := t.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("parsing go template %q: %w", document.Clip(s, 120), err)
	}
	for _, tt := range t.Templates() {
		if tt.Tree != nil && tt.Tree.Root != nil {
			instrument(tt.Tree.Root, stepFunc)
		}
	}
	return t, nil
}

// instrument adds a step at the start of l when first is set (a template's
// body: stepFunc; a range's body: iterFunc, the range having paid for its
// iterations), and the size check to the pipeline of every range in l.
func instrument(l *parse.ListNode, first string) {
	for _, n := range l.Nodes {
		switch n := n.(type) {
		case *parse.IfNode:
			instrumentBranch(&n.BranchNode, false)
		case *parse.WithNode:
			instrumentBranch(&n.BranchNode, false)
		case *parse.RangeNode:
			instrumentBranch(&n.BranchNode, true)
		case *parse.ListNode:
			instrument(n, "")
		}
	}
	if first != "" {
		l.Nodes = append([]parse.Node{stepNode(first, l.Pos)}, l.Nodes...)
	}
}

func instrumentBranch(b *parse.BranchNode, isRange bool) {
	if b.List == nil {
		b.List = &parse.ListNode{NodeType: parse.NodeList, Pos: b.Pos}
	}
	body := ""
	if isRange {
		body = iterFunc
	}
	instrument(b.List, body)
	if b.ElseList != nil {
		instrument(b.ElseList, "")
	}
	if isRange && b.Pipe != nil {
		b.Pipe.Cmds = append(b.Pipe.Cmds, &parse.CommandNode{NodeType: parse.NodeCommand, Pos: b.Pos,
			Args: []parse.Node{parse.NewIdentifier(rangeFunc).SetPos(b.Pos)}})
	}
}

// stepNode is {{ fn }}, which prints nothing.
func stepNode(fn string, pos parse.Pos) parse.Node {
	return &parse.ActionNode{NodeType: parse.NodeAction, Pos: pos, Pipe: &parse.PipeNode{NodeType: parse.NodePipe, Pos: pos,
		Cmds: []*parse.CommandNode{{NodeType: parse.NodeCommand, Pos: pos, Args: []parse.Node{parse.NewIdentifier(fn).SetPos(pos)}}}}}
}

// limitError carries a budget's error out of a template function, so the
// render reports it without text/template's wrapping.
type limitError struct{ err error }

func (e *limitError) Error() string { return e.err.Error() }
func (e *limitError) Unwrap() error { return e.err }

// limit wraps a budget's error; nil stays nil.
func limit(err error) error {
	if err == nil {
		return nil
	}
	return &limitError{err}
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

// funcMap is sprig's function map as the ApplicationSet controller offers
// it: without env, expandenv and getHostByName, with normalize, slugify,
// toYaml, fromYaml and fromYamlArray; no Argo CD release offers tpl. Every
// function, and the builtins that format values (print, printf, println,
// html, js, urlquery), is wrapped to hold the budget: each call is a step,
// arguments and results beyond Limits.MaxValueBytes are errors, and
// functions that allocate in proportion to an argument check it first.
func (e *engine) funcMap() template.FuncMap {
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
	fm["print"] = fmt.Sprint
	fm["printf"] = fmt.Sprintf
	fm["println"] = fmt.Sprintln
	fm["html"] = template.HTMLEscaper
	fm["js"] = template.JSEscaper
	fm["urlquery"] = template.URLQueryEscaper
	out := template.FuncMap{}
	for name, f := range fm {
		pre := e.precheck(name)
		if pre == nil {
			if w := e.typed(name, f); w != nil {
				out[name] = w
				continue
			}
		}
		out[name] = e.bounded(name, f, pre)
	}
	out[stepFunc] = func() (string, error) { return "", limit(e.b.step(1, false)) }
	out[iterFunc] = func() (string, error) { return "", limit(e.b.step(0, false)) }
	out[rangeFunc] = func(v any) (any, error) {
		n := rangeCount(v)
		if n > e.lim.MaxTemplateOps {
			return nil, limit(fmt.Errorf("%w: range over %d items, beyond the limit of %d steps (--template-max-steps)", ErrTooLarge, n, e.lim.MaxTemplateOps))
		}
		return v, limit(e.b.step(n, true))
	}
	return out
}

// rangeCount is how many iterations a range over v makes.
func rangeCount(v any) int64 {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface {
		if rv.IsNil() {
			return 0
		}
		rv = rv.Elem()
	}
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return max(rv.Int(), 0)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if rv.Uint() > math.MaxInt64 {
			return math.MaxInt64
		}
		return int64(rv.Uint())
	case reflect.Slice, reflect.Array, reflect.Map, reflect.String, reflect.Chan:
		return int64(rv.Len())
	}
	return 0
}

// bounded wraps f (a function value): each call is a step that checks the
// time; pre, when set, checks the arguments first; the result must fit
// Limits.MaxValueBytes and is charged to the budget. text/template turns
// the panic of a failed check into an execution error.
func (e *engine) bounded(name string, f any, pre func([]reflect.Value) error) any {
	fv := reflect.ValueOf(f)
	if fv.Kind() != reflect.Func {
		return f
	}
	ft := fv.Type()
	return reflect.MakeFunc(ft, func(args []reflect.Value) []reflect.Value {
		if err := e.b.step(1, true); err != nil {
			panic(limit(err))
		}
		var in int64
		for _, a := range args {
			n, err := e.sizeOf(a)
			if err != nil {
				panic(limit(fmt.Errorf("%s: an argument: %w", name, err)))
			}
			in += n
		}
		if in > e.lim.MaxValueBytes {
			panic(limit(fmt.Errorf("%w: %s: the arguments hold more than %d bytes (--template-max-value-bytes)", ErrTooLarge, name, e.lim.MaxValueBytes)))
		}
		if pre != nil {
			if err := pre(args); err != nil {
				panic(limit(fmt.Errorf("%s: %w", name, err)))
			}
		}
		var out []reflect.Value
		if ft.IsVariadic() {
			out = fv.CallSlice(args)
		} else {
			out = fv.Call(args)
		}
		if len(out) > 0 {
			n, err := e.sizeOf(out[0])
			if err == nil {
				err = e.b.produce(n)
			}
			if err != nil {
				panic(limit(fmt.Errorf("%s: the result: %w", name, err)))
			}
		}
		return out
	}).Interface()
}

// typed wraps the functions of the most common signatures as bounded
// does, without reflection (text/template calls every function through
// reflect already; bounded's reflect.MakeFunc adds two more calls). It
// returns nil for other signatures.
func (e *engine) typed(name string, f any) any {
	switch fn := f.(type) {
	case func(string) string:
		return func(a string) (string, error) {
			if err := e.enter(name, int64(len(a))); err != nil {
				return "", err
			}
			return e.leave(name, fn(a))
		}
	case func(string, string) string:
		return func(a, b string) (string, error) {
			if err := e.enter(name, int64(len(a)+len(b))); err != nil {
				return "", err
			}
			return e.leave(name, fn(a, b))
		}
	case func(string, string) bool:
		return func(a, b string) (bool, error) {
			if err := e.enter(name, int64(len(a)+len(b))); err != nil {
				return false, err
			}
			return fn(a, b), nil
		}
	case func(any) string:
		return func(a any) (string, error) {
			if err := e.enter(name, e.argSize(a)); err != nil {
				return "", err
			}
			return e.leave(name, fn(a))
		}
	case func(any) (string, error):
		return func(a any) (string, error) {
			if err := e.enter(name, e.argSize(a)); err != nil {
				return "", err
			}
			r, err := fn(a)
			if err != nil {
				return "", err
			}
			return e.leave(name, r)
		}
	case func(...any) string:
		return func(a ...any) (string, error) {
			if err := e.enter(name, e.argSize(a...)); err != nil {
				return "", err
			}
			return e.leave(name, fn(a...))
		}
	case func(...any) (string, error):
		return func(a ...any) (string, error) {
			if err := e.enter(name, e.argSize(a...)); err != nil {
				return "", err
			}
			r, err := fn(a...)
			if err != nil {
				return "", err
			}
			return e.leave(name, r)
		}
	case func(string, ...any) string:
		return func(f string, a ...any) (string, error) {
			if err := e.enter(name, int64(len(f))+e.argSize(a...)); err != nil {
				return "", err
			}
			return e.leave(name, fn(f, a...))
		}
	}
	return nil
}

// enter is a typed function's step and check of its arguments' size.
func (e *engine) enter(name string, args int64) error {
	if err := e.b.step(1, true); err != nil {
		return limit(err)
	}
	if args > e.lim.MaxValueBytes {
		return limit(fmt.Errorf("%w: %s: the arguments hold more than %d bytes (--template-max-value-bytes)", ErrTooLarge, name, e.lim.MaxValueBytes))
	}
	return nil
}

// leave checks and charges a typed function's result.
func (e *engine) leave(name, r string) (string, error) {
	n := int64(len(r)) + 16
	if n > e.lim.MaxValueBytes {
		return "", limit(fmt.Errorf("%s: the result: %w: a value holds more than %d bytes (--template-max-value-bytes)", name, ErrTooLarge, e.lim.MaxValueBytes))
	}
	if err := e.b.produce(n); err != nil {
		return "", limit(fmt.Errorf("%s: the result: %w", name, err))
	}
	return r, nil
}

// argSize is the size of arguments as sizeOf measures them; beyond the
// limit it is more than MaxValueBytes.
func (e *engine) argSize(args ...any) int64 {
	var total int64
	for _, a := range args {
		n, err := e.sizeOf(reflect.ValueOf(a))
		if err != nil {
			return e.lim.MaxValueBytes + 1
		}
		total += n
		if total > e.lim.MaxValueBytes {
			return total
		}
	}
	return total
}

// sizeOf measures a value as it would be held in memory with every
// reference followed (shared parts count each time): the bytes of its
// strings and 16 per element. Beyond Limits.MaxValueBytes, or nested
// deeper than maxValueDepth (a dict holding itself), it is an error.
func (e *engine) sizeOf(v reflect.Value) (int64, error) {
	// Fast paths for the common arguments and results: scalars.
	for v.IsValid() && v.Kind() == reflect.Interface && !v.IsNil() {
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Invalid, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return 16, nil
	case reflect.String:
		n := 16 + int64(v.Len())
		if n > e.lim.MaxValueBytes {
			return n, fmt.Errorf("%w: a value holds more than %d bytes (--template-max-value-bytes)", ErrTooLarge, e.lim.MaxValueBytes)
		}
		return n, nil
	}
	var n int64
	limit := e.lim.MaxValueBytes
	var walk func(v reflect.Value, depth int) error
	walk = func(v reflect.Value, depth int) error {
		if depth > maxValueDepth {
			return fmt.Errorf("%w: a value is nested more than %d levels deep (does a dict or list hold itself?)", ErrTooLarge, maxValueDepth)
		}
		n += 16
		if n > limit {
			return fmt.Errorf("%w: a value holds more than %d bytes", ErrTooLarge, limit)
		}
		if !v.IsValid() {
			return nil
		}
		switch v.Kind() {
		case reflect.String:
			n += int64(v.Len())
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() {
				return walk(v.Elem(), depth+1)
			}
		case reflect.Slice, reflect.Array:
			if v.Type().Elem().Kind() == reflect.Uint8 {
				n += int64(v.Len())
				break
			}
			for i := 0; i < v.Len(); i++ {
				if err := walk(v.Index(i), depth+1); err != nil {
					return err
				}
			}
		case reflect.Map:
			it := v.MapRange()
			for it.Next() {
				if err := walk(it.Key(), depth+1); err != nil {
					return err
				}
				if err := walk(it.Value(), depth+1); err != nil {
					return err
				}
			}
		}
		if n > limit {
			return fmt.Errorf("%w: a value holds more than %d bytes", ErrTooLarge, limit)
		}
		return nil
	}
	err := walk(v, 0)
	return n, err
}

// precheck returns the check of the arguments of the functions that
// allocate in proportion to an argument rather than to their input's size.
func (e *engine) precheck(name string) func([]reflect.Value) error {
	maxv := e.lim.MaxValueBytes
	count := func(what string, n, per int64) error {
		if n < 0 {
			n = -n
		}
		if n > maxCount || n*max(per, 1) > maxv {
			return fmt.Errorf("%w: %s %d is beyond the limit (%d elements, %d bytes)", ErrTooLarge, what, n, maxCount, maxv)
		}
		return nil
	}
	switch name {
	case "repeat":
		return func(a []reflect.Value) error { return count("count", intArg(a, 0), int64(strArg(a, 1))) }
	case "until", "randAlphaNum", "randAlpha", "randNumeric", "randAscii", "randBytes":
		return func(a []reflect.Value) error { return count("count", intArg(a, 0), 8) }
	case "indent", "nindent":
		return func(a []reflect.Value) error {
			return count("indent", intArg(a, 0), int64(strings.Count(strValue(a, 1), "\n")+1))
		}
	case "untilStep":
		return func(a []reflect.Value) error {
			start, stop, step := intArg(a, 0), intArg(a, 1), intArg(a, 2)
			if step == 0 {
				return nil
			}
			return count("count", (stop-start)/step, 8)
		}
	case "seq":
		return func(a []reflect.Value) error { return count("count", seqCount(a), 8) }
	case "replace":
		// replace OLD NEW S
		return func(a []reflect.Value) error {
			old, repl, s := strValue(a, 0), strValue(a, 1), strValue(a, 2)
			n := strings.Count(s, old)
			if grow := int64(n) * int64(len(repl)-len(old)); int64(len(s))+grow > maxv {
				return fmt.Errorf("%w: the result would hold %d bytes, beyond the limit of %d", ErrTooLarge, int64(len(s))+grow, maxv)
			}
			return nil
		}
	case "regexReplaceAll", "regexReplaceAllLiteral":
		// regexReplaceAll REGEX S REPL: each match becomes REPL, whose $1
		// references can copy the whole of S.
		return func(a []reflect.Value) error {
			re, err := regexp.Compile(strValue(a, 0))
			if err != nil {
				return nil // the function reports it
			}
			s, repl := strValue(a, 1), strValue(a, 2)
			per := int64(len(repl))
			if name == "regexReplaceAll" && strings.Contains(repl, "$") {
				per += int64(strings.Count(repl, "$")) * int64(len(s))
			}
			n := int64(len(re.FindAllStringIndex(s, -1)))
			if total := int64(len(s)) + n*per; total > maxv {
				return fmt.Errorf("%w: the result could hold %d bytes, beyond the limit of %d", ErrTooLarge, total, maxv)
			}
			return nil
		}
	case "wrapWith":
		// wrapWith N SEP S inserts SEP about every N characters.
		return func(a []reflect.Value) error {
			n, sep, s := intArg(a, 0), strValue(a, 1), strValue(a, 2)
			if total := int64(len(s)) + (int64(len(s))/max(n, 1)+1)*int64(len(sep)); total > maxv {
				return fmt.Errorf("%w: the result could hold %d bytes, beyond the limit of %d", ErrTooLarge, total, maxv)
			}
			return nil
		}
	case "join":
		// join SEP LIST
		return func(a []reflect.Value) error {
			sep := strValue(a, 0)
			n := int64(rangeCount(valueArg(a, 1)))
			if total := n * int64(len(sep)); total > maxv {
				return fmt.Errorf("%w: the result could hold %d bytes, beyond the limit of %d", ErrTooLarge, total, maxv)
			}
			return nil
		}
	case "printf":
		return func(a []reflect.Value) error { return checkFormat(strValue(a, 0), a[1:], maxv) }
	case "uniq", "mustUniq", "without", "mustWithout":
		// They compare every item with every item kept (uniq) or with
		// every item to omit (without): quadratic, inside one call that
		// no check interrupts. Pay for the comparisons first, 16 a step.
		return func(a []reflect.Value) error {
			n := rangeCount(valueArg(a, 0))
			m := n
			if strings.HasSuffix(strings.ToLower(name), "without") {
				m = 0
				for _, o := range a[1:] {
					if o.Kind() == reflect.Slice {
						m += int64(o.Len())
					} else {
						m++
					}
				}
			}
			steps := n * m / 16
			if m > 0 && n > math.MaxInt64/m {
				steps = math.MaxInt64
			}
			if steps > e.lim.MaxTemplateOps {
				return fmt.Errorf("%w: %d items compared with %d would take more than the limit of %d steps (--template-max-steps)", ErrTooLarge, n, m, e.lim.MaxTemplateOps)
			}
			return e.b.step(steps, true)
		}
	case "fromYaml", "fromYamlArray":
		return func(a []reflect.Value) error { return checkYAMLExpansion(strValue(a, 0), e.lim) }
	}
	return nil
}

// checkFormat refuses a printf format whose widths or precisions (written,
// or taken from the arguments with *) exceed max.
func checkFormat(format string, args []reflect.Value, maxv int64) error {
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		num := int64(0)
		for i++; i < len(format); i++ {
			c := format[i]
			switch {
			case c >= '0' && c <= '9':
				num = num*10 + int64(c-'0')
				if num > maxv {
					return fmt.Errorf("%w: a width or precision in the format is beyond the limit of %d bytes", ErrTooLarge, maxv)
				}
				continue
			case c == '*':
				var vals []reflect.Value
				for _, a := range args {
					if a.Kind() == reflect.Slice {
						for j := 0; j < a.Len(); j++ {
							vals = append(vals, a.Index(j))
						}
					} else {
						vals = append(vals, a)
					}
				}
				for _, a := range vals {
					if n := intValue(a); n > maxv || n < -maxv {
						return fmt.Errorf("%w: a width or precision argument is beyond the limit of %d bytes", ErrTooLarge, maxv)
					}
				}
				continue
			case c == '.' || c == '+' || c == '-' || c == '#' || c == ' ' || c == '[' || c == ']':
				num = 0
				continue
			}
			break
		}
	}
	return nil
}

func valueArg(args []reflect.Value, i int) any {
	if i < len(args) && args[i].IsValid() && args[i].CanInterface() {
		return args[i].Interface()
	}
	return nil
}

func intArg(args []reflect.Value, i int) int64 {
	if i < len(args) {
		return intValue(args[i])
	}
	return 0
}

// intValue reads an integer argument as sprig's toInt64 would.
func intValue(v reflect.Value) int64 {
	for v.IsValid() && (v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer) && !v.IsNil() {
		v = v.Elem()
	}
	if !v.IsValid() {
		return 0
	}
	switch {
	case v.CanInt():
		return v.Int()
	case v.CanUint():
		if v.Uint() > math.MaxInt64 {
			return math.MaxInt64
		}
		return int64(v.Uint())
	case v.CanFloat():
		f := v.Float()
		if f > math.MaxInt64 || f < math.MinInt64 || f != f {
			return math.MaxInt64
		}
		return int64(f)
	case v.Kind() == reflect.String:
		if n, err := strconv.ParseInt(strings.TrimSpace(v.String()), 0, 64); err == nil {
			return n
		}
		if f, err := strconv.ParseFloat(strings.TrimSpace(v.String()), 64); err == nil {
			if f > math.MaxInt64 || f < math.MinInt64 {
				return math.MaxInt64
			}
			return int64(f)
		}
	}
	return 0
}

func strValue(args []reflect.Value, i int) string {
	if i >= len(args) {
		return ""
	}
	v := args[i]
	for v.IsValid() && (v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer) && !v.IsNil() {
		v = v.Elem()
	}
	if v.IsValid() && v.Kind() == reflect.String {
		return v.String()
	}
	return ""
}

func strArg(args []reflect.Value, i int) int { return len(strValue(args, i)) }

// seqCount is how many numbers seq's arguments ask for.
func seqCount(args []reflect.Value) int64 {
	var n []int64
	for _, a := range args {
		if a.Kind() == reflect.Slice {
			for i := 0; i < a.Len(); i++ {
				n = append(n, intValue(a.Index(i)))
			}
		} else {
			n = append(n, intValue(a))
		}
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
