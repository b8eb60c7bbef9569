package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/cli"
	"github.com/strata-dev/strata/internal/golden"
	"github.com/strata-dev/strata/internal/stamp"
)

// TestScripts runs each testdata/script/*.txtar: its comment holds the
// command line ("args: ...", split like a shell, single quotes group) and
// optionally "exit: N", "stdin: FILE" and "absent: FILE" (a file the
// command must not create); its files are written to a
// temporary directory the command runs in; "stdout" and "stderr" hold what
// it must print.
func TestScripts(t *testing.T) {
	golden.Run(t, "testdata/script/*.txtar", runScript)
}

func runScript(t *testing.T, c golden.Case) {
	var args []string
	wantExit := 0
	stdinFile := ""
	var absent []string
	for _, line := range strings.Split(string(c.Archive.Comment), "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		val = strings.TrimSpace(val)
		switch key {
		case "args":
			args = splitArgs(t, val)
		case "exit":
			var err error
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
	c.WriteFiles(t, dir, "stdout", "stderr")
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
	if code != wantExit {
		t.Errorf("strata %s: exit %d, want %d\nstderr:\n%s", strings.Join(args, " "), code, wantExit, stderr.String())
	}
	for _, f := range absent {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("strata %s: %s exists, but the command must not write it", strings.Join(args, " "), f)
		}
	}
	golden.Check(t, c.Path, "stdout", stdout.String())
	golden.Check(t, c.Path, "stderr", stderr.String())
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
	var got map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("version -o json = %s: %v", stdout.String(), err)
	}
	want := stamp.Get()
	for key, w := range map[string]any{"version": want.Version, "commit": want.Commit, "date": want.Date,
		"dirty": want.Dirty, "goVersion": want.GoVersion, "platform": want.Platform} {
		if got[key] != w {
			t.Errorf("version -o json: %s = %v, want %v", key, got[key], w)
		}
	}
	stdout.Reset()
	if code := cli.Main(context.Background(), []string{"version"}, nil, &stdout, &stderr); code != 0 || stdout.String() != want.String()+"\n" {
		t.Errorf("version = exit %d, %q; want %q", code, stdout.String(), want.String()+"\n")
	}
	stdout.Reset()
	if code := cli.Main(context.Background(), []string{"version", "-o", "yaml"}, nil, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "goVersion: "+want.GoVersion) {
		t.Errorf("version -o yaml = exit %d, %q; want goVersion: %s", code, stdout.String(), want.GoVersion)
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
