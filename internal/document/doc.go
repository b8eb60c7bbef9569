// Package document is strata's YAML and JSON document layer, the lowest of
// its packages: every file, stream and flag value a user writes is read here.
//
// A tree is what Helm calls values: map[string]any whose leaves are nil,
// bool, int64, float64, string, json.Number (integers outside the int64
// range, kept exact) and []any; nested maps are map[string]any. A Path
// addresses a node of a tree and a Pos records where each node was written.
//
// A Loader parses YAML and JSON into trees with strict checks (duplicate
// keys, invalid UTF-8, non-map documents) within Limits (size, depth, nodes
// after alias expansion); errors are *LoadErrors with the source, line and
// column, wrapping one of the Err* sentinels. Decode fills structs from a
// tree strictly, unknown fields being errors with their line (wrapping an
// *UnknownFieldError: the key, the struct's names, the one Closest to the
// key; a struct type that is an UnknownFielder words its own message); a
// field type that is a Checker says in its own words what its values must
// be. Decode fills the target from the tree itself where it holds what
// encoding/json would make of the tree's JSON, and goes through
// encoding/json for everything else and for every error, its reference;
// FuzzDecodeDirect holds the two to each other. Encode
// writes trees as YAML or JSON, keys sorted and integers exact.
//
// Fast codecs serve the plugins' output and Helm's YAML, each held to its
// reference by a differential test and a fuzzer: DecodeJSONFast reads JSON
// as encoding/json does, YAMLWriter writes a map as Encode does, and the
// subpackage yamljson reads YAML as sigs.k8s.io/yaml (and so Helm) reads it.
// Codecs is their one reference switch: its value flows from the command
// line (--fast-codecs) to every user of a fast codec (manifest.Encoder,
// helmrender, helmplugin), and ReferenceCodecs rules them all out.
//
// ReadFile and ReadAll are the one bounded read of a file or stream: an
// input over its limit is an error naming it and the limit (ErrTooLarge),
// never a silently truncated document.
//
// Paths are written the way Helm's --set writes them: keys separated by
// dots, list indices in brackets, and a backslash escaping any of
// `\ . [ = ,` inside a key: `image.tag`, `ports[0].port`, `a\.b`.
package document
