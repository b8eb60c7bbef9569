package values

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/strata-dev/strata/internal/document"
)

// SetKind selects how an assignment's value is read, as Helm's flags do.
type SetKind int

const (
	SetValue   SetKind = iota // --set: typed values (null, true/false, int64 without leading zeros; everything else a string), {a,b} lists
	SetString                 // --set-string: every value a string
	SetJSON                   // --set-json: value is JSON (objects, arrays, numbers as int64 when integral and exact, else float64; huge ints json.Number)
	SetFile                   // --set-file: value is a file path; the file's content becomes a string
	SetLiteral                // --set-literal: the whole remainder after the first = is a literal string, one assignment only (no escapes, as in Helm)
)

var setFlags = [...]string{"--set", "--set-string", "--set-json", "--set-file", "--set-literal"}

// Flag returns the Helm flag that reads values this way: "--set", "--set-string", ...
func (k SetKind) Flag() string {
	if k < 0 || int(k) >= len(setFlags) {
		return fmt.Sprintf("SetKind(%d)", int(k))
	}
	return setFlags[k]
}

// ReadFileFunc reads the file named by a --set-file value.
type ReadFileFunc func(path string) ([]byte, error)

// ErrBadSet is wrapped by every error ApplySet and ParseSet return.
var ErrBadSet = errors.New("invalid set argument")

// Limits on one flag argument. Helm has the same index and nesting limits.
const (
	maxSetArg     = 1 << 20 // bytes
	maxSetDepth   = 1000    // steps in one assignment's path
	maxSetNesting = 30      // keys followed by a dot in one path (Helm's MaxNestedNameLevel)
	maxSetGrowth  = 1 << 22 // list elements the argument may add
)

// ApplySet applies one flag argument (which may hold several comma-separated
// assignments, as Helm allows) onto dest, in place, with Helm's semantics.
// It never mutates a []any already present in dest (it replaces it with a modified copy),
// and never panics. readFile is only used for SetFile (nil => error for SetFile).
//
// An assignment is a path in the notation of Path.String, then =, then a
// value. Helm's quirks are kept: an empty key sets nothing (`.a=1` is a
// no-op), text after a complete JSON or {list} value starts the next
// assignment even without a comma, and an argument that ends inside a path
// (`a[0]`, `a.b[`, `a.`) is accepted and only creates the containers Helm
// would create on the way.
//
// Errors wrap ErrBadSet and read `--set "a[x]=1": list index "x" is not a
// non-negative integer`. A malformed argument leaves dest untouched; when an
// assignment conflicts with what dest holds (`a.b=1` where a is a string),
// the assignments before it stay applied.
//
// Two things Helm's flags do are left to the caller: applying all --set-json
// arguments first, then --set, --set-string, --set-file and --set-literal;
// and reading a --set-json argument that is a whole JSON object (`{"a":1}`)
// as a document to merge.
func ApplySet(dest map[string]any, kind SetKind, arg string, readFile ReadFileFunc) error {
	fail := func(format string, args ...any) error {
		return &setError{flag: kind.Flag(), assignment: arg, msg: fmt.Sprintf(format, args...)}
	}
	switch {
	case kind < SetValue || kind > SetLiteral:
		return fail("unknown kind of assignment")
	case dest == nil:
		return fail("no map to apply the assignments to")
	case kind == SetFile && readFile == nil:
		return fail("no function to read files with was given")
	case len(arg) > maxSetArg:
		return fail("argument is %d bytes, over the limit of %d; put the values in a values file", len(arg), maxSetArg)
	}
	p := &setParser{kind: kind, s: setValidUTF8(arg), readFile: readFile}
	all, err := p.assignments()
	if err != nil {
		return err
	}
	w := &setWriter{flag: kind.Flag(), owned: map[*any]bool{}}
	for i := range all {
		if err := w.intoMap(dest, &all[i], 0); err != nil {
			return err
		}
	}
	return nil
}

