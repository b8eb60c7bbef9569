package cli_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/strata-dev/strata/internal/cli"
)

var update = flag.Bool("update", false, "rewrite the stdout and stderr sections of testdata/script/*.txtar")

// TestScripts runs each testdata/script/*.txtar: its comment holds the
// command line ("args: ...", split like a shell, single quotes group) and
// optionally "exit: N", "stdin: FILE" and "absent: FILE" (a file the
// command must not create); its files are written to a
// temporary directory the command runs in; "stdout" and "stderr" hold what
// it must print.
func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/script/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no scripts found")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			runScript(t, file)
		})
	}
}

func runScript(t *testing.T, file string) {
	file, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	ar, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	wantExit := 0
	stdinFile := ""
	var absent []string
	for _, line := range strings.Split(string(ar.Comment), "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		val = strings.TrimSpace(val)
		switch key {
		case "args":
			args = splitArgs(t, val)
		case "exit":
			if wantExit, err = strconv.Atoi(val); err != nil {
				t.Fatalf("bad exit line %q", line)
			}
		case "stdin":
			stdinFile = val
		case "absent":
			absent = append(absent, val)
		}
	}
	dir := t.TempDir()
	want := map[string]string{}
	for _, f := range ar.Files {
		if f.Name == "stdout" || f.Name == "stderr" {
			want[f.Name] = string(f.Data)
			continue
		}
		p := filepath.Join(dir, f.Name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	var stdin bytes.Buffer
	if stdinFile != "" {
		data, err := os.ReadFile(stdinFile)
		if err != nil {
			t.Fatal(err)
		}
		stdin.Write(data)
	}
	var stdout, stderr bytes.Buffer
	code := cli.Main(context.Background(), args, &stdin, &stdout, &stderr)
	got := map[string]string{"stdout": stdout.String(), "stderr": stderr.String()}
	if *update {
		var out []txtar.File
		for _, f := range ar.Files {
			if f.Name != "stdout" && f.Name != "stderr" {
				out = append(out, f)
			}
		}
		for _, name := range []string{"stdout", "stderr"} {
			if got[name] != "" {
				out = append(out, txtar.File{Name: name, Data: []byte(got[name])})
			}
		}
		ar.Files = out
		if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if code != wantExit {
		t.Errorf("strata %s: exit %d, want %d\nstderr:\n%s", strings.Join(args, " "), code, wantExit, stderr.String())
	}
	for _, f := range absent {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("strata %s: %s exists, but the command must not write it", strings.Join(args, " "), f)
		}
	}
	for _, name := range []string{"stdout", "stderr"} {
		if diff := cmp.Diff(want[name], got[name]); diff != "" && !*update {
			t.Errorf("strata %s: %s mismatch (-want +got):\n%s", strings.Join(args, " "), name, diff)
		}
	}
}

// splitArgs splits a command line on spaces; single quotes group words.
func splitArgs(t *testing.T, s string) []string {
	var args []string
	var cur strings.Builder
	inQuote, inWord := false, false
	for _, r := range s {
		switch {
		case r == '\'':
			inQuote = !inQuote
			inWord = true
		case r == ' ' && !inQuote:
			if inWord {
				args = append(args, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inQuote {
		t.Fatalf("unbalanced quote in %q", s)
	}
	if inWord {
		args = append(args, cur.String())
	}
	return args
}

func TestVersion(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := cli.Main(context.Background(), []string{"version", "-o", "json"}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("version exit %d: %s", code, stderr.String())
	}
	for _, key := range []string{`"version"`, `"goVersion"`, `"platform"`} {
		if !strings.Contains(stdout.String(), key) {
			t.Errorf("version -o json = %s, want a %s field", stdout.String(), key)
		}
	}
}

func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		var stdout, stderr bytes.Buffer
		if code := cli.Main(context.Background(), []string{"completion", shell}, nil, &stdout, &stderr); code != 0 || stdout.Len() == 0 {
			t.Errorf("completion %s: exit %d, %d bytes, stderr %s", shell, code, stdout.Len(), stderr.String())
		}
	}
}
