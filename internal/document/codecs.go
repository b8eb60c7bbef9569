package document

// Codecs is the one reference switch of the document layer's fast codecs:
// DecodeJSONFast, YAMLWriter and Decode's direct fill (process-wide, see
// SetDecodeCodecs) here, yamljson (YAML read as
// sigs.k8s.io/yaml reads it) below, and what is built on them
// (manifest.Encoder, helmrender's reading of values and rendered
// documents). Each fast codec gives what its reference gives, or leaves
// the input to the reference; its differential test and fuzzer hold it to
// that. ReferenceCodecs rules the fast codecs out, for when a result looks
// wrong: the output must not change, only its speed. The zero value is
// FastCodecs.
type Codecs uint8

const (
	// FastCodecs reads and writes with the fast codecs, each falling back
	// to its reference for what it is not sure to reproduce.
	FastCodecs Codecs = iota
	// ReferenceCodecs reads and writes with the reference functions only
	// (encoding/json, Loader and Encode, sigs.k8s.io/yaml and Helm's own).
	ReferenceCodecs
)

// Fast reports whether the fast codecs may run.
func (c Codecs) Fast() bool { return c != ReferenceCodecs }

// String returns "fast" or "reference".
func (c Codecs) String() string {
	if c.Fast() {
		return "fast"
	}
	return "reference"
}
