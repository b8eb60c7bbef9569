// Package params is the parameter model of Argo CD config management
// plugins (CMPs), as the "Parameterized Config Management Plugins"
// proposal defines it: what a plugin announces, what an Application sets,
// how both are checked, and how parameters reach the plugin's commands.
//
// A plugin announces the parameters it accepts (Announcement): statically
// in plugin.yaml (spec.parameters.static, see DecodeAnnouncements) and
// dynamically from a command's output (ParseAnnouncements). Combine merges
// the two lists. Decoding validates and normalises each announcement the
// way the proposal promises and Argo CD does not: a name is required,
// itemType and collectionType default to string and must be known, fields
// of the other collection types are dropped with a warning, and a default
// value must fit its itemType.
//
// An Application sets parameters (Parameter); they reach the plugin as the
// JSON of ARGOCD_APP_PARAMETERS (ParseParameters reads it) and as PARAM_*
// variables (Env writes both, Escape names them). Check compares set
// parameters with the announcements: the proposal has the user's values
// passed on whatever their shape, so a mismatch is a warning, while a
// value that does not fit its itemType is an error.
//
// All input is untrusted. Decoding is strict (unknown fields, duplicate
// keys and values of the wrong type are errors) and bounded (MaxEntries,
// MaxItems, MaxNameBytes, MaxBytes). Errors name the source, the entry's
// index and name, the field and the line, and say what to do: a
// *document.LoadError for the document, an *Error for an entry. Warnings
// report what was repaired. Each entry is decoded with document.Decode
// into a shape whose field types hold the rules for their values
// (decode.go), then checked as a whole.
//
// JSON input is read by a JSON decoder, not as YAML: YAML rejects valid
// JSON such as surrogate-pair escapes, which Python's json module writes.
package params
