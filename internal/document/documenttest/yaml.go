package documenttest

import (
	"fmt"
	"slices"
	"strings"
)

// YAMLCases are YAML texts on which the fast decoders of yamljson (and
// helmrender.LoadValues on them) must do exactly what Helm's functions do:
// as values (loader.LoadValues) and as rendered documents
// (sigs.k8s.io/yaml.YAMLToJSON, and Unmarshal into the head).
var YAMLCases = []string{
	"",
	"# only a comment\n",
	"null\n",
	"NULL",
	"Null\n",
	"~\n",
	"{}\n",
	"[]\n",
	"- a\n- b\n",
	"just a string\n",
	"a: 1\n",
	"a: 1", // no final newline
	"a: b\nc: [1, 2.5, true, null, x]\nd: {e: f}\n",
	"int: 42\nneg: -7\nhex: 0x1F\noct: 0o17\nold_oct: 017\nbin: 0b101\nunder: 1_000\n",
	"big: 9007199254740993\nhuge: 18446744073709551615\nhuger: 123456789012345678901234567890\nmin: -9223372036854775808\n",
	"f: 1.5\ng: 1e3\nh: -0.0\ni: 6.02e+23\nj: 1.0\nk: 0.1\nl: 1e-7\nm: 1e21\n",
	"inf: .inf\n",
	"nan: .nan\n",
	"yes: yes\nno: no\non: on\noff: off\ny: y\nn: n\nTrue: True\nFALSE: FALSE\n",
	"1: one\n2: two\n",
	"1: one\n\"1\": string one\n",
	"true: t\n\"true\": s\n",
	"1.5: float key\n",
	"~: null key\n",
	"? [a, b]\n: list key\n",
	"? {a: b}\n: map key\n",
	"18446744073709551615: uint key\n",
	"a: 1\na: 2\n",
	"a: {x: 1}\na: {y: 2}\n",
	"base: &b {x: 1, y: 2}\nderived:\n  <<: *b\n  y: 3\n",
	"a: &x [1, 2]\nb: *x\nc: &m {k: v}\nd: *m\n",
	"bin: !!binary aGVsbG8=\n",
	"bad: !!binary \"/w==\"\n",
	"esc: \"\\xff\\xfe\"\n",
	"\"\\xff\": key\n",
	"html: \"<b>&amp;</b>\"\nquote: 'a\"b\\\\c'\nctl: \"\\x01\\t\\n\\r\\b\\f\"\nsep: \"\\u2028\\u2029\"\nuni: \"héllo ☃ 😀\"\n",
	"ts: 2001-12-14t21:59:43.10-05:00\ndate: 2002-12-14\n",
	"str: !!str 123\nint: !!int \"7\"\nfloat: !!float 3\n",
	"multi: |\n  line one\n  line two\nfolded: >\n  a\n  b\n",
	"a: 1\n---\nb: 2\n---\na: 3\n",
	"a: {x: 1, y: 2}\n---\na: {y: 3}\n",
	"a: 1\n---\n- list\n",
	"a: 1\n---\n",
	"---\n---\na: 1\n",
	"a: [unterminated\n",
	"a: b: c\n",
	"\ta: tab\n",
	"a:\n  - b: 1\n    c: [x, {d: e}]\n  - []\n  - {}\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  annotations:\n    helm.sh/hook: pre-install,test\n    helm.sh/hook-weight: \"5\"\ndata:\n  a: b\n",
	"apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n  annotations:\n    helm.sh/hook-weight: 5\n",
	"apiVersion: v1\nKind: Pod\nmetadata: {name: x}\n",
	"APIVERSION: v1\nkind: Pod\n",
	"apiVersion: v1\nkind: Pod\nMetadata: {Name: x, ANNOTATIONS: {a: b}}\n",
	"apiVersion: v1\nkind: 5\n",
	"apiVersion: 1.0\nkind: Pod\n",
	"apiVersion: v1\nkind: Pod\nmetadata: null\n",
	"apiVersion: v1\nkind: Pod\nmetadata: {annotations: null, name: null}\n",
	"apiVersion: v1\nkind: Pod\nmetadata: {annotations: {}}\n",
	"apiVersion: v1\nkind: Pod\nmetadata: []\n",
	"apiVersion: v1\nkind: Pod\nmetadata: {annotations: {1: x, b: [c]}}\n",
	"apiVersion: v1\nkind: Pod\nkind: Service\n",
	"apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n",
	"apiVersion: v1\nkind: Pod\nmetadata: {name: \"\\xff\"}\n",
	"apiVersion: v1\nkind: ConfigMap\ndata:\n  script: |\n    cat <<EOF\n    hi\n    EOF\n",
	"\xEF\xBB\xBFa: bom\n",
	"a: \xff\n",
	// The block parser's ground: sequences in all their placements,
	// quoting, comments, empty collections, and what it must leave alone.
	"a:\n- x\n- y\nb: 1\n",
	"a:\n  - x\n  -   y # c\n  -\n  - - nested\n",
	"list:\n- name: a\n  value: 1\n-   name: b\n    value: [] # c\n- k:\n    deep: true\n  other: ~\n-\n  late: map\n- \n- {}\n",
	"a:\n    b:\n        c: 1\n    d: 2\ne: 3\n",
	"a:\n    b: 1\n  c: 2\n",
	"a: 1\n  b: 2\n",
	"  a: 1\n  b: 2\n",
	"a: plain words here\nb: 'single ''quoted'' # not a comment'\nc: \"double \\\"q\\\" \\t \\x41 \\u00e9 \\U0001F600 \\/ \\N \\_\"\nd: url://x:1/y#z\ne: a#b # comment\n",
	"\"quoted key\": 1\n'single key': 2\nkey with spaces  : 3\n\"k\":4\n'k' : 5\n",
	"a: {} # c\nb: []#c\nc: { }\nd: [ ]\ne: {a: 1}\nf: {}x\n",
	"a: -1\nb: -x\nc: - x\nd: -\ne: +1\nf: .5\ng: 1_000\nh: 0b11\ni: -0b11\nj: 0o7\nk: 1e5\nl: 1.e5\nm: .\nn: -.inf\no: +.inf\n",
	"a: y\nb: Y\nc: yes\nd: On\ne: oFF\nf: NULL\ng: Null\nh: nULL\ni: ~x\nj: TRUE\nk: tRUE\n",
	"a: b: c\n",
	"a: b:\n",
	"a:b\n",
	"? a\n: b\n",
	"a: ?b\nc: :d\n",
	"a: |\n  text\nb: >-\n  folded\n",
	"a: \"multi\n  line\"\nb: 'x\n  y'\n",
	"a: plain\n  continued\n",
	"- a\n- b\n",
	"a: 1\n# comment\n   # indented comment\n\n\nb: 2\n",
	"a: 1\r\nb: 2\r\n",
	"a: \"\\x\"\n",
	"a: \"\\ud800\"\n",
	"a: \"unterminated\n",
	"a: 'x'y\n",
	"a: \"x\" # ok\nb: \"y\"# no\n",
	"a: \u00e9t\u00e9 \u2603\nb: \u2028\nc: \u0085x\n",
	"a: @x\n",
	"a: `x`\n",
	"<<: {a: 1}\n",
	"a: <<\nb: x<<y\n",
	"%YAML 1.1\n---\na: 1\n",
	"a: 1\n...\n",
	"null: 1\n~: 2\n",
	"1: a\n0x1: b\n",
	"- a: 1\n  b: 2\n- c\n",
	"a:\n  - b\n  c: 1\n",
	"a:\n- b\n  c: 1\n",
	"a:\n  -\n    b: 1\n  -\n   - c\n",
	// Literal block scalars: what the block parser takes (the common
	// shape), and the shapes around it that it leaves to yaml.v2.
	"a: |-\n  one\n   two  \n\n  # not a comment\n\n\nb: 1\n",
	"a: |\n  one\n\n  two\n  \n\nb: |\n    x\n",
	"a: |\n  no final break",
	"a: |-\n  no final break",
	"a: |\n  x\n # comment\nb: 1\n",
	"a: |\n    x\n  # comment\n    y\n",
	"a: |\n    x\n  y\n",
	"a: |\nb: 1\n",
	"a: |\n",
	"a: |-\n\n  late\n",
	"a: |\n   \n  x\n",
	"a: |\n  x\n     \n  y\n",
	"a: |\n  x\n  \n",
	"a: |+\n  keep\n\n",
	"a: |2\n   x\n",
	"a: | # c\n  x\n",
	"a:\n  - b: |-\n      x\n      y\n    c: 1\n  - |\n    z\n",
	"- a: |\n  x\n",
	"a: |\nx\n",
	"a:\n  b: |\n  x\n",
	"a: |\n  ---\n  ...\n  %x\n  - y\n  k: v\n",
	"a: |\n\tx\n",
	"a: |\n  \tx\n",
	"apiVersion: v1\nkind: ConfigMap\ndata:\n  script: |\n    #!/bin/sh\n    echo \"$1\"\n\n    exit 0\n  other: |-\n    {\n      \"k\": [1, 2]\n    }\n",
	// Empty collections on a line of their own.
	"a:\n  {}\nb:\n    []  # c\nc: 1\n",
	"a:\n  {}\n  d: 1\n",
	"a:\n  {}\n    d: 1\n",
	"- a:\n    {}\n  b:\n   []\n",
	"a:\n  {} x\n",
	"a:\n  {a: 1}\n",
	"a:\n  [x]\n",
	"a:\n  {}\n  {}\n",
	"a:\n- {}\n",
	// Plain values over several lines.
	"a: one\n  two  \n   three\n\n  four\n\n\n  five\nb: x\n",
	"a: one\n  - two\n  `three` @four\n  [five] {six} !seven &eight *nine |ten >eleven 'q' \"d\" %p ?q ,r\nb: 1\n",
	"a: one\n  two: three\n",
	"a: one\n  two:\n",
	"a: one\n  two #c\n",
	"a: one\n  # c\n  two\n",
	"a: one # c\n  two\n",
	"a: one\n two\nb:\n  c: 1\n   d\n",
	"- a: one\n   two\n  b: 1\n",
	"- a: one\n  two\n",
	"a: 1\n  2\n",
	"a: true\n  \n",
	"a: one\n  two\n  \n",
	"a: one\n  two",
	"a: 'one\n  two'\n",
	"a: \"one\n  two\"\n",
	"a: one\n  two:three\n  four :five\n",
	// Single-quoted values over several lines.
	"a: 'one:\n  two  \n   three '' x\n\n  four\n\n\n  five'\nb: x\n",
	"a: '\n  x'\n",
	"a: 'x\n  '\n",
	"a: 'x\n  y' # c\nb: 1\n",
	"a: 'x\n  y'z\n",
	"a: 'x\n  y'\n  z: 1\n",
	"a: 'x\n y\nb: 1\n",
	"a: 'x\ny'\n",
	"a:\n  b: 'x\n  y'\n",
	"- a: 'x #y\n    - z'\n  b: c\n",
	"a: 'x\n",
	"a: 'x\n  y\n",
	"a: 'x  \n  \n    y'\n",
	// Strings the JSON writer escapes itself, and ones it leaves to
	// encoding/json.
	"a: \"x\\ty\\n\\\"q\\\" \\\\ z\"\nb: \"<&>\\n\"\nc: \"\\x7f\\n\"\nd: \"\\r\\n\"\ne: \"\u00e9\\n\"\n",
	// Double-quoted values over several lines.
	"a: \"one: \\\"q\\\" \\t\n  two  \n   three \\u00e9\n\n  four\n\n\n  five\"\nb: x\n",
	"a: \"x\\\n  y\"\n",
	"a: \"x\\ \n  y\"\n",
	"a: \"x\\\\\n  y\"\n",
	"a: \"x\n  \\ y \\\" z\"\n",
	"a: \"x\n  y\" # c\n",
	"a: \"x\n  y\"z\n",
	"a: \"x\n  \\q\"\n",
	"a: \"x\n",
	"a: \"x\ny\"\n",
	// Simple keys are at most 1024 characters long in yaml.v2.
	strings.Repeat("k", 1100) + ": v\n",
	"\"" + strings.Repeat("k", 1100) + "\": v\n",
	"'" + strings.Repeat("k", 990) + "': v\n",
}

