package appset

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"

	"github.com/strata-dev/strata/internal/document"
)

// selector is a generator's post-selector: a label selector matched
// against the flattened parameter set. Unlike a Kubernetes label selector,
// values are not restricted, so a selector can match URLs.
type selector struct {
	reqs []requirement // sorted by key
}

type requirement struct {
	key    string
	op     string // In, NotIn, Exists, DoesNotExist
	values []string
}

func (a *ApplicationSet) decodeSelector(doc *labelSelectorDoc, pos *document.Pos, path string) (*selector, error) {
	if doc == nil {
		return nil, nil
	}
	s := &selector{}
	for k, v := range doc.MatchLabels {
		if errs := content.IsLabelKey(k); len(errs) > 0 {
			return nil, invalidf(a.Source, pos.Key("matchLabels").Key(k), "%s.matchLabels: key %q is not a valid label key: %s", path, k, strings.Join(errs, "; "))
		}
		s.reqs = append(s.reqs, requirement{key: k, op: "In", values: []string{v}})
	}
	for i, e := range doc.MatchExpressions {
		epath := fmt.Sprintf("%s.matchExpressions[%d]", path, i)
		epos := pos.Key("matchExpressions").Item(i)
		if errs := content.IsLabelKey(e.Key); len(errs) > 0 {
			return nil, invalidf(a.Source, epos, "%s.key %q is not a valid label key: %s", epath, e.Key, strings.Join(errs, "; "))
		}
		switch e.Operator {
		case "In", "NotIn":
			if len(e.Values) == 0 {
				return nil, invalidf(a.Source, epos, "%s: operator %s needs at least one value", epath, e.Operator)
			}
		case "Exists", "DoesNotExist":
			if len(e.Values) != 0 {
				return nil, invalidf(a.Source, epos, "%s: operator %s takes no values", epath, e.Operator)
			}
		default:
			return nil, invalidf(a.Source, epos, "%s.operator %q: use In, NotIn, Exists or DoesNotExist", epath, e.Operator)
		}
		s.reqs = append(s.reqs, requirement{key: e.Key, op: e.Operator, values: append([]string(nil), e.Values...)})
	}
	sort.SliceStable(s.reqs, func(i, j int) bool { return s.reqs[i].key < s.reqs[j].key })
	return s, nil
}

// matches reports whether every requirement holds for the flattened
// parameter set.
func (s *selector) matches(flat map[string]string) bool {
	for _, r := range s.reqs {
		v, has := flat[r.key]
		var ok bool
		switch r.op {
		case "In":
			ok = has && contains(r.values, v)
		case "NotIn":
			ok = !has || !contains(r.values, v)
		case "Exists":
			ok = has
		case "DoesNotExist":
			ok = !has
		}
		if !ok {
			return false
		}
	}
	return true
}
