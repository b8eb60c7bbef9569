// Package values is strata's value tree: the engine every capability builds
// its result on.
//
// A tree is what Helm calls values: map[string]any whose leaves are nil,
// bool, int64, float64, string, json.Number (integers outside the int64
// range, kept exact) and []any; nested maps are map[string]any.
//
// The package loads YAML and JSON documents into trees with strict checks
// (duplicate keys, invalid UTF-8, non-map documents, size and depth limits),
// merges an ordered stack of layers with Helm's semantics while recording
// provenance for every leaf, applies RFC 6902 JSON patches and RFC 7386 merge
// patches, applies Helm --set style assignments, and flattens trees to dotted
// keys and back.
//
// Paths are written the way Helm's --set writes them: keys separated by
// dots, list indices in brackets, and a backslash escaping any of
// `\ . [ = ,` inside a key: `image.tag`, `ports[0].port`, `a\.b`.
package values