// ParseSet is ApplySet onto a new empty map.
func ParseSet(kind SetKind, arg string, readFile ReadFileFunc) (map[string]any, error) {
	m := map[string]any{}
	if err := ApplySet(m, kind, arg, readFile); err != nil {
		return nil, err
	}
	return m, nil
}

// setError names the flag and the assignment at fault.
type setError struct {
	flag, assignment, msg string
	cause                 error
}

func (e *setError) Error() string {
	a := e.assignment
	if len(a) > 100 {
		n := 97
		for n > 0 && !utf8.RuneStart(a[n]) {
			n--
		}
		a = a[:n] + "..."
	}
	return fmt.Sprintf("%s %q: %s", e.flag, a, e.msg)
}

func (e *setError) Unwrap() []error {
	if e.cause == nil {
		return []error{ErrBadSet}
	}
	return []error{ErrBadSet, e.cause}
}

// setValidUTF8 replaces every byte that is not part of valid UTF-8 with
// U+FFFD, which is what Helm's rune-by-rune reading does.
func setValidUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(r)
	}
	return b.String()
}

// A setAssignment is one parsed `path=value`.
//
// When the argument ends inside a path, Helm stops quietly after creating
// the containers on the way: the assignment has ended, and its last step sets
// nothing (noValue). A final key (`a.` or `a.b[`) is not even looked up, a
// final index (`a[0]` or `a[0][`) leaves the list as it is. Helm also ends
// after `key=` at the end of the argument, though it does set the "".
// Above the step where it ended, Helm checks and sets less: an empty map is
// no error (`a.=`) and a map is not put into a list (`a[0].b=`).
type setAssignment struct {
	path    document.Path
	value   any
	ended   bool
	noValue bool
	text    string // the assignment as written, for errors
}

// setParser reads a flag argument into assignments.
type setParser struct {
	kind     SetKind
	s        string
	pos      int
	start    int // where the current assignment begins
	readFile ReadFileFunc
}

func (p *setParser) assignments() ([]setAssignment, error) {
	var all []setAssignment
	for {
		a, err := p.assignment()
		if err != nil {
			return nil, err
		}
		all = append(all, a)
		if a.ended {
			return all, nil
		}
	}
}

// assignment reads `key(.key|[index])*=value`.
func (p *setParser) assignment() (setAssignment, error) {
	p.start = p.pos
	var a setAssignment
	keyStops := ".[=,"
	if p.kind == SetLiteral {
		keyStops = ".[="
	}
	dots := 0
	for {
		key, stop := p.until(keyStops)
		switch stop {
		case 0:
			if key != "" {
				return a, p.errorf(p.pos, "key %q has no value; write %s=VALUE", key, a.path.Append(document.Key(key)))
			}
			return p.partial(a, true), nil
		case ',':
			if key == "" {
				return a, p.errorf(p.pos, "empty assignment; remove the extra comma")
			}
			return a, p.errorf(p.pos-1, "key %q has no value; write %s=VALUE", key, a.path.Append(document.Key(key)))
		case '=':
			a.path = append(a.path, document.Key(key))
			return p.finish(a)
		case '.':
			if dots++; dots > maxSetNesting {
				return a, p.errorf(p.end(), "more than %d nested keys; use --set-json or a values file", maxSetNesting)
			}
			a.path = append(a.path, document.Key(key))
		case '[':
			i, ok, err := p.index()
			switch {
			case err != nil:
				return a, err
			case !ok:
				return p.partial(a, true), nil
			}
			a.path = append(a.path, document.Key(key), document.Index(i))
			var done bool
			if a, done, err = p.afterIndex(a); done || err != nil {
				return a, err
			}
		}
		if len(a.path) > maxSetDepth {
			return a, p.errorf(p.end(), "path is more than %d steps deep", maxSetDepth)
		}
	}
}

