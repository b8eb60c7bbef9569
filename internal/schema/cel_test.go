package schema_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/strata-dev/strata/internal/schema"
)

// TestRules: x-deckhouse-validations evaluated as addon-operator evaluates
// them (its own cases: self at each level down properties, messages as
// written, missing keys pass, oldSelf only where an old value exists).
func TestRules(t *testing.T) {
	for _, tc := range []struct {
		name   string
		schema string
		values string
		old    string // "" is no old values
		want   []string
	}{
		{
			name:   "no rules",
			schema: "type: object\nproperties:\n  foo: {type: string}\n",
			values: "foo: bar\n",
		},
		{
			name:   "plain rule passes",
			schema: "type: object\nproperties:\n  replicas: {type: integer}\nx-deckhouse-validations:\n- expression: self.replicas >= 1\n  message: replicas must be >= 1\n",
			values: "replicas: 3\n",
		},
		{
			name:   "plain rule fails",
			schema: "type: object\nproperties:\n  replicas: {type: integer}\nx-deckhouse-validations:\n- expression: self.replicas >= 1\n  message: replicas must be >= 1\n",
			values: "replicas: 0\n",
			want:   []string{"(root): replicas must be >= 1"},
		},
		{
			name:   "array length, self the object",
			schema: "type: object\nproperties:\n  arr: {type: array, items: {type: integer}}\nx-deckhouse-validations:\n- {expression: 'self.arr.size() < 1', message: arr must be greater than 1}\n",
			values: "arr: [1]\n",
			want:   []string{"(root): arr must be greater than 1"},
		},
		{
			name:   "array length, self the array",
			schema: "type: object\nproperties:\n  arr:\n    type: array\n    items: {type: integer}\n    x-deckhouse-validations:\n    - {expression: 'self.size() < 1', message: arr must be greater than 1}\n",
			values: "arr: [1]\n",
			want:   []string{"arr: arr must be greater than 1"},
		},
		{
			name:   "self a scalar",
			schema: "type: object\nproperties:\n  replicas:\n    type: integer\n    x-deckhouse-validations:\n    - {expression: 'self < 1', message: replicas must be greater than 1}\n",
			values: "replicas: 1\n",
			want:   []string{"replicas: replicas must be greater than 1"},
		},
		{
			name:   "a missing key passes the rule reading it",
			schema: "type: object\nproperties:\n  replicas: {type: integer}\nx-deckhouse-validations:\n- {expression: \"self.ignoredField == 'Ignored'\", message: ignore not existing field}\n- {expression: 'self.replicas < 1', message: replicas must be greater than 1}\n",
			values: "replicas: 1\n",
			want:   []string{"(root): replicas must be greater than 1"},
		},
		{
			name:   "nested properties, numbers compared across types",
			schema: "type: object\nproperties:\n  a:\n    type: object\n    properties:\n      b: {type: string}\n      c: {type: number}\n    x-deckhouse-validations:\n    - {expression: 'self.b == \"abc\"', message: Not equal to abc}\n    - {expression: 'self.c == 123', message: Not equal to 123}\n",
			values: "a: {b: abd, c: 122}\n",
			want:   []string{"a: Not equal to 123", "a: Not equal to abc"},
		},
		{
			name:   "same names at several levels",
			schema: "type: object\nproperties:\n  a:\n    type: object\n    properties:\n      a: {type: string}\n      c:\n        type: object\n        properties: {a: {type: number}}\n        x-deckhouse-validations: [{expression: 'self.a == 25', message: Not equal to 25}]\n    x-deckhouse-validations: [{expression: 'self.a == \"abc\"', message: Not equal to abc}]\n",
			values: "a: {a: ab, c: {a: 21}}\n",
			want:   []string{"a: Not equal to abc", "a.c: Not equal to 25"},
		},
		{
			name:   "map values",
			schema: "type: object\nproperties:\n  mymap:\n    type: object\n    additionalProperties: {type: integer}\n    x-deckhouse-validations: [{expression: 'self.all(key, self[key] > 0)', message: all map values must be greater than 0}]\n",
			values: "mymap: {foo: 1, bar: 0}\n",
			want:   []string{"mymap: all map values must be greater than 0"},
		},
		{
			name:   "numbers are doubles, as in addon-operator",
			schema: "type: object\nproperties:\n  n: {type: integer}\nx-deckhouse-validations:\n- {expression: 'int(self.n) % 2 == 0', message: n must be even}\n- {expression: 'type(self.n) == double', message: n is not a double}\n",
			values: "n: 3\n",
			want:   []string{"(root): n must be even"},
		},
		{
			name:   "not down items",
			schema: "type: object\nproperties:\n  l:\n    type: array\n    items:\n      type: object\n      properties: {a: {type: integer}}\n      x-deckhouse-validations: [{expression: 'false', message: never evaluated}]\n",
			values: "l: [{a: 1}]\n",
		},
		{
			name:   "transition rule skipped without old values",
			schema: "type: object\nproperties:\n  clusterDomain: {type: string}\nx-deckhouse-validations:\n- {expression: self.clusterDomain == oldSelf.clusterDomain, message: clusterDomain is immutable}\n",
			values: "clusterDomain: cluster.local\n",
		},
		{
			name:   "transition rule, unchanged",
			schema: "type: object\nproperties:\n  clusterDomain: {type: string}\nx-deckhouse-validations:\n- {expression: self.clusterDomain == oldSelf.clusterDomain, message: clusterDomain is immutable}\n",
			values: "clusterDomain: cluster.local\n",
			old:    "clusterDomain: cluster.local\n",
		},
		{
			name:   "transition rule, changed",
			schema: "type: object\nproperties:\n  clusterDomain: {type: string}\nx-deckhouse-validations:\n- {expression: self.clusterDomain == oldSelf.clusterDomain, message: clusterDomain is immutable}\n",
			values: "clusterDomain: example.com\n",
			old:    "clusterDomain: cluster.local\n",
			want:   []string{"(root): clusterDomain is immutable"},
		},
		{
			name:   "nested transition rule",
			schema: "type: object\nproperties:\n  registry:\n    type: object\n    properties: {mode: {type: string}}\n    x-deckhouse-validations: [{expression: self.mode == oldSelf.mode, message: registry.mode is immutable}]\n",
			values: "registry: {mode: Direct}\n",
			old:    "registry: {mode: Proxy}\n",
			want:   []string{"registry: registry.mode is immutable"},
		},
		{
			name:   "nested transition rule skipped for a new subtree",
			schema: "type: object\nproperties:\n  registry:\n    type: object\n    properties: {mode: {type: string}}\n    x-deckhouse-validations: [{expression: self.mode == oldSelf.mode, message: registry.mode is immutable}]\n",
			values: "registry: {mode: Direct}\n",
			old:    "{}\n",
		},
		{
			name:   "plain and transition rules on update",
			schema: "type: object\nproperties:\n  replicas: {type: integer}\n  mode: {type: string}\nx-deckhouse-validations:\n- {expression: self.replicas >= 1, message: replicas must be >= 1}\n- {expression: self.mode == oldSelf.mode, message: mode is immutable}\n",
			values: "replicas: 0\nmode: Proxy\n",
			old:    "replicas: 5\nmode: Direct\n",
			want:   []string{"(root): mode is immutable", "(root): replicas must be >= 1"},
		},
		{
			name:   "oldSelf in a macro",
			schema: "type: object\nproperties:\n  items: {type: array, items: {type: string}}\nx-deckhouse-validations:\n- {expression: 'self.items.all(x, x in oldSelf.items)', message: items can only be appended to}\n",
			values: "items: [a, b, c]\n",
			old:    "items: [a, b]\n",
			want:   []string{"(root): items can only be appended to"},
		},
		{
			name:   "rules and schema errors together",
			schema: "type: object\nproperties:\n  min: {type: integer}\n  max: {type: integer}\nx-deckhouse-validations:\n- {expression: self.min <= self.max, message: min must not exceed max}\n",
			values: "min: 5\nmax: 1\nextra: x\n",
			want:   []string{"(root): min must not exceed max", "extra: property is not allowed"},
		},
		{
			name:   "a rule that is not boolean",
			schema: "type: object\nx-deckhouse-validations:\n- {expression: '1 + 1', message: m}\n",
			values: "{}\n",
			want:   []string{`(root): rule "1 + 1" should return a boolean, not int`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustParse(t, tc.schema, schema.Options{AdditionalPropertiesFalse: true})
			tree, err := yamlTree(tc.values)
			if err != nil {
				t.Fatal(err)
			}
			var old map[string]any
			if tc.old != "" {
				if old, err = yamlTree(tc.old); err != nil {
					t.Fatal(err)
				}
			}
			var got []string
			for _, fe := range fieldErrors(t, s.ValidateUpdate(tree, old)) {
				msg := fe.String()
				msg = strings.TrimSuffix(msg, " (rule: x-deckhouse-validations)")
				msg = strings.TrimSuffix(msg, " (rule: additionalProperties)")
				got = append(got, msg)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ValidateUpdate errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRulesRefused(t *testing.T) {
	for name, tc := range map[string]struct{ src, want string }{
		"not a list":         {"type: object\nx-deckhouse-validations: not a list\n", "values.yaml:2: x-deckhouse-validations: x-deckhouse-validations must be a list of {expression, message}, not"},
		"missing expression": {"type: object\nx-deckhouse-validations:\n- message: no expression\n", "[0]: missing expression"},
		"missing message":    {"type: object\nproperties:\n  a:\n    type: string\n    x-deckhouse-validations: [{expression: 'true'}]\n", "values.yaml:5: properties.a.x-deckhouse-validations: [0]: missing message"},
		"syntax":             {"type: object\nx-deckhouse-validations: [{expression: 'self.a ==', message: m}]\n", `expression "self.a ==" does not compile`},
		"unknown variable":   {"type: object\nx-deckhouse-validations: [{expression: 'this.a == 1', message: m}]\n", "undeclared reference to 'this'"},
		"too long":           {"type: object\nx-deckhouse-validations: [{expression: '" + strings.Repeat("1 == ", schema.MaxRuleLength/4) + "1', message: m}]\n", "does not compile"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := schema.Parse([]byte(tc.src), "values.yaml", schema.Options{})
			var pe *schema.ParseError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse error = %v, want a ParseError containing %q", err, tc.want)
			}
		})
	}
}

// TestRulesAttack: rules written to spin stop at their cost limit, and all
// the rules of one validation at the total budget, with a message naming
// the rule; validation returns.
func TestRulesAttack(t *testing.T) {
	list := make([]any, 300)
	for i := range list {
		list[i] = int64(i)
	}
	nested := "self.l.all(a, self.l.all(b, self.l.all(c, a + b + c >= 0)))"
	t.Run("one rule", func(t *testing.T) {
		s := mustParse(t, "type: object\nproperties:\n  l: {type: array, items: {type: integer}}\nx-deckhouse-validations:\n- {expression: '"+nested+"', message: m}\n", schema.Options{RulesTimeout: time.Hour})
		got := fieldErrors(t, s.Validate(map[string]any{"l": list}))
		want := fmt.Sprintf("rule %q costs more than %d to evaluate", nested, schema.MaxRuleCost)
		if len(got) != 1 || !strings.Contains(got[0].Message, want) {
			t.Errorf("Validate = %v, want one error containing %q", got, want)
		}
	})
	t.Run("many rules", func(t *testing.T) {
		var src strings.Builder
		src.WriteString("type: object\nproperties:\n  l: {type: array, items: {type: integer}}\nx-deckhouse-validations:\n")
		// Each rule stays under its own limit; together they pass the budget.
		for i := range 200 {
			fmt.Fprintf(&src, "- {expression: 'self.l.all(a, self.l.all(b, a + b >= %d))', message: m%d}\n", -i-1, i)
		}
		s := mustParse(t, src.String(), schema.Options{RulesCost: 1_000_000, RulesTimeout: time.Hour})
		got := fieldErrors(t, s.Validate(map[string]any{"l": list[:100]}))
		want := "rules cost more than 1000000 in total"
		if len(got) != 1 || !strings.Contains(got[0].Message, want) {
			t.Errorf("Validate = %v, want one error containing %q", got, want)
		}
	})
}
