package schema

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/strata-dev/strata/internal/document"
)

// xRules is the key of Deckhouse's CEL validation rules: a list of
// {expression, message}, evaluated by addon-operator with the value at the
// schema's level as self (and the previous value as oldSelf).
const xRules = "x-deckhouse-validations"

// Limits on CEL rules, so that a schema cannot make validation hang or
// spin: a rule's source length, its cost per evaluation (cel-go's cost
// units, about one per operation or element visited; Kubernetes' limit for
// one CRD validation rule), the cost of all the rules of one validation
// (half Kubernetes' budget for one CRD object: evaluating it takes about
// a second on a loaded 2-core machine), and a wall-clock bound. The last
// two can be lowered with Options.RulesCost and Options.RulesTimeout.
const (
	MaxRuleLength  = 10_000
	MaxRuleCost    = 1_000_000
	MaxRulesCost   = 5_000_000
	MaxRulesTime   = 5 * time.Second
	ruleVar        = "self"
	ruleOldVar     = "oldSelf"
	maxRuleNesting = 32
)

// ruleEnv is cel-go's standard environment with self and oldSelf, as
// addon-operator declares them (no Kubernetes extension libraries).
var ruleEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable(ruleVar, cel.DynType),
		cel.Variable(ruleOldVar, cel.DynType),
		cel.ParserExpressionSizeLimit(MaxRuleLength),
		cel.ParserRecursionLimit(maxRuleNesting),
	)
})

// A rule is one compiled x-deckhouse-validations entry.
type rule struct {
	expr       string
	message    string
	transition bool // uses oldSelf: evaluated only when there is an old value
	prg        cel.Program
}

// A ruleNode holds the rules of a schema and of the schemas down its
// properties (the only keyword addon-operator follows for them).
type ruleNode struct {
	rules []*rule
	props map[string]*ruleNode
}

// buildRules compiles the rules of m and below; nil when there are none.
func buildRules(doc *schemaDoc, m obj, loc document.Path) (*ruleNode, error) {
	n := &ruleNode{}
	if raw, ok := m[xRules]; ok {
		rules, err := compileRules(raw)
		if err != nil {
			return nil, doc.errorAt(loc.Append(document.Key(xRules)), err)
		}
		n.rules = rules
	}
	props, _ := m["properties"].(obj)
	for _, name := range slices.Sorted(maps.Keys(props)) {
		p, ok := props[name].(obj)
		if !ok {
			continue
		}
		c, err := buildRules(doc, p, loc.Append(document.Key("properties")).Append(document.Key(name)))
		if err != nil {
			return nil, err
		}
		if c != nil {
			if n.props == nil {
				n.props = map[string]*ruleNode{}
			}
			n.props[name] = c
		}
	}
	if n.rules == nil && n.props == nil {
		return nil, nil
	}
	return n, nil
}

// compileRules checks the shape of an x-deckhouse-validations value (a list
// of mappings with a non-empty expression and message; other keys are
// ignored, as addon-operator ignores them) and compiles each expression.
func compileRules(raw any) ([]*rule, error) {
	list, ok := raw.([]any)
	if !ok {
		return nil, fmt.Errorf("%s must be a list of {expression, message}, not %s", xRules, document.Describe(raw))
	}
	env, err := ruleEnv()
	if err != nil {
		return nil, fmt.Errorf("CEL environment: %w", err)
	}
	var out []*rule
	for i, e := range list {
		m, ok := e.(map[string]any)
		if !ok || len(m) == 0 {
			return nil, fmt.Errorf("[%d]: a rule must be a mapping with expression and message, not %s", i, document.Describe(e))
		}
		expr, _ := m["expression"].(string)
		msg, _ := m["message"].(string)
		switch {
		case expr == "":
			return nil, fmt.Errorf("[%d]: missing expression (a CEL expression over self that is true for valid values)", i)
		case msg == "":
			return nil, fmt.Errorf("[%d]: missing message (what the user is told when the expression is false)", i)
		}
		ast, iss := env.Compile(expr)
		if iss.Err() != nil {
			return nil, fmt.Errorf("[%d]: expression %q does not compile: %v", i, expr, iss.Err())
		}
		prg, err := env.Program(ast, cel.CostLimit(MaxRuleCost), cel.InterruptCheckFrequency(100))
		if err != nil {
			return nil, fmt.Errorf("[%d]: expression %q: %v", i, expr, err)
		}
		out = append(out, &rule{expr: expr, message: msg, transition: usesOldSelf(ast), prg: prg})
	}
	return out, nil
}

// usesOldSelf reports whether an expression names oldSelf anywhere, macros
// included: a transition rule.
func usesOldSelf(ast *cel.Ast) bool {
	rep := ast.NativeRep()
	if rep == nil {
		return false
	}
	return len(celast.MatchDescendants(celast.NavigateAST(rep), func(e celast.NavigableExpr) bool {
		return e.Kind() == celast.IdentKind && e.AsIdent() == ruleOldVar
	})) > 0
}