// FlowCases are one-line flow sequences of scalars and plain scalars ended
// by a comment line, which the block parser reads, and their neighbours
// it must leave to yaml.v2.
var FlowCases = []string{
	"a: [x]\n",
	"a: [x, y]\n",
	"a: [x,y,z] # c\n",
	"a: [ x , y ]\n",
	"a: ['namespace']\n",
	"a: [\"IPv6\", \"IPv4\"]\n",
	"a: ['it''s', \"q\\\"\", \"\\u00e9\"]\n",
	"a: [__name__, scope]\n",
	"a: [1, -2, 0x1F, 1.5, .5, 1e3, .inf, -.Inf, .nan, ~, null, yes, No, on, '1', y]\n",
	"a: [a b, c  d]\n",
	"a: [-1, -x, -]\n",
	"a: [-]\n",
	"a: [x, ]\n",
	"a: [,]\n",
	"a: [ ]\n",
	"a: [x,,y]\n",
	"a: [x\n",
	"a: [x, [y]]\n",
	"a: [x, {y: z}]\n",
	"a: [x: y]\n",
	"a: [x:y]\n",
	"a: [x #c]\n",
	"a: [x] y\n",
	"a: [x]#c\n",
	"a: [x]]\n",
	"a: [x\ty]\n",
	"a: [a'b]\n",
	"a: [*x]\n",
	"a: [&x y]\n",
	"a: [!!str 1]\n",
	"a: [? x]\n",
	"a: [<<]\n",
	"a: [x,\n  y]\n",
	"- [a, b]\n",
	"a:\n- [a, b]\n- [c]\n",
	"a:\n  [a, b]\n",
	"a:\n  - [a, 'b']\n  - x\n",
	"port: 80\ntargetPort: 3000\n  # comment\nnext: 1\n",
	"a: x\n  y\n  # c\nb: 1\n",
	"a: x\n  # c\n  y\n",
	"a: x\n  # c\n\n  y\nb: 2\n",
	"a:\n  b: null\n  # - c: d\n  #   e: f\nz: 1\n",
	"a: x\n\n  # c\nb: 1\n",
	"a: 'x'\n  # c\nb: 1\n",
	"- x\n  # c\n- y\n",
}

