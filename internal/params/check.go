package params

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/strata-dev/strata/internal/document"
)

// Check compares parameters with the announcements of the plugin they are
// set for. It never changes a parameter: as the proposal says, the user may
// set any name and any fields, everything set is passed on, and the plugin
// picks what it understands. So Check warns about
//
//   - a parameter no announcement names (the plugin may ignore it);
//   - a parameter named twice (both are in ARGOCD_APP_PARAMETERS; the
//     later one's PARAM_ variables win);
//   - a parameter that sets no value, or sets fields other than the one
//     its announcement's collectionType names (the plugin reads only that
//     one);
//
// and returns an error (each problem an *Error wrapping ErrInvalid, joined)
// for what the plugin cannot work with:
//
//   - a value in the announced field that does not fit the announced
//     itemType ("abc" for a number); an empty string always fits;
//   - a required announcement that has no default and no parameter
//     setting its field.
//
// Check expects announcements decoded by this package (an empty itemType
// or collectionType reads as string). Errors and warnings carry no source
// or line: the caller knows where the parameters came from.
func Check(params []Parameter, announced []Announcement) ([]Warning, error) {
	byName := make(map[string]*Announcement, len(announced))
	for i := range announced {
		if _, dup := byName[announced[i].Name]; !dup {
			byName[announced[i].Name] = &announced[i]
		}
	}
	var warnings []Warning
	var errs []error
	warn := func(i int, p Parameter, field, msg string) {
		warnings = append(warnings, Warning{Kind: "parameter", Index: i, Name: p.Name, Field: field, Msg: msg})
	}
	first := make(map[string]int, len(params))
	satisfied := make(map[string]bool, len(params))
	for i, p := range params {
		if j, dup := first[p.Name]; dup {
			warn(i, p, "", fmt.Sprintf("parameter [%d] has the same name; the plugin gets both in %s, and the PARAM_ variables of this later one win", j, ParametersVar))
		} else {
			first[p.Name] = i
		}
		a := byName[p.Name]
		if a == nil {
			warn(i, p, "", "no announcement has this name; it is passed on, but the plugin may ignore it")
			continue
		}
		want := collectionOf(*a)
		set := setFields(p)
		if len(set) == 0 {
			warn(i, p, "", fmt.Sprintf("sets no value; it is announced as %s %s, so set %q", article(want), want, want))
			continue
		}
		var others []string
		has := false
		for _, f := range set {
			if f == string(want) {
				has = true
			} else {
				others = append(others, f)
			}
		}
		if len(others) > 0 {
			msg := fmt.Sprintf("it is announced as %s %s, so the plugin reads only %q; remove %s",
				article(want), want, want, strings.Join(quoteAll(others), " and "))
			if !has {
				msg = fmt.Sprintf("it is announced as %s %s, but %s set instead; set %q",
					article(want), want, strings.Join(quoteAll(others), " and ")+isAre(len(others)), want)
			}
			warn(i, p, others[0], msg)
		}
		if !has {
			continue
		}
		satisfied[p.Name] = true
		item := a.ItemType
		check := func(field, s string) {
			if msg := misfit(item, s); msg != "" {
				errs = append(errs, &Error{Kind: "parameter", Index: i, Name: p.Name, Field: field,
					Msg: msg + "; " + fix(item), Err: ErrInvalid})
			}
		}
		switch want {
		case CollectionString:
			check("string", *p.String)
		case CollectionArray:
			for j, s := range p.Array {
				check(fmt.Sprintf("array[%d]", j), s)
			}
		case CollectionMap:
			for _, k := range slices.Sorted(maps.Keys(p.Map)) {
				check(mapField("map", k), p.Map[k])
			}
		}
	}
	for _, a := range announced {
		if !a.Required || satisfied[a.Name] || hasDefault(a) {
			continue
		}
		satisfied[a.Name] = true // report a repeated announcement once
		want := collectionOf(a)
		errs = append(errs, &Error{Kind: "parameter", Index: -1, Name: a.Name, Err: ErrInvalid,
			Msg: fmt.Sprintf("the plugin requires this parameter, but it is not set; set %q in the Application's spec.source.plugin.parameters", want)})
	}
	return warnings, errors.Join(errs...)
}

func collectionOf(a Announcement) CollectionType {
	if a.CollectionType == "" {
		return CollectionString
	}
	return a.CollectionType
}

func setFields(p Parameter) []string {
	var set []string
	if p.String != nil {
		set = append(set, "string")
	}
	if p.Array != nil {
		set = append(set, "array")
	}
	if p.Map != nil {
		set = append(set, "map")
	}
	return set
}

func hasDefault(a Announcement) bool {
	switch collectionOf(a) {
	case CollectionArray:
		return len(a.Array) > 0
	case CollectionMap:
		return len(a.Map) > 0
	}
	return a.String != ""
}

func article(c CollectionType) string {
	if c == CollectionArray {
		return "an"
	}
	return "a"
}

func isAre(n int) string {
	if n == 1 {
		return " is"
	}
	return " are"
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = fmt.Sprintf("%q", v)
	}
	return out
}

func fix(t ItemType) string {
	if t == ItemNumber {
		return "write a number such as 3 or 2.5"
	}
	return "write true or false"
}

// misfit says why s is not a value of type t, or returns "". An empty
// string fits every type: it stands for no value.
func misfit(t ItemType, s string) string {
	if s == "" {
		return ""
	}
	switch t {
	case ItemNumber:
		if !document.IsJSONNumber(s) {
			return fmt.Sprintf("%q is not a number, but itemType is number", document.Clip(s, 40))
		}
	case ItemBoolean:
		if s != "true" && s != "false" {
			return fmt.Sprintf("%q is not a boolean, but itemType is boolean", document.Clip(s, 40))
		}
	}
	return ""
}
