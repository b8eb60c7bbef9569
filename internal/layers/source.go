package layers

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/layers/v1alpha1"
)

// ErrNotFound is wrapped by a Source's errors for an object that does not
// exist.
var ErrNotFound = errors.New("not found")

// A Source fetches the objects an App's values come from. Errors for an
// object that does not exist wrap ErrNotFound. Implementations must not
// return objects shared with other callers that they may modify later.
type Source interface {
	ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
	Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
	Catalog(ctx context.Context, namespace, name string) (*v1alpha1.Catalog, error)
}

// A Locator is a Source that knows where its objects were written, for
// error messages and explanations with file and line.
type Locator interface {
	Locate(kind, namespace, name string) *Location
}

// Location is where an object was read from.
type Location struct {
	File string
	// Pos holds the positions of the object's fields; Pos.Line is the
	// line the object starts on.
	Pos *document.Pos
	// Blocks maps a data key ("data.values", "stringData.secrets") to the
	// line before its content, when the value is a literal block scalar
	// (`values: |`) whose lines map one to one to the file's; and its
	// indentation.
	Blocks map[string]Block
}

// Block is where a literal block scalar's content sits in its file.
type Block struct {
	Line   int // the line of the key: content line n is file line Line+n
	Indent int // columns of indentation stripped from each content line
}

// Line returns the line of the field at path, or of the object when the
// field has no position; 0 when unknown.
func (l *Location) Line(path document.Path) int {
	if l == nil || l.Pos == nil {
		return 0
	}
	for ; ; path = path[:len(path)-1] {
		if p := l.Pos.Lookup(path); p != nil && p.Line > 0 {
			return p.Line
		}
		if len(path) == 0 {
			return 0
		}
	}
}

// where writes "file:line" for the field at path, or "" when unknown.
func (l *Location) where(path document.Path) string {
	if l == nil || l.File == "" {
		return ""
	}
	if n := l.Line(path); n > 0 {
		return l.File + ":" + itoa(n)
	}
	return l.File
}
