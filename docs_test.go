package strata_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"

	"github.com/strata-dev/strata/internal/cli"
	"github.com/strata-dev/strata/internal/testbin"
)

// The pages whose examples and links the tests below check: what a user
// reads.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{"README.md", "DEVELOPERS.md", "CHANGELOG.md"}, pages...)
	more, err := filepath.Glob("deploy/*/README.md")
	if err != nil {
		t.Fatal(err)
	}
	return append(pages, more...)
}

// fence is one fenced code block of a page.
type fence struct {
	page  string
	line  int    // of the opening fence, 1-based
	lang  string // the info string's first word
	body  string
	after *fence // the block right after this one, when only blank lines part them
}

func (f *fence) String() string { return fmt.Sprintf("%s:%d", f.page, f.line) }

// fences returns the fenced blocks of page.
func fences(t *testing.T, page string) []*fence {
	t.Helper()
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	var (
		out     []*fence
		cur     *fence
		body    strings.Builder
		blankOK bool // only blank lines since the last block closed
	)
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			info := strings.Fields(strings.TrimPrefix(trimmed, "```"))
			cur = &fence{page: page, line: n}
			if len(info) > 0 {
				cur.lang = info[0]
			}
			if blankOK && len(out) > 0 {
				out[len(out)-1].after = cur
			}
			body.Reset()
		case cur != nil && trimmed == "```":
			cur.body = body.String()
			out = append(out, cur)
			cur = nil
			blankOK = true
		case cur != nil:
			body.WriteString(line)
			body.WriteByte('\n')
		case trimmed != "":
			blankOK = false
		}
	}
	if cur != nil {
		t.Errorf("%s: block not closed", cur)
	}
	return out
}

// commands splits a shell block into its command lines: continuations
// joined, comment and blank lines dropped. Each has the line it starts on.
type command struct {
	line int
	text string
}

func commands(f *fence) []command {
	var out []command
	var cur strings.Builder
	start := 0
	for i, l := range strings.Split(f.body, "\n") {
		if cur.Len() == 0 {
			if t := strings.TrimSpace(l); t == "" || strings.HasPrefix(t, "#") {
				continue
			}
			start = f.line + 1 + i
		}
		if strings.HasSuffix(l, "\\") {
			cur.WriteString(strings.TrimSuffix(l, "\\"))
			cur.WriteByte(' ')
			continue
		}
		cur.WriteString(l)
		out = append(out, command{start, strings.TrimSpace(cur.String())})
		cur.Reset()
	}
	return out
}

// words splits a command line as the shell does for the simple lines the
// pages hold: quotes, backslashes, and a comment or a redirection or pipe
// ending the command.
func words(line string) []string {
	var (
		out   []string
		w     strings.Builder
		inW   bool
		quote rune
	)
	flush := func() {
		if inW {
			out = append(out, w.String())
		}
		w.Reset()
		inW = false
	}
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				w.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inW = r, true
		case r == '\\' && i+1 < len(rs):
			i++
			w.WriteRune(rs[i])
			inW = true
		case r == ' ' || r == '\t':
			flush()
		case !inW && (r == '#' || r == '>' || r == '|' || r == '<' || r == ';' || r == '&'):
			flush()
			return out
		default:
			w.WriteRune(r)
			inW = true
		}
	}
	flush()
	return out
}

// servers are the commands that serve until stopped: a block runs them in
// the background, runs its other commands against them, then stops them
// with SIGTERM and expects a clean exit.
var servers = [][]string{
	{"cmp", "serve"}, {"cmp", "preview"}, {"generator", "serve"}, {"layers", "controller"}, {"operator", "run"},
}

func isServer(args []string) bool {
	for _, s := range servers {
		if len(args) >= len(s) && slices.Equal(args[:len(s)], s) {
			return true
		}
	}
	return false
}

// checkParses finds the strata command args name and parses its flags
// without running it: the command exists, every flag exists and takes the
// value given.
func checkParses(args []string) error {
	root := cli.NewRoot(nil, nil, nil)
	cmd, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	if cmd == root {
		return fmt.Errorf("no strata command in %q", strings.Join(args, " "))
	}
	cmd.InitDefaultHelpFlag()
	if err := cmd.ParseFlags(rest); err != nil {
		return fmt.Errorf("%s: %w", cmd.CommandPath(), err)
	}
	if cmd.Args != nil {
		if err := cmd.Args(cmd, cmd.Flags().Args()); err != nil {
			return fmt.Errorf("%s: %w", cmd.CommandPath(), err)
		}
	}
	return nil
}

// TestDocCommandsParse checks every strata command line of the pages, run
// or shown only (```shell blocks: they need a cluster or Argo CD's pod):
// the command exists and takes the flags and arguments the page gives.
func TestDocCommandsParse(t *testing.T) {
	for _, page := range docPages(t) {
		for _, f := range fences(t, page) {
			if f.lang != "sh" && f.lang != "shell" {
				continue
			}
			if strings.HasPrefix(f.body, "#!") {
				continue // a script's text, not commands
			}
			for _, c := range commands(f) {
				args := words(c.text)
				if len(args) == 0 || args[0] != "strata" {
					continue
				}
				if err := checkParses(args[1:]); err != nil {
					t.Errorf("%s:%d: %s: %v", page, c.line, c.text, err)
				}
			}
		}
	}
}

