// Package values is strata's value tree engine: the merge every capability
// builds its result on. Trees, paths, positions and the reading and writing
// of YAML and JSON are package document's; this package works on its trees.
//
// It merges an ordered stack of layers with Helm's semantics (docs/values.md
// says where strata and Helm differ) while recording provenance for every
// leaf, explains which layer set a value and what it overrode, applies
// RFC 6902 JSON patches and RFC 7386 merge patches, applies Helm --set style
// assignments, and flattens trees to dotted keys and back. Inputs loads the
// value sources of a command line (values files, standard input, --set
// flags, patches) into layers.
package values