// afterIndex reads what follows `]`: more indices, then =value, a dot (done
// is false: a key follows) or the end of the argument.
func (p *setParser) afterIndex(a setAssignment) (_ setAssignment, done bool, _ error) {
	for {
		if len(a.path) > maxSetDepth {
			return a, true, p.errorf(p.end(), "path is more than %d steps deep", maxSetDepth)
		}
		junk, stop := p.until(".[=")
		switch {
		case junk != "":
			return a, true, p.errorf(p.end(), "unexpected %q after a list index; expected =, . or [", junk)
		case stop == 0:
			return p.partial(a, false), true, nil
		case stop == '=':
			a, err := p.finish(a)
			return a, true, err
		case stop == '.':
			return a, false, nil
		}
		i, ok, err := p.index()
		switch {
		case err != nil:
			return a, true, err
		case !ok:
			return p.partial(a, false), true, nil
		}
		a.path = append(a.path, document.Index(i))
	}
}

// partial marks a as ended without a value; atKey says it ended where a key
// was expected.
func (p *setParser) partial(a setAssignment, atKey bool) setAssignment {
	if atKey {
		a.path = append(a.path, document.Key(""))
	}
	a.ended, a.noValue = true, true
	a.text = p.s[p.start:]
	return a
}

// index reads `digits]` after a `[`; ok is false if the argument ends first.
func (p *setParser) index() (i int, ok bool, err error) {
	text, stop := p.until("]")
	if stop == 0 {
		return 0, false, nil
	}
	i, err = strconv.Atoi(text)
	switch {
	case errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(text, "-"):
		return 0, false, p.errorf(p.end(), "list index %s exceeds the limit of %d", text, document.MaxIndex)
	case err != nil || i < 0:
		return 0, false, p.errorf(p.end(), "list index %q is not a non-negative integer", text)
	}
	return i, true, nil
}

// until reads up to the first unescaped byte of stops and consumes it. It
// returns the text before it, unescaped, and the stop byte, 0 at the end of
// the argument. --set-literal has no escapes.
func (p *setParser) until(stops string) (string, byte) {
	var b strings.Builder
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		p.pos++
		if strings.IndexByte(stops, c) >= 0 {
			return b.String(), c
		}
		if c == '\\' && p.kind != SetLiteral {
			if p.pos == len(p.s) {
				break
			}
			c = p.s[p.pos]
			p.pos++
		}
		b.WriteByte(c)
	}
	return b.String(), 0
}

// end returns where the current assignment ends: at the next unescaped comma.
func (p *setParser) end() int {
	if p.kind == SetLiteral {
		return len(p.s)
	}
	for i := p.pos; i < len(p.s); i++ {
		switch p.s[i] {
		case '\\':
			i++
		case ',':
			return i
		}
	}
	return len(p.s)
}

func (p *setParser) errorf(end int, format string, args ...any) error {
	return p.wrap(end, nil, format, args...)
}

func (p *setParser) wrap(end int, cause error, format string, args ...any) error {
	end = max(min(end, len(p.s)), p.start)
	return &setError{flag: p.kind.Flag(), assignment: p.s[p.start:end], msg: fmt.Sprintf(format, args...), cause: cause}
}

// finish reads the value after `=`.
func (p *setParser) finish(a setAssignment) (setAssignment, error) {
	var end int
	var err error
	switch {
	case p.kind == SetLiteral:
		a.value, p.pos, end = p.s[p.pos:], len(p.s), len(p.s)
	case p.kind == SetJSON:
		a.value, end, err = p.jsonValue()
	case p.pos == len(p.s):
		a.value, end = "", p.pos // not even read as a file
		a.ended = !a.path[len(a.path)-1].IsIndex
	case p.s[p.pos] == '{':
		p.pos++
		a.value, end, err = p.listValue()
	default:
		text, stop := p.until(",")
		if end = p.pos; stop != 0 {
			end--
		}
		a.value, err = p.scalar(text, end)
	}
	if err != nil {
		return a, err
	}
	a.text = p.s[p.start:end]
	return a, nil
}