// TestDocExamples runs every ```sh block of the pages as a user would, from
// a copy of the repository's examples, with the strata binary first in
// PATH: each command must succeed, servers (`cmp serve`, `generator
// serve`, …) run in the background while the block's other commands use
// them and must stop cleanly on SIGTERM, and when a block is followed
// right away by another block that is not a command block, the commands'
// output must be that block's text (a line `...` stands for any lines).
// Blocks that cannot run on a laptop (a cluster, Argo CD's pod, the whole
// test suite) are ```shell and only parsed.
func TestDocExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the strata binary")
	}
	bin := filepath.Dir(testbin.Strata(t))
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, page := range docPages(t) {
		for _, f := range fences(t, page) {
			if f.lang != "sh" || strings.HasPrefix(f.body, "#!") {
				continue
			}
			n++
			t.Run(f.String(), func(t *testing.T) { runBlock(t, root, bin, f) })
		}
	}
	if n < 10 {
		t.Errorf("ran %d example blocks; the pages have more", n)
	}
}

func runBlock(t *testing.T, root, bin string, f *fence) {
	work := t.TempDir()
	if err := os.CopyFS(filepath.Join(work, "examples"), os.DirFS(filepath.Join(root, "examples"))); err != nil {
		t.Fatal(err)
	}
	// A clone: the repository root the commands find is the copy's.
	if err := os.Mkdir(filepath.Join(work, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	env := append(os.Environ(),
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+home, "KUBECONFIG=", "NO_COLOR=1")
	dir := work
	var out bytes.Buffer
	type server struct {
		c       command
		cmd     *exec.Cmd
		started time.Time
		stderr  *bytes.Buffer
		done    chan struct{} // closed when it has exited, err set
		err     error
	}
	var running []*server
	stop := func() {
		for _, s := range running {
			// A server stopped before it could install its handler
			// would die of the signal; one second covers start-up.
			time.Sleep(time.Until(s.started.Add(time.Second)))
			_ = s.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-s.done:
				if s.err != nil {
					t.Errorf("%s:%d: %s: on SIGTERM: %v\n%s", f.page, s.c.line, s.c.text, s.err, s.stderr)
				}
			case <-time.After(20 * time.Second):
				_ = s.cmd.Process.Kill()
				<-s.done
				t.Errorf("%s:%d: %s: still running 20s after SIGTERM\n%s", f.page, s.c.line, s.c.text, s.stderr)
			}
		}
		running = nil
	}
	defer stop()
	for _, c := range commands(f) {
		args := words(c.text)
		if len(args) == 2 && args[0] == "cd" {
			dir = filepath.Join(dir, args[1])
			continue
		}
		if len(args) > 1 && args[0] == "strata" && isServer(args[1:]) {
			s := &server{c: c, stderr: new(bytes.Buffer), done: make(chan struct{}), started: time.Now()}
			s.cmd = exec.Command("bash", "-c", "exec "+c.text)
			s.cmd.Dir, s.cmd.Env, s.cmd.Stderr = dir, env, s.stderr
			if err := s.cmd.Start(); err != nil {
				t.Fatal(err)
			}
			go func() { s.err = s.cmd.Wait(); close(s.done) }()
			running = append(running, s)
			continue
		}
		// With a server starting, retry until it answers.
		deadline := time.Now().Add(60 * time.Second)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			cmd := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", c.text)
			var stdout, stderr bytes.Buffer
			cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, &stdout, &stderr
			err := cmd.Run()
			cancel()
			if err == nil {
				out.Write(stdout.Bytes())
				break
			}
			for _, s := range running {
				select {
				case <-s.done:
					t.Fatalf("%s:%d: %s: exited while the block ran: %v\n%s", f.page, s.c.line, s.c.text, s.err, s.stderr)
				default:
				}
			}
			if len(running) == 0 || time.Now().After(deadline) {
				var ee *exec.ExitError
				code := -1
				if errors.As(err, &ee) {
					code = ee.ExitCode()
				}
				t.Fatalf("%s:%d: %s: exit %d\n%s%s", f.page, c.line, c.text, code, stdout.String(), stderr.String())
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	stop()
	if f.after == nil || f.after.lang == "sh" || f.after.lang == "shell" {
		return
	}
	got := strings.ReplaceAll(out.String(), work, "")
	if err := matchOutput(f.after.body, got); err != nil {
		t.Errorf("%s: the output of %s is not what %s shows: %v\ngot:\n%s", f.page, f, f.after, err, got)
	}
}

// matchOutput compares output with the text a page shows: line by line,
// trailing spaces and blank lines at the end ignored; a line `...` in want
// matches any number of lines.
func matchOutput(want, got string) error {
	norm := func(s string) []string {
		ls := strings.Split(strings.TrimRight(s, "\n "), "\n")
		for i := range ls {
			ls[i] = strings.TrimRight(ls[i], " \t")
		}
		return ls
	}
	w, g := norm(want), norm(got)
	var match func(i, j int) bool
	match = func(i, j int) bool {
		for i < len(w) {
			if strings.TrimSpace(w[i]) == "..." {
				for k := j; k <= len(g); k++ {
					if match(i+1, k) {
						return true
					}
				}
				return false
			}
			if j >= len(g) || w[i] != g[j] {
				return false
			}
			i, j = i+1, j+1
		}
		return j == len(g)
	}
	if match(0, 0) {
		return nil
	}
	// Name the first line that differs, ignoring wildcards' reach.
	for i := 0; i < len(w) && i < len(g); i++ {
		if strings.TrimSpace(w[i]) == "..." {
			break
		}
		if w[i] != g[i] {
			return fmt.Errorf("line %d: page shows %q, command prints %q", i+1, w[i], g[i])
		}
	}
	return fmt.Errorf("page shows %d lines, command prints %d", len(w), len(g))
}

// TestMatchOutput pins the comparison the examples test relies on.
func TestMatchOutput(t *testing.T) {
	tests := []struct {
		want, got string
		ok        bool
	}{
		{"a\nb\n", "a\nb\n", true},
		{"a\nb\n", "a\nb  \n\n", true},
		{"a\nb\n", "a\nc\n", false},
		{"a\n...\nd\n", "a\nb\nc\nd\n", true},
		{"a\n...\nd\n", "a\nd\n", true},
		{"a\n...\nd\n", "a\nb\nc\n", false},
		{"a\n...\n", "a\nb\n", true},
		{"a\n", "a\nb\n", false},
	}
	for _, tc := range tests {
		if err := matchOutput(tc.want, tc.got); (err == nil) != tc.ok {
			t.Errorf("matchOutput(%q, %q) = %v, want ok=%v", tc.want, tc.got, err, tc.ok)
		}
	}
}

// headingRE matches an ATX heading; anchorRE an explicit HTML anchor.
var (
	headingRE = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	anchorRE  = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	linkRE    = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	codeRE    = regexp.MustCompile("`[^`]*`")
)

// slug is GitHub's anchor for a heading: lower case, punctuation other
// than '-' and '_' dropped, spaces to '-'.
func slug(h string) string {
	h = codeRE.ReplaceAllStringFunc(h, func(s string) string { return strings.Trim(s, "`") })
	h = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(h, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the anchors a page defines.
func anchors(t *testing.T, page string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		for _, m := range anchorRE.FindAllStringSubmatch(l, -1) {
			out[m[1]] = true
		}
		m := headingRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// TestDocLinks checks every relative link of the pages: the file exists,
// and the anchor, if any, is a heading of the page linked to.
func TestDocLinks(t *testing.T) {
	cache := map[string]map[string]bool{}
	n := 0
	for _, page := range docPages(t) {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		inFence := false
		for i, l := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "```") {
				inFence = !inFence
				continue
			}
			if inFence {
				continue
			}
			l = codeRE.ReplaceAllString(l, "")
			for _, m := range linkRE.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				n++
				file, anchor, _ := strings.Cut(target, "#")
				path := page
				if file != "" {
					path = filepath.Join(filepath.Dir(page), file)
				}
				info, err := os.Stat(path)
				if err != nil {
					t.Errorf("%s:%d: link %s: %s does not exist", page, i+1, target, path)
					continue
				}
				if anchor == "" {
					continue
				}
				if info.IsDir() || !strings.HasSuffix(path, ".md") {
					t.Errorf("%s:%d: link %s: an anchor into %s, which is not a page", page, i+1, target, path)
					continue
				}
				a, ok := cache[path]
				if !ok {
					a = anchors(t, path)
					cache[path] = a
				}
				if !a[anchor] {
					t.Errorf("%s:%d: link %s: %s has no heading #%s", page, i+1, target, path, anchor)
				}
			}
		}
	}
	if n < 20 {
		t.Errorf("checked %d relative links; the pages have more", n)
	}
}

// TestSlug pins GitHub's heading anchors for the shapes the pages use.
func TestSlug(t *testing.T) {
	for h, want := range map[string]string{
		"Hostile inputs":                      "hostile-inputs",
		"What strata checks":                  "what-strata-checks",
		"`strata cmp serve` flags":            "strata-cmp-serve-flags",
		"Issue 23 — hostile inputs":           "issue-23--hostile-inputs",
		"Load and fault run (generator)":      "load-and-fault-run-generator",
		"Helm: values, `--set` & friends":     "helm-values---set--friends",
		"[Link](x.md) in a heading":           "link-in-a-heading",
		"Argo CD v3.2.11: GenerateManifest.":  "argo-cd-v3211-generatemanifest",
		"x-deckhouse-validations (CEL rules)": "x-deckhouse-validations-cel-rules",
	} {
		if got := slug(h); got != want {
			t.Errorf("slug(%q) = %q, want %q", h, got, want)
		}
	}
}
