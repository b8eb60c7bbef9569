package params

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/strata-dev/strata/internal/document"
)

// ItemType is the type of each value of a parameter: of its string, of
// every item of its array, of every value of its map. Values are always
// strings; the item type says how to read them.
type ItemType string

// The item types.
const (
	ItemString  ItemType = "string"
	ItemNumber  ItemType = "number"  // a JSON number: -1, 0.5, 2e3
	ItemBoolean ItemType = "boolean" // true or false
)

// CollectionType says which field of a parameter holds its value.
type CollectionType string

// The collection types.
const (
	CollectionString CollectionType = "string" // Parameter.String
	CollectionArray  CollectionType = "array"  // Parameter.Array
	CollectionMap    CollectionType = "map"    // Parameter.Map
)

// An Announcement tells Argo CD (and its UI) about one parameter a plugin
// accepts. Its JSON form is Argo CD's ParameterAnnouncement.
//
// After ParseAnnouncements or DecodeAnnouncements, Name is not empty,
// ItemType and CollectionType are set to one of their constants, only the
// value field of CollectionType may be set, and every default value fits
// ItemType.
type Announcement struct {
	Name     string `json:"name,omitempty"`
	Title    string `json:"title,omitempty"`   // shown instead of the name
	Tooltip  string `json:"tooltip,omitempty"` // a description
	Required bool   `json:"required,omitempty"`

	ItemType       ItemType       `json:"itemType,omitempty"`
	CollectionType CollectionType `json:"collectionType,omitempty"`

	// The default value, in the field named by CollectionType.
	String string            `json:"string,omitempty"`
	Array  []string          `json:"array,omitempty"`
	Map    map[string]string `json:"map,omitempty"`
}

// A Parameter is one value set in an Application's
// spec.source.plugin.parameters, as ARGOCD_APP_PARAMETERS passes it:
// {"name": ..., "string": ..., "array": [...], "map": {...}}.
//
// A nil field is not set; an empty non-nil Array or Map is set to an empty
// collection, and encodes as [] or {} (as in Argo CD). Users may set more
// than one field; all of them are passed on to the plugin, which picks the
// one its announcement names.
type Parameter struct {
	Name   string
	String *string
	Array  []string
	Map    map[string]string
}

// Limits on what ParseAnnouncements, DecodeAnnouncements and ParseParameters
// accept.
const (
	// MaxEntries bounds the number of announcements or parameters in one list.
	MaxEntries = 1000
	// MaxItems bounds the items of one array and the entries of one map.
	MaxItems = 10000
	// MaxNameBytes bounds the length of a parameter's name.
	MaxNameBytes = 1024
	// MaxBytes bounds the size of an encoded list, and separately the
	// total length of all the strings decoded from it (which YAML aliases
	// could otherwise multiply).
	MaxBytes = 1 << 20
	// maxDepth bounds the nesting of a JSON document; a valid list is
	// three levels deep.
	maxDepth = 32
)

// Errors, for errors.Is.
var (
	// ErrInvalid is wrapped by every *Error that is not about a limit:
	// a missing name, an unknown field, a value of the wrong type.
	ErrInvalid = errors.New("invalid parameter")
	// ErrTooLarge is wrapped by errors about the limits above. It is
	// document.ErrTooLarge, so a document over the size limit, reported by
	// the values loader, matches too.
	ErrTooLarge = document.ErrTooLarge
)

// Where in a list a problem is.
type place struct {
	source string
	line   int
	kind   string // "announcement" or "parameter"
	index  int    // -1: the list as a whole
	name   string
	field  string
}

func (p place) format(b *strings.Builder) {
	if p.source != "" {
		b.WriteString(p.source)
		if p.line > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(p.line))
		}
		b.WriteString(": ")
	}
	if p.index >= 0 {
		fmt.Fprintf(b, "%s [%d]", p.kind, p.index)
		if p.name != "" {
			fmt.Fprintf(b, " %q", p.name)
		}
		b.WriteString(": ")
	} else if p.name != "" {
		fmt.Fprintf(b, "%s %q: ", p.kind, p.name)
	}
	if p.field != "" {
		b.WriteString(p.field)
		b.WriteString(": ")
	}
}

// An Error is a problem with one entry of a list of announcements or
// parameters, or with the list as a whole. Problems with the document
// itself (not JSON or YAML, a duplicate key, invalid UTF-8, too large or
// too deep) are *document.LoadError instead.
type Error struct {
	Source string // where the list came from, e.g. "plugin.yaml" or "ARGOCD_APP_PARAMETERS"; may be ""
	Line   int    // 1-based line in Source; 0 when unknown
	Kind   string // "announcement" or "parameter"
	Index  int    // 0-based index of the entry; -1 for the list as a whole
	Name   string // the entry's name, when it has one
	Field  string // the field, e.g. "collectionType", "array[2]", `map["image.tag"]`; "" for the entry
	Msg    string // what is wrong and what to do
	Err    error  // ErrInvalid or ErrTooLarge
}

func (e *Error) Error() string {
	var b strings.Builder
	e.place().format(&b)
	b.WriteString(e.Msg)
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

func (e *Error) place() place {
	return place{source: e.Source, line: e.Line, kind: e.Kind, index: e.Index, name: e.Name, field: e.Field}
}

// A Warning is a problem that was repaired: an ignored field, an entry
// dropped for its duplicate name, a parameter nobody announced.
type Warning struct {
	Source string
	Line   int
	Kind   string // "announcement" or "parameter"
	Index  int    // 0-based index of the entry; -1 when it names no entry
	Name   string
	Field  string
	Msg    string
}

func (w Warning) String() string {
	var b strings.Builder
	place{source: w.Source, line: w.Line, kind: w.Kind, index: w.Index, name: w.Name, field: w.Field}.format(&b)
	b.WriteString(w.Msg)
	return b.String()
}