// listValue reads `a,b}` after a `{`, and a comma after it if there is one.
func (p *setParser) listValue() ([]any, int, error) {
	list := []any{}
	for {
		text, stop := p.until(",}")
		if stop == 0 {
			return nil, 0, p.errorf(p.pos, "list value has no closing }; write \\{ for a value starting with {")
		}
		v, err := p.scalar(text, p.end())
		if err != nil {
			return nil, 0, err
		}
		list = append(list, v)
		if stop == '}' {
			end := p.pos
			if p.pos < len(p.s) && p.s[p.pos] == ',' {
				p.pos++
			}
			return list, end, nil
		}
	}
}

// scalar reads one value of a --set, --set-string or --set-file assignment.
func (p *setParser) scalar(text string, end int) (any, error) {
	switch p.kind {
	case SetString:
		return text, nil
	case SetFile:
		b, err := p.readFile(text)
		if err != nil {
			return nil, p.wrap(end, err, "reading file %q: %v", text, err)
		}
		return string(b), nil
	}
	switch {
	case strings.EqualFold(text, "true"):
		return true, nil
	case strings.EqualFold(text, "false"):
		return false, nil
	case strings.EqualFold(text, "null"):
		return nil, nil
	case text == "0":
		return int64(0), nil
	case text != "" && text[0] != '0':
		if n, err := strconv.ParseInt(text, 10, 64); err == nil {
			return n, nil
		}
	}
	return text, nil
}

// jsonValue reads one JSON value; blank text reads as null. The text after
// it is skipped up to a comma, or up to anything else that is not space.
func (p *setParser) jsonValue() (any, int, error) {
	if end := p.pos; p.blank() {
		return nil, end, nil
	}
	dec := json.NewDecoder(strings.NewReader(p.s[p.pos:]))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, 0, p.wrap(p.end(), err, "value is not valid JSON (%v); quote strings, as in key=\"text\"", err)
	}
	p.pos += int(dec.InputOffset())
	end := p.pos
	p.blank()
	v, err := setJSONNumbers(v)
	if err != nil {
		return nil, 0, p.errorf(end, "%v", err)
	}
	return v, end, nil
}

// blank skips white space and then a comma; it reports whether that ended the value.
func (p *setParser) blank() bool {
	for p.pos < len(p.s) {
		r, size := utf8.DecodeRuneInString(p.s[p.pos:])
		switch {
		case r == ',':
			p.pos++
			return true
		case !unicode.IsSpace(r):
			return false
		}
		p.pos += size
	}
	return true
}

// setJSONNumbers replaces the json.Numbers in v: integers become int64, or
// stay json.Number when outside its range; other numbers become float64.
func setJSONNumbers(v any) (any, error) {
	var err error
	switch v := v.(type) {
	case json.Number:
		s := string(v)
		if !strings.ContainsAny(s, ".eE") {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				return n, nil
			}
			return v, nil
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("number %s is out of range", s)
		}
		return f, nil
	case map[string]any:
		for k, e := range v {
			if v[k], err = setJSONNumbers(e); err != nil {
				return nil, err
			}
		}
	case []any:
		for i, e := range v {
			if v[i], err = setJSONNumbers(e); err != nil {
				return nil, err
			}
		}
	}
	return v, nil
}

// setWriter applies assignments to a tree, copying any list before changing it
// unless this writer made the list itself.
type setWriter struct {
	flag  string
	owned map[*any]bool // first elements of the lists this writer made
	grown int           // list elements added so far
}

