package document

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// YAML 1.1 scalars (Loader.YAML11), as kubectl and the argocd CLI read
// manifests (sigs.k8s.io/yaml decodes with a YAML 1.1 library and converts
// the result to JSON): an unquoted y, yes, on, n, no, off (in their usual
// capitalizations) is a boolean, 012 is octal (10), 1_000 is 1000, 0b101
// is 5, and a map key that reads as a number or boolean becomes its JSON
// text ("true", "10").

// key11 is a map key as sigs.k8s.io/yaml makes it a JSON key (Loader.YAML11).
// kn is a scalar, its aliases resolved (key).
func (c *converter) key11(kn *yaml.Node) (string, error) {
	v, err := c.scalar11(kn)
	if err != nil {
		return "", err
	}
	switch v := v.(type) {
	case string:
		return v, nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 32), nil
	case bool:
		return strconv.FormatBool(v), nil
	}
	return "", c.errorf(kn, ErrSyntax, "map key %q reads as %s, which JSON cannot hold as a key (YAML 1.1, as kubectl reads it); quote it", kn.Value, Describe(v))
}

var (
	yaml11Float = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)
	yaml11Bools = map[string]bool{
		"y": true, "Y": true, "yes": true, "Yes": true, "YES": true,
		"true": true, "True": true, "TRUE": true, "on": true, "On": true, "ON": true,
		"n": false, "N": false, "no": false, "No": false, "NO": false,
		"false": false, "False": false, "FALSE": false, "off": false, "Off": false, "OFF": false,
	}
	yaml11Nulls = map[string]bool{"": true, "~": true, "null": true, "Null": true, "NULL": true}
)

// scalar11 resolves a scalar as go-yaml v2 does (YAML 1.1, Loader.YAML11), with the types
// the JSON conversion leaves: string, bool, int64 (json.Number beyond it),
// float64, nil.
func (c *converter) scalar11(n *yaml.Node) (any, error) {
	tag := ""
	if n.Style&yaml.TaggedStyle != 0 {
		tag = n.ShortTag()
	}
	quoted := n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0
	switch {
	case tag == "!!str":
		return n.Value, nil
	case tag == "!!binary":
		data, err := base64.StdEncoding.DecodeString(n.Value)
		if err != nil {
			return nil, c.errorf(n, ErrSyntax, "!!binary value is not base64")
		}
		return string(data), nil
	case tag != "" && tag != "!!bool" && tag != "!!int" && tag != "!!float" && tag != "!!null" && tag != "!!timestamp":
		return n.Value, nil // an application tag: its text
	case quoted && tag == "":
		return n.Value, nil
	}
	v, kind := resolve11(n.Value)
	if tag == "!!float" && kind == "int" {
		switch i := v.(type) {
		case int64:
			v, kind = float64(i), "float"
		case json.Number:
			f, _ := strconv.ParseFloat(string(i), 64)
			v, kind = f, "float"
		}
	}
	if tag != "" && tag != "!!"+kind && !(tag == "!!timestamp" && kind == "str") {
		return nil, c.errorf(n, ErrSyntax, "cannot read %q as %s", n.Value, tag)
	}
	if f, ok := v.(float64); ok && (math.IsInf(f, 0) || math.IsNaN(f)) {
		return nil, c.errorf(n, ErrSyntax, "%s reads as %v, which JSON cannot hold (as kubectl reads YAML); quote it to keep the text", n.Value, f)
	}
	return v, nil
}

// resolve11 resolves a plain scalar by go-yaml v2's rules; kind is bool,
// null, int, float or str (timestamps stay strings, as v2 leaves them when
// decoding into interface{}).
func resolve11(in string) (any, string) {
	if b, ok := yaml11Bools[in]; ok {
		return b, "bool"
	}
	if yaml11Nulls[in] {
		return nil, "null"
	}
	switch in {
	case ".nan", ".NaN", ".NAN":
		return math.NaN(), "float"
	case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF":
		return math.Inf(1), "float"
	case "-.inf", "-.Inf", "-.INF":
		return math.Inf(-1), "float"
	}
	c := in[0]
	switch {
	case c == '.':
		if f, err := strconv.ParseFloat(in, 64); err == nil {
			return f, "float"
		}
	case c == '+' || c == '-' || c >= '0' && c <= '9':
		if isTimestamp(in) {
			return in, "str"
		}
		plain := strings.ReplaceAll(in, "_", "")
		if i, err := strconv.ParseInt(plain, 0, 64); err == nil {
			return i, "int"
		}
		if u, err := strconv.ParseUint(plain, 0, 64); err == nil {
			return json.Number(strconv.FormatUint(u, 10)), "int"
		}
		if yaml11Float.MatchString(plain) {
			if f, err := strconv.ParseFloat(plain, 64); err == nil {
				return f, "float"
			}
		}
		if strings.HasPrefix(plain, "0b") {
			if i, err := strconv.ParseInt(plain[2:], 2, 64); err == nil {
				return i, "int"
			}
			if u, err := strconv.ParseUint(plain[2:], 2, 64); err == nil {
				return json.Number(strconv.FormatUint(u, 10)), "int"
			}
		} else if strings.HasPrefix(plain, "-0b") {
			if i, err := strconv.ParseInt("-"+plain[3:], 2, 64); err == nil {
				return i, "int"
			}
		}
	}
	return in, "str"
}

var timestampFormats = []string{"2006-1-2T15:4:5.999999999Z07:00", "2006-1-2t15:4:5.999999999Z07:00", "2006-1-2 15:4:5.999999999", "2006-1-2"}

// isTimestamp is go-yaml v2's timestamp test: YYYY- then a layout it parses.
func isTimestamp(s string) bool {
	i := 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
	}
	if i != 4 || i == len(s) || s[i] != '-' {
		return false
	}
	for _, f := range timestampFormats {
		if _, err := time.Parse(f, s); err == nil {
			return true
		}
	}
	return false
}
