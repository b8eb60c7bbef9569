package schema

import (
	"cmp"
	"path"
	"time"

	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/strata-dev/strata/internal/values"
)

// Limits on schema input. A schema over a limit is a ParseError.
const (
	MaxSchemaSize  = 16 << 20 // bytes in one schema file
	MaxDepth       = 64       // nesting of schemas and YAML values
	MaxNodes       = 100_000  // schema nodes once $refs are expanded
	MaxRefDepth    = 32       // definitions whose expansion is in progress at once
	MaxExtendDepth = 8        // files in an x-extend chain beyond the first
	maxYAMLNodes   = 500_000
)

// Options change how a schema is read. The zero value is plain OpenAPI v3.
type Options struct {
	// AdditionalPropertiesFalse treats an unset additionalProperties as
	// false on object schemas: of type object, or declaring properties or
	// patternProperties (addon-operator's rule, which makes `type: object`
	// without properties accept only an empty object; use
	// additionalProperties: true or x-kubernetes-preserve-unknown-fields:
	// true for free-form maps). It reaches as far as addon-operator's does:
	// the root; each property that leaves additionalProperties unset, and
	// below it; items, and below them. Not below a property that sets
	// additionalProperties, nor into patternProperties, an
	// additionalProperties schema, or the branches of allOf, anyOf, oneOf
	// and not.
	AdditionalPropertiesFalse bool

	// Resolve loads the files x-extend and $refs to other files name.
	// Without it such a schema fails to parse. See DirResolver.
	Resolve Resolver

	// Path is the slash-separated path of the parsed file below Resolve's
	// root. x-extend and $ref names are relative to the directory of the
	// file holding them, as JSON references are; empty is a file at the
	// root.
	Path string

	// UncheckedDefaults skips the check that every default matches its own
	// schema. addon-operator loads such schemas (a default that breaks its
	// schema fails only the values it is applied to), so the operator
	// reads modules' schemas this way; everything else keeps the check.
	UncheckedDefaults bool

	// AddonDefaults makes ApplyDefaults addon-operator's: a default goes
	// only into an absent property (a null stays null), and defaulting
	// follows properties and items only, not patternProperties or an
	// additionalProperties schema (the values of a map get no defaults).
	// Without it defaulting is Kubernetes' for CRDs.
	AddonDefaults bool

	// RulesCost and RulesTimeout bound the evaluation of the
	// x-deckhouse-validations rules of one validation: their total cost
	// in cel-go's units, and wall-clock time. Zero is MaxRulesCost and
	// MaxRulesTime.
	RulesCost    uint64
	RulesTimeout time.Duration
}

// A Schema validates and defaults value trees. It is immutable and safe
// for concurrent use.
type Schema struct {
	source    string
	plain     *spec.Schema // for Validate
	helm      *spec.Schema // for ValidateForHelm: x-required-for-helm merged into required
	defaulter *defaulter   // nil when the schema has no defaults
	rules     *ruleNode    // x-deckhouse-validations; nil when there are none
	ruleLim   ruleLimits
}

// Parse reads a schema from YAML or JSON. source names the data in error
// messages (normally its file name). Errors are *ParseError.
//
// Parsing resolves x-extend, expands $refs, applies
// Options.AdditionalPropertiesFalse, and checks that every default matches
// its own schema (unless Options.UncheckedDefaults).
func Parse(data []byte, source string, opts Options) (*Schema, error) {
	chain := &loadChain{resolve: opts.Resolve}
	name := path.Clean(opts.Path)
	if opts.Path == "" {
		name = ""
	}
	doc, err := chain.load(data, source, name)
	if err != nil {
		return nil, err
	}
	if err := expandRefs(doc, name, opts.Resolve); err != nil {
		return nil, err
	}
	if opts.AdditionalPropertiesFalse {
		closeObjects(doc.root)
	}
	if !opts.UncheckedDefaults {
		if err := checkDefaults(doc, doc.root, nil); err != nil {
			return nil, err
		}
	}
	s := &Schema{source: source, defaulter: buildDefaulter(doc.root, opts.AddonDefaults)}
	if s.rules, err = buildRules(doc, doc.root, nil); err != nil {
		return nil, err
	}
	s.ruleLim = ruleLimits{cost: cmp.Or(opts.RulesCost, MaxRulesCost), timeout: cmp.Or(opts.RulesTimeout, MaxRulesTime)}
	if s.plain, err = buildSpec(doc.root, false); err != nil {
		return nil, &ParseError{Source: source, Err: err}
	}
	s.helm = s.plain
	if hasHelmRequired(doc.root) {
		if s.helm, err = buildSpec(doc.root, true); err != nil {
			return nil, &ParseError{Source: source, Err: err}
		}
	}
	return s, nil
}

// Source returns the source name the schema was parsed with.
func (s *Schema) Source() string { return s.source }

// Validate checks a value tree against the schema, ignoring
// x-required-for-helm. It returns nil or a *ValidationError listing every
// problem. A nil tree is an empty one.
//
// The x-deckhouse-validations rules are evaluated too, each failing rule
// reported with its message at the path of the schema holding it (rule
// "x-deckhouse-validations"); rules that use oldSelf are skipped (see
// ValidateUpdate).
func (s *Schema) Validate(tree map[string]any) error {
	return s.validate(s.plain, tree, nil)
}

// ValidateUpdate is Validate for a tree replacing old: the
// x-deckhouse-validations rules that use oldSelf (transition rules) are
// evaluated where old has a value at the rule's level, as addon-operator
// evaluates them. A nil old is Validate.
func (s *Schema) ValidateUpdate(tree, old map[string]any) error {
	return s.validate(s.plain, tree, old)
}

// ValidateForHelm is Validate with the x-required-for-helm lists of the
// root and of the schemas down properties merged into required at their
// level (addon-operator's reach): the check for values about to be
// rendered.
func (s *Schema) ValidateForHelm(tree map[string]any) error {
	return s.validate(s.helm, tree, nil)
}

func (s *Schema) validate(sp *spec.Schema, tree, old map[string]any) error {
	var v any = tree
	if tree == nil {
		v = map[string]any{}
	}
	var ruleErrs []fieldError
	if s.rules != nil {
		ruleErrs = checkRules(s.rules, s.ruleLim, v, old, old != nil)
	}
	if errs := validateValue(sp, v, ruleErrs...); len(errs) > 0 {
		return &ValidationError{Source: s.source, Errors: errs}
	}
	return nil
}

// ApplyDefaults returns a deep copy of tree with the schema's defaults
// applied; tree itself is not modified. A nil tree is an empty one.
//
// Defaulting follows Kubernetes' structural defaulting for CRDs (or, with
// Options.AddonDefaults, addon-operator's narrower rule): a
// property that is absent from an object that exists gets its default
// (an absent object is not created unless it has a default itself); a
// null property, additional property or list item gets its default unless
// its schema is nullable; defaults are deep-copied and defaulted in turn.
// Defaulting follows properties, patternProperties, additionalProperties
// (when a schema) and items, not allOf, anyOf, oneOf or not. A default of
// null is no default. Defaults never replace a value of the wrong type.
func (s *Schema) ApplyDefaults(tree map[string]any) map[string]any {
	out, _ := values.DeepCopy(tree).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	s.defaulter.apply(out)
	return out
}