// intoMap applies a from its step n, a key in m.
func (w *setWriter) intoMap(m map[string]any, a *setAssignment, n int) error {
	k := a.path[n].Key
	if n == len(a.path)-1 {
		if !a.noValue && k != "" {
			m[k] = a.value
		}
		return nil
	}
	old, exists := m[k]
	if a.path[n+1].IsIndex {
		list := []any{}
		if exists {
			l, ok := old.([]any)
			if !ok {
				return w.errorf(a, "%s holds %s, not a list; replace it first, as in --set-json '%[1]s=[]'", a.path[:n+1], setDescribe(old))
			}
			list = l
		}
		list, err := w.intoList(list, a, n+1)
		if err != nil {
			return err
		}
		if k != "" {
			m[k] = list
		}
		return nil
	}
	inner := map[string]any{}
	if exists {
		mm, ok := old.(map[string]any)
		if !ok {
			return w.errorf(a, "%s holds %s, not a map; replace it first, as in --set-json '%[1]s={}'", a.path[:n+1], setDescribe(old))
		}
		if mm != nil {
			inner = mm
		}
	}
	if err := w.intoMap(inner, a, n+1); err != nil {
		return err
	}
	if len(inner) == 0 {
		if a.ended {
			return nil
		}
		return w.errorf(a, "the key after %s. is empty, which sets nothing; write \\. for a dot inside a key", a.path[:n+1])
	}
	if k != "" {
		m[k] = inner
	}
	return nil
}

// intoList applies a from its step n, an index in list, and returns the list
// changed.
func (w *setWriter) intoList(list []any, a *setAssignment, n int) ([]any, error) {
	i := a.path[n].Index
	if n == len(a.path)-1 {
		if a.noValue {
			return list, nil
		}
		return w.setIndex(list, a, n, a.value)
	}
	if !a.path[n+1].IsIndex {
		// Helm turns an element that is not a map into one, even before it
		// knows the rest of the assignment.
		inner := map[string]any{}
		if i < len(list) {
			mm, ok := list[i].(map[string]any)
			switch {
			case !ok:
				list = w.writable(list, i+1)
				list[i] = inner
			case mm != nil:
				inner = mm
			}
		}
		if err := w.intoMap(inner, a, n+1); err != nil || a.ended {
			return list, err
		}
		return w.setIndex(list, a, n, inner)
	}
	var sub []any
	if i < len(list) && list[i] != nil {
		l, ok := list[i].([]any)
		if !ok {
			return list, w.errorf(a, "%s holds %s, not a list", a.path[:n+1], setDescribe(list[i]))
		}
		sub = l
	}
	sub, err := w.intoList(sub, a, n+1)
	switch {
	case err != nil:
		return list, err
	case a.ended:
		// Helm would have changed an existing inner list in place.
		if i < len(list) && sub != nil {
			list = w.writable(list, i+1)
			list[i] = sub
		}
		return list, nil
	}
	return w.setIndex(list, a, n, sub)
}

// setIndex sets element a.path[n].Index of list to v, growing the list with nils.
func (w *setWriter) setIndex(list []any, a *setAssignment, n int, v any) ([]any, error) {
	i := a.path[n].Index
	if i > document.MaxIndex {
		return list, w.errorf(a, "list index %d exceeds the limit of %d", i, document.MaxIndex)
	}
	if i >= len(list) {
		if w.grown += i + 1 - len(list); w.grown > maxSetGrowth {
			return list, w.errorf(a, "the argument adds more than %d list elements", maxSetGrowth)
		}
	}
	list = w.writable(list, i+1)
	list[i] = v
	return list, nil
}

// writable returns list, or a copy of it this writer owns, grown with nils
// to at least n >= 1 elements.
func (w *setWriter) writable(list []any, n int) []any {
	n = max(n, len(list))
	if len(list) == 0 || !w.owned[&list[0]] {
		c := make([]any, n)
		copy(c, list)
		w.owned[&c[0]] = true
		return c
	}
	if n > len(list) {
		old := &list[0]
		list = append(list, make([]any, n-len(list))...)
		delete(w.owned, old)
		w.owned[&list[0]] = true
	}
	return list
}

func (w *setWriter) errorf(a *setAssignment, format string, args ...any) error {
	return &setError{flag: w.flag, assignment: a.text, msg: fmt.Sprintf(format, args...)}
}

func setDescribe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		if len(v) > 40 {
			return "a string"
		}
		return fmt.Sprintf("the string %q", v)
	case bool, int64, float64, json.Number:
		return fmt.Sprintf("the value %v", v)
	case map[string]any:
		return "a map"
	case []any:
		return "a list"
	}
	return fmt.Sprintf("a %T", v)
}