// CheckCases are manifests for yamljson.Check: objects with a head, in the
// block style it scans, and ones it must leave to the conversion.
var CheckCases = []string{
	ManifestDoc,
	"apiVersion: v1\nkind: ConfigMap\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  annotations:\n    helm.sh/hook: pre-install,post-install\n    a: 'b'\ndata:\n  k: |\n    line\n\n    <tag> & \"q\"\n  l: |-\n    x\n  m: folded\n    over lines\n  o2: 'quoted\n    over lines'\n",
	"apiVersion: v1\nkind: ConfigMap\n<<<<<<<<: <<<<<<<<<<\n<: \n'<': <\n\"<&>\": \"\\u2028\"\nx: [] # c\nyy: {}\nz:\n- \n-\n- 9e20\n- 1_0e1_9\n- 0x1F\n- .5\n- ~\n- y\n",
	"apiVersion: v1\nkind: ConfigMapList\nitems: []\n",
	"apiVersion: v1\nkind: ''\n",
	"kind: ConfigMap\n",
	"apiVersion: v1\nKind: ConfigMap\nkind: Secret\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  Name: x\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  annotations:\n    a: 1\n",
	"apiVersion: v1\nkind: ConfigMap\nspec:\n  1: x\n",
	"apiVersion: v1\nkind: ConfigMap\nspec:\n  true: x\n",
	"apiVersion: v1\nkind: ConfigMap\nspec:\n  a: .nan\n  b: -.inf\n",
	"apiVersion: v1\nkind: ConfigMap\nspec:\n  - .inf\n",
	"apiVersion: v1\nkind: ConfigMap\nspec:\n  a: x\n  a: y\n",
	"apiVersion: v1\nkind: ConfigMap\nkind: Secret\n",
	"apiVersion: v1\nkind: ConfigMap\nspec: !!str x\n",
	"apiVersion: v1\nkind: ConfigMap\nspec: &a x\nother: *a\n",
	"apiVersion: v1\nkind: |\n  ConfigMap\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n",
	"apiVersion: 1\nkind: ConfigMap\n",
}

// AllYAMLCases are YAMLCases, then each line of each case on its own, so
// that every feature a case shows is read alone too (a case the block
// parser declines for one line is read line by line).
func AllYAMLCases() []string {
	all := slices.Concat(YAMLCases, FlowCases, CheckCases)
	seen := map[string]bool{}
	for _, c := range all {
		for line := range strings.Lines(c) {
			if !seen[line] {
				seen[line] = true
				all = append(all, line)
			}
		}
	}
	return all
}

// ManifestDoc is a rendered Deployment the fast paths must read.
const ManifestDoc = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  annotations:\n    helm.sh/hook: test\nspec:\n  replicas: 3\n  template:\n    spec:\n      containers:\n        - name: web\n          image: \"nginx:1.27\"\n          args:\n          - \"--a=<b>\"\n"

// BenchValues is a values.yaml of 2,000 keys in sections, with comments.
func BenchValues() []byte {
	var b strings.Builder
	for s := range 100 {
		fmt.Fprintf(&b, "# section %d\nsection%d:\n  enabled: true\n  list:\n    - a\n    - b: c\n", s, s)
		for k := range 17 {
			fmt.Fprintf(&b, "  key%d: value %d # comment\n", k, k)
		}
	}
	return []byte(b.String())
}
