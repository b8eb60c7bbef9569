package manifest

import (
	"bytes"
	"encoding/json"

	"github.com/strata-dev/strata/internal/document"
)

// What reading a stream costs, in bytes of memory, measured on the live
// heap while Each turns a document into JSON (see EstimateMemory). The
// figures carry a margin over what was measured: a YAML map of 1M small
// values cost 500 bytes a value, a YAML list 210 bytes an item, a JSON
// list 8.5 bytes per byte of the stream, output included.
const (
	// YAMLNodeCost is the memory one node of a YAML document costs while
	// it is parsed: the YAML library's node, strata's tree, and the map
	// key's node and string.
	YAMLNodeCost = 512
	// JSONByteCost is the memory one byte of a JSON stream costs while it
	// is parsed, the JSON it is turned into included.
	JSONByteCost = 16
	// heldByteCost is what each byte of the stream costs besides parsing:
	// the stream itself, the manifests' JSON (at most about as large as
	// the stream, bar YAML aliases), and the message that sends it.
	heldByteCost = 3
)

// EstimateMemory returns an upper bound of the memory reading stream with
// Each, and keeping the JSON of its manifests, costs, without parsing it:
// the nodes of its largest YAML document (document.CountNodes, on the
// text) times YAMLNodeCost, or, for a JSON stream, its size times
// JSONByteCost; and the stream's size times a few, for the stream itself
// and the JSON made of it. YAML aliases are counted once, as written
// (their expansion is bounded by the loader's alias limits).
func EstimateMemory(stream []byte) int64 {
	size := int64(len(stream))
	text := bytes.TrimLeft(bytes.TrimPrefix(stream, []byte("\ufeff")), " \t\r\n")
	if len(text) > 0 && (text[0] == '{' || text[0] == '[') && jsonStream(stream) {
		return size*JSONByteCost + size*heldByteCost
	}
	largest := 0
	pieces, err := Split(stream, "", Limits{MaxBytes: max(size, 1)})
	if err != nil {
		// Past the documents' limit: reading stops there, at the latest.
		pieces = []Piece{{Data: stream}}
	}
	for _, p := range pieces {
		largest = max(largest, documentNodes(p.Data))
	}
	return int64(largest)*YAMLNodeCost + size*heldByteCost
}

// documentNodes bounds the nodes of one document's text.
func documentNodes(data []byte) int { return document.CountNodes(data) }

// jsonStream reports whether stream is one JSON value or several, as Each
// reads it.
func jsonStream(stream []byte) bool {
	if json.Valid(stream) {
		return true
	}
	_, err := SplitJSON(stream, "", Limits{MaxBytes: int64(len(stream)) + 1})
	return err == nil
}
