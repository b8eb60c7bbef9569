package preview

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/params"
)

// pluginBlock is the spec.source.plugin block of an Application setting
// these parameters and env, as YAML.
func (h *Handler) pluginBlock(ps []params.Parameter, env []EnvEntry) string {
	var b strings.Builder
	b.WriteString("plugin:\n")
	// Each entry's name first, as an Application writes it.
	entry := func(indent string, first, rest map[string]any) error {
		for k, m := range []map[string]any{first, rest} {
			if len(m) == 0 {
				continue
			}
			var out bytes.Buffer
			if err := document.Encode(&out, m, document.YAML); err != nil {
				return err
			}
			for n, l := range strings.SplitAfter(strings.TrimSuffix(out.String(), "\n"), "\n") {
				switch {
				case k == 0 && n == 0 && indent != "  ":
					b.WriteString(indent[:len(indent)-2] + "- " + l)
				default:
					b.WriteString(indent + l)
				}
			}
			b.WriteString("\n")
		}
		return nil
	}
	if err := entry("  ", map[string]any{"name": pluginName(h.Local.Plugin.Info())}, nil); err != nil {
		return "# " + err.Error()
	}
	if len(env) > 0 {
		b.WriteString("  env:\n")
		for _, e := range env {
			if err := entry("      ", map[string]any{"name": e.Name}, map[string]any{"value": e.Value}); err != nil {
				return "# " + err.Error()
			}
		}
	}
	if len(ps) > 0 {
		b.WriteString("  parameters:\n")
		for _, p := range ps {
			rest := map[string]any{}
			if p.String != nil {
				rest["string"] = *p.String
			}
			if p.Array != nil {
				rest["array"] = anyList(p.Array)
			}
			if p.Map != nil {
				m := make(map[string]any, len(p.Map))
				for k, v := range p.Map {
					m[k] = v
				}
				rest["map"] = m
			}
			if err := entry("      ", map[string]any{"name": p.Name}, rest); err != nil {
				return "# " + err.Error()
			}
		}
	}
	return b.String()
}

func anyList(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// command is the cmp generate command line giving the same render, quoted
// for a POSIX shell (for display and copying; the handler never runs it).
// Parameters the --param flags cannot write (an array item holding a
// comma, an empty array, a name holding = or .) go into a --parameters
// file instead, whose contents file is.
func (h *Handler) command(ps []params.Parameter, env []EnvEntry) (line, file string) {
	argv := slices.Clone(h.Command)
	if flagsCanWrite(ps) {
		for _, p := range ps {
			switch {
			case p.String != nil:
				argv = append(argv, "--param", p.Name+"="+*p.String)
			case p.Array != nil:
				argv = append(argv, "--param-array", p.Name+"="+strings.Join(p.Array, ","))
			}
			keys := make([]string, 0, len(p.Map))
			for k := range p.Map {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				argv = append(argv, "--param-map", p.Name+"."+k+"="+p.Map[k])
			}
		}
	} else {
		b, _ := json.MarshalIndent(ps, "", "  ")
		file = string(b) + "\n"
		argv = append(argv, "--parameters", "parameters.json")
	}
	for _, e := range env {
		argv = append(argv, "--env", e.Name+"="+e.Value)
	}
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = shellQuote(a)
	}
	return strings.Join(quoted, " "), file
}

// flagsCanWrite says whether --param, --param-array and --param-map give
// exactly ps: each parameter sets one field, arrays have items and none
// holds a comma, names hold no = or . (a map entry's name ends at the
// first dot) and are not repeated.
func flagsCanWrite(ps []params.Parameter) bool {
	seen := map[string]bool{}
	for _, p := range ps {
		set := 0
		if p.String != nil {
			set++
		}
		if p.Array != nil {
			set++
		}
		if p.Map != nil {
			set++
		}
		if set != 1 || seen[p.Name] || p.Name == "" || strings.ContainsAny(p.Name, "=.") {
			return false
		}
		seen[p.Name] = true
		if p.Array != nil && (len(p.Array) == 0 || slices.ContainsFunc(p.Array, func(s string) bool { return strings.Contains(s, ",") })) {
			return false
		}
		if p.Map != nil && len(p.Map) == 0 {
			return false
		}
		for k := range p.Map {
			if k == "" || strings.Contains(k, "=") {
				return false
			}
		}
	}
	return true
}

// shellQuote quotes s for a POSIX shell: as is when it holds only safe
// characters, else in single quotes.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,@+%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
