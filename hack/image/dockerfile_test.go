package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/hack/internal/release"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	line int
	cmd  string // upper case
	args string
}

// parseDockerfile splits a Dockerfile into stages of instructions: the
// subset of the syntax the repository's Dockerfile uses (comments,
// backslash continuations, JSON and shell forms).
func parseDockerfile(text string) ([][]instruction, error) {
	var stages [][]instruction
	var cur strings.Builder
	start := 0
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		trimmed := strings.TrimSpace(l)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		if body, ok := strings.CutSuffix(trimmed, "\\"); ok {
			cur.WriteString(body + " ")
			continue
		}
		cur.WriteString(trimmed)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		cur.Reset()
		in := instruction{line: start, cmd: strings.ToUpper(cmd), args: strings.Join(strings.Fields(args), " ")}
		if in.cmd == "FROM" {
			stages = append(stages, nil)
		}
		if len(stages) == 0 {
			if in.cmd == "ARG" {
				continue
			}
			return nil, fmt.Errorf("line %d: %s before FROM", in.line, in.cmd)
		}
		stages[len(stages)-1] = append(stages[len(stages)-1], in)
	}
	if cur.Len() != 0 {
		return nil, fmt.Errorf("line %d: the last instruction ends in a backslash", start)
	}
	return stages, nil
}

// words splits shell-form arguments: spaces separate, double quotes group.
func words(s string) []string {
	var out []string
	var cur strings.Builder
	quoted, any := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, any = !quoted, true
		case r == ' ' && !quoted:
			if any {
				out = append(out, cur.String())
			}
			cur.Reset()
			any = false
		default:
			cur.WriteRune(r)
			any = true
		}
	}
	if any {
		out = append(out, cur.String())
	}
	return out
}

// keyValues reads LABEL/ENV/ARG pairs: key=value, the value maybe quoted.
func keyValues(t *testing.T, in instruction) [][2]string {
	t.Helper()
	var kv [][2]string
	for _, w := range words(in.args) {
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			if in.cmd == "ARG" {
				kv = append(kv, [2]string{k, ""})
				continue
			}
			t.Fatalf("Dockerfile:%d: %s %q is not key=value", in.line, in.cmd, w)
		}
		kv = append(kv, [2]string{k, v})
	}
	return kv
}

// TestDockerfile checks that the Dockerfile builds what hack/image builds:
// its build stage writes the file system with hack/image -rootfs, stamped
// from the build arguments; its final stage, from scratch, copies that
// file system, gives nonroot's home to nonroot, and sets the same user,
// entrypoint, environment and labels as Image.
func TestDockerfile(t *testing.T) {
	data, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	stages, err := parseDockerfile(string(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(stages) != 2 {
		t.Fatalf("Dockerfile has %d stages, want 2 (build, then the image from scratch)", len(stages))
	}
	build, final := stages[0], stages[1]

	// The build stage: hack/image -rootfs for the target platform.
	if f := words(build[0].args); len(f) < 3 || f[len(f)-2] != "AS" || f[len(f)-1] != "build" {
		t.Errorf("Dockerfile:%d: FROM %s; want a stage named build", build[0].line, build[0].args)
	}
	var run []string
	for _, in := range build {
		if in.cmd == "RUN" && strings.Contains(in.args, "./hack/image") {
			run = words(in.args)
		}
	}
	wantRun := []string{"go", "run", "./hack/image", "-rootfs", "/rootfs", "-platforms", "$TARGETOS/$TARGETARCH",
		"-version", "$VERSION", "-commit", "$REVISION", "-date", "$CREATED"}
	if diff := cmp.Diff(wantRun, run); diff != "" {
		t.Errorf("the build stage's RUN of hack/image mismatch (-want +got):\n%s", diff)
	}

	// The final stage.
	got := map[string]any{}
	labels := map[string]string{}
	var env, copies []string
	for _, in := range final {
		switch in.cmd {
		case "FROM":
			got["from"] = in.args
		case "USER":
			got["user"] = in.args
		case "ENTRYPOINT":
			var argv []string
			if err := json.Unmarshal([]byte(in.args), &argv); err != nil {
				t.Errorf("Dockerfile:%d: ENTRYPOINT %s: use the JSON form: %v", in.line, in.args, err)
			}
			got["entrypoint"] = argv
		case "ENV":
			for _, kv := range keyValues(t, in) {
				env = append(env, kv[0]+"="+kv[1])
			}
		case "LABEL":
			for _, kv := range keyValues(t, in) {
				labels[kv[0]] = kv[1]
			}
		case "COPY":
			copies = append(copies, in.args)
		case "ARG":
		default:
			t.Errorf("Dockerfile:%d: %s in the final stage: hack/image has no equivalent; add it to both (and to this test)", in.line, in.cmd)
		}
	}
	got["env"], got["labels"], got["copies"] = env, labels, copies

	// What Image sets, with the build arguments in place of the source.
	stamp := release.Source{Version: "v9.8.7", Commit: "c0ffee", Time: time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)}
	args := map[string]string{stamp.Version: "$VERSION", stamp.Commit: "$REVISION", stamp.Time.Format(time.RFC3339): "$CREATED"}
	wantLabels := map[string]string{}
	for k, v := range Labels(stamp) {
		if a, ok := args[v]; ok {
			v = a
		}
		wantLabels[k] = v
	}
	// The file system is hack/image -rootfs's, owned by root except the
	// entries rootfs gives to another owner.
	wantCopies := []string{"--from=build /rootfs/ /"}
	for _, e := range rootfs("strata") {
		if e.UID != 0 || e.GID != 0 {
			wantCopies = append(wantCopies, "--from=build --chown="+strconv.Itoa(e.UID)+":"+strconv.Itoa(e.GID)+" /rootfs/"+e.Name+" /"+e.Name)
		}
	}
	want := map[string]any{
		"from":       "scratch",
		"user":       User,
		"entrypoint": []string{Binary},
		"env":        slices.Clone(Env),
		"labels":     wantLabels,
		"copies":     wantCopies,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the Dockerfile's image differs from hack/image's (-hack/image +Dockerfile):\n%s", diff)
	}
}

func TestParseDockerfile(t *testing.T) {
	stages, err := parseDockerfile("ARG X=1\n# c\nFROM a AS b\nRUN x \\\n  y\n\nFROM scratch\nLABEL a=\"b c\" d=e\n")
	if err != nil {
		t.Fatal(err)
	}
	want := [][]instruction{
		{{3, "FROM", "a AS b"}, {4, "RUN", "x y"}},
		{{7, "FROM", "scratch"}, {8, "LABEL", `a="b c" d=e`}},
	}
	if diff := cmp.Diff(want, stages, cmp.AllowUnexported(instruction{})); diff != "" {
		t.Errorf("parseDockerfile mismatch (-want +got):\n%s", diff)
	}
	if got := words(`a="b c" d=e ""`); !slices.Equal(got, []string{"a=b c", "d=e", ""}) {
		t.Errorf("words = %q", got)
	}
	if _, err := parseDockerfile("RUN x\n"); err == nil {
		t.Error("parseDockerfile accepted RUN before FROM")
	}
}