// A ruleRun evaluates the rules of one validation within the budgets.
type ruleRun struct {
	ctx     context.Context
	total   uint64
	timeout time.Duration
	budget  uint64
	over    bool
	errs    []fieldError
}

// ruleLimits are the budgets of one validation's rules.
type ruleLimits struct {
	cost    uint64
	timeout time.Duration
}

// checkRules evaluates the rules of n over v, with old as the previous
// value (haveOld false: none, so transition rules are skipped).
func checkRules(n *ruleNode, lim ruleLimits, v, old any, haveOld bool) []fieldError {
	if n == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), lim.timeout)
	defer cancel()
	r := &ruleRun{ctx: ctx, budget: lim.cost, total: lim.cost, timeout: lim.timeout}
	r.node(n, v, old, haveOld, nil)
	return r.errs
}

// node evaluates the rules down n's properties first, then n's own, as
// addon-operator does.
func (r *ruleRun) node(n *ruleNode, v, old any, haveOld bool, path document.Path) {
	if m, ok := v.(map[string]any); ok {
		oldMap, _ := old.(map[string]any)
		names := make([]string, 0, len(n.props))
		for name := range n.props {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			pv, ok := m[name]
			if !ok {
				continue
			}
			ov, has := oldMap[name]
			r.node(n.props[name], pv, ov, has && ov != nil, path.Append(document.Key(name)))
		}
	}
	if len(n.rules) == 0 || r.over {
		return
	}
	self, err := celValue(v)
	if err != nil {
		r.fail(path, err.Error())
		return
	}
	var oldSelf any
	if haveOld {
		if oldSelf, err = celValue(old); err != nil {
			r.fail(path, err.Error())
			return
		}
	}
	for _, ru := range n.rules {
		if ru.transition && !haveOld {
			continue
		}
		if r.over {
			return
		}
		out, det, err := ru.prg.ContextEval(r.ctx, map[string]any{ruleVar: self, ruleOldVar: oldSelf})
		if det != nil && det.ActualCost() != nil {
			c := *det.ActualCost()
			if c >= r.budget {
				r.budget = 0
			} else {
				r.budget -= c
			}
		}
		switch {
		case err != nil && strings.Contains(err.Error(), "no such key:"):
			// A rule reading a key the values lack passes, as in addon-operator.
		case err != nil && strings.Contains(err.Error(), "cost limit exceeded"):
			r.fail(path, fmt.Sprintf("rule %q costs more than %d to evaluate on these values; the schema's author must simplify it", ru.expr, MaxRuleCost))
		case err != nil && errors.Is(r.ctx.Err(), context.DeadlineExceeded):
			r.fail(path, fmt.Sprintf("the %s rules took longer than %s; evaluation stopped at rule %q", xRules, r.timeout, ru.expr))
			r.over = true
		case err != nil:
			r.fail(path, fmt.Sprintf("rule %q cannot be evaluated: %v", ru.expr, err))
		default:
			pass, ok := out.Value().(bool)
			switch {
			case !ok:
				r.fail(path, fmt.Sprintf("rule %q should return a boolean, not %s", ru.expr, out.Type().TypeName()))
			case !pass:
				r.fail(path, ru.message)
			}
		}
		if r.budget == 0 && !r.over {
			r.over = true
			r.fail(path, fmt.Sprintf("the %s rules cost more than %d in total on these values; evaluation stopped at rule %q", xRules, r.total, ru.expr))
		}
	}
}

func (r *ruleRun) fail(path document.Path, msg string) {
	r.errs = append(r.errs, fieldError{path: path, rule: xRules, msg: msg})
}

// celValue converts a tree value as addon-operator does, through
// google.protobuf.Value: every number becomes a double (so `self.n == 3`
// holds for 3, and `self.n % 2` fails as in addon-operator; use int(self.n)).
func celValue(v any) (any, error) {
	conv, err := protoTree(v, 0)
	if err != nil {
		return nil, err
	}
	switch x := conv.(type) {
	case map[string]any:
		return structpb.NewStruct(x)
	case []any:
		return structpb.NewList(x)
	}
	return structpb.NewValue(conv)
}

// protoTree copies a tree with its numbers as float64.
func protoTree(v any, depth int) (any, error) {
	if depth > 4*MaxDepth {
		return nil, errors.New("values nested too deep for the CEL rules")
	}
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			c, err := protoTree(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c, err := protoTree(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case int:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case uint64:
		return float64(x), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("%v is not a JSON number", x)
		}
		return x, nil
	case json.Number:
		return x.Float64()
	case nil, bool, string:
		return x, nil
	}
	return nil, fmt.Errorf("a value of type %T cannot be given to the CEL rules", v)
}
