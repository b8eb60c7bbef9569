package appset

import (
	"context"
	"testing"
)

// FuzzGitFile parses arbitrary repository files as the git files
// generator does: no panic, and every result is a list of maps.
func FuzzGitFile(f *testing.F) {
	for _, s := range []string{"", "null", "[]", "{}", prodConfig, stagingConfig, "- a: 1\n- null\n", "a: &x [*x]", "foo:\n  bar: baz\nn: 4\n", "x", "[1]", "---\na: 1\n---\nb: 2\n"} {
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, data []byte, old bool) {
		sets, err := parseGitFile(data, "f.yaml", old)
		if err != nil {
			return
		}
		for i, s := range sets {
			if s == nil {
				t.Fatalf("set %d is nil", i)
			}
			_ = flatten(s, false)
		}
	})
}

// naiveMatch is wildmatch for patterns of literal characters, * and ?,
// by plain recursion: the reference the fuzz test compares with.
func naiveMatch(p, s string) bool {
	if p == "" {
		return s == ""
	}
	switch p[0] {
	case '*':
		for i := 0; i <= len(s); i++ {
			if naiveMatch(p[1:], s[i:]) {
				return true
			}
		}
		return false
	case '?':
		return s != "" && naiveMatch(p[1:], s[1:])
	}
	return s != "" && s[0] == p[0] && naiveMatch(p[1:], s[1:])
}

// FuzzPathspec matches arbitrary patterns: no panic on any pattern, and
// for patterns of literals, * and ?, the same answer as naiveMatch.
func FuzzPathspec(f *testing.F) {
	for _, s := range [][2]string{{"**/config.json", "p1/config.json"}, {"p1/**/config.json", "p1/config.json"}, {"a*b?c", "axxb/c"}, {"[!a]*", "b"}, {"[[:alpha:]-z]x", "-x"}, {"[", "["}, {`\*`, "*"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		if len(pattern) > 64 || len(name) > 64 {
			return
		}
		got := wildmatch(pattern, name)
		_ = pathspecMatch(pattern, name)
		_, _ = doublestarMatch(pattern, name)
		simple := true
		for i := 0; i < len(pattern); i++ {
			if c := pattern[i]; c == '[' || c == '\\' {
				simple = false
			}
		}
		if simple && got != naiveMatch(pattern, name) {
			t.Fatalf("wildmatch(%q, %q) = %v, want %v", pattern, name, got, !got)
		}
	})
}

// FuzzObjects loads arbitrary manifests as cluster objects and lists and
// decodes cluster Secrets as the clusters generator does: no panic.
func FuzzObjects(f *testing.F) {
	f.Add([]byte(clusterSecretsYAML))
	f.Add([]byte("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Secret, metadata: {name: a, labels: {argocd.argoproj.io/secret-type: cluster}}, data: {name: '!!'}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4<<10 {
			return // the YAML parser's own cost is fuzzed in document
		}
		objs := &Objects{}
		if err := objs.Load(data, "f.yaml"); err != nil {
			return
		}
		list, err := objs.List(context.Background(), Query{APIVersion: "v1", Resource: "secrets", Namespace: "namespace", LabelSelector: secretTypeLabel + "=" + clusterSecretType})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range list {
			_, _ = decodeClusterSecret(o)
		}
	})
}
