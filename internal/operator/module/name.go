package module

import (
	"fmt"
	"strings"
)

// EnabledSuffix ends the key of a module's enabled flag: `certManagerEnabled`.
const EnabledSuffix = "Enabled"

// GlobalKey is the values key of the global section.
const GlobalKey = "global"

// ValuesKey returns the values key of a module name: kebab-case becomes
// camelCase (`cert-manager` → `certManager`). Dashes and underscores
// separate words; the first letter of every word but the first is
// upper-cased.
func ValuesKey(name string) string {
	var b strings.Builder
	b.Grow(len(name))
	upper := false
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c == '-' || c == '_' {
			upper = b.Len() > 0
			continue
		}
		if upper && c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		upper = false
		b.WriteByte(c)
	}
	return b.String()
}

// NameFromKey returns the module name of a values key: camelCase becomes
// kebab-case (`certManager` → `cert-manager`).
func NameFromKey(key string) string {
	var b strings.Builder
	b.Grow(len(key) + 4)
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c >= 'A' && c <= 'Z' {
			if i > 0 {
				b.WriteByte('-')
			}
			c += 'a' - 'A'
		}
		b.WriteByte(c)
	}
	return b.String()
}

// CheckName reports whether a module name survives the conversion to its
// values key and back, which addon-operator requires: the name must be
// kebab-case (lower-case words separated by single dashes).
func CheckName(name string) error {
	if name == "" {
		return fmt.Errorf("empty module name")
	}
	key := ValuesKey(name)
	if back := NameFromKey(key); back != name || key == "" {
		return fmt.Errorf("module name %q is not kebab-case: its values key %q converts back to %q; rename the directory to %q", name, key, back, back)
	}
	if key == GlobalKey {
		return fmt.Errorf("module name %q is reserved: its values key would be the global section's", name)
	}
	return nil
}

// EnabledKey returns the key of a module's enabled flag: `certManagerEnabled`.
func EnabledKey(key string) string { return key + EnabledSuffix }
