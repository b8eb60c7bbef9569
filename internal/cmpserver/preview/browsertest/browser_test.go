package browsertest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"sigs.k8s.io/yaml"

	"github.com/strata-dev/strata/internal/cli"
)

var screenshot = flag.String("screenshot", "", "write screenshots of the page (PNG) into this directory")

const (
	appDir = "../testdata/allkinds/app"
	plugin = "../testdata/allkinds/plugin.yaml"
	// repoRoot keeps each render's private copy small (the default, the
	// git work tree, is all of strata).
	repoRoot = "../testdata/allkinds"
)

// chromium finds the browser; CI must have it (.ci/run installs Debian's
// chromium package).
func chromium(t *testing.T) string {
	path, err := exec.LookPath("chromium")
	if err == nil {
		return path
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("chromium is not installed (CI=true): .ci/run installs Debian's chromium package; %v", err)
	}
	t.Skipf("chromium is not installed (apt-get install chromium): %v", err)
	return ""
}

// startPreview runs strata cmp preview in-process and returns its URL.
func startPreview(t *testing.T) string {
	return startPreviewOf(t, appDir, plugin, repoRoot)
}

// startPreviewOf runs strata cmp preview on an application of its own.
func startPreviewOf(t *testing.T, appDir, plugin, repoRoot string) string {
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, []string{"cmp", "preview", appDir, "--config", plugin, "--repo-root", repoRoot, "--app-name", "demo"}, nil, pw, &stderr)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("strata cmp preview exited %d: %s", code, stderr.String())
		}
	})
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("reading cmp preview's URL: %v (stderr: %s)", err, stderr.String())
	}
	go io.Copy(io.Discard, pr)
	url := regexp.MustCompile(`http://127\.0\.0\.1:\d+/[A-Za-z0-9_-]{43}/`).FindString(line)
	if url == "" {
		t.Fatalf("cmp preview printed %q, want a loopback URL with a token", line)
	}
	return url
}

func TestPage(t *testing.T) {
	exe := chromium(t)
	url := startPreview(t)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.WindowSize(1280, 1000),
		chromedp.Flag("disable-gpu", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	// The browser's first start is not bounded: a timeout would stop it.
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	ctx, cancelRun := context.WithTimeout(bctx, 45*time.Second)
	defer cancelRun()
	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// wait polls a JavaScript condition.
	wait := func(what, cond string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
			status, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("status").textContent + " | " + document.getElementById("error").textContent`))
			t.Fatalf("waiting for %s (%s): %v; page status: %s", what, cond, err, status)
		}
	}
	eval := func(expr string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("evaluating %s: %v", expr, err)
		}
		return s
	}
	manifests := `[...document.querySelectorAll("#manifests pre.manifest")].map(p => p.textContent).join("\n")`

	run("opening the page", chromedp.Navigate(url))
	wait("the form", `document.querySelectorAll("#fields .field").length === 7`)
	wait("the first render", `document.getElementById("status").textContent.startsWith("Rendered")`)

	// Every kind of parameter has its input.
	form := eval(`JSON.stringify([...document.querySelectorAll("#fields .field")].map(f => ({
		name: f.dataset.param,
		label: f.querySelector("label").textContent,
		help: (f.querySelector(".help") || {}).textContent || "",
		inputs: [...f.querySelectorAll("input")].map(i => i.type + "=" + (i.type === "checkbox" ? i.checked : i.value)),
		required: !!f.querySelector(".req"),
	})))`)
	type field struct {
		Name, Label, Help string
		Inputs            []string
		Required          bool
	}
	var got []field
	if err := json.Unmarshal([]byte(form), &got); err != nil {
		t.Fatal(err)
	}
	want := []field{
		{Name: "greeting", Label: "Greetinggreeting*", Help: "The text the application says first.", Inputs: []string{"text=hello"}, Required: true},
		{Name: "replicas", Label: "Replicasreplicas", Help: "How many copies run; a whole number.", Inputs: []string{"number=2"}},
		{Name: "debug", Label: "Debugdebug", Help: "Log every request.", Inputs: []string{"checkbox=false"}},
		{Name: "hosts", Label: "Hostshosts", Help: "The host names the application answers.", Inputs: []string{"text=a.example.com"}},
		{Name: "ports", Label: "Portsports", Inputs: []string{"number=80"}},
		{Name: "labels", Label: "Labelslabels", Help: "Labels added to every resource.", Inputs: []string{"text=team", "text=blue"}},
		{Name: "owner", Label: "Ownerowner*", Help: "Who answers pages; no default, so it must be set.", Inputs: []string{"text="}, Required: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("form =\n%+v\nwant\n%+v", got, want)
	}
	// Every input has a label a screen reader reads, and no control is
	// out of the keyboard's reach.
	if unlabelled := eval(`[...document.querySelectorAll("input, button")].filter(i => !(i.labels && i.labels.length) && !i.getAttribute("aria-label") && !(i.tagName === "BUTTON" && i.textContent.trim()) || i.tabIndex < 0).map(i => i.outerHTML).join("\n")`); unlabelled != "" {
		t.Errorf("controls without a label, or out of the tab order:\n%s", unlabelled)
	}
	// The required owner, unset, is marked at its field.
	wait("owner marked required", `!document.querySelector('[data-param="owner"] .field-error').hidden`)
	if before := eval(manifests); strings.Contains(before, "PARAM_OWNER") {
		t.Fatalf("the defaults' render sets the owner:\n%s", before)
	}

	// Changing values changes the manifests.
	run("setting the owner", chromedp.SendKeys(chromedp.CSS(`[data-param="owner"] input`), "ops"))
	wait("the owner in the manifests", manifests+`.includes("PARAM_OWNER: ops")`)
	run("switching debug on", chromedp.Click(chromedp.CSS(`[data-param="debug"] input`)))
	wait("debug in the manifests", manifests+`.includes('PARAM_DEBUG: "true"')`)
	run("adding a host", chromedp.Click(chromedp.CSS(`[data-param="hosts"] button[aria-label="Add an item to Hosts"]`)),
		chromedp.SendKeys(chromedp.CSS(`[data-param="hosts"] .row:nth-child(2) input`), "b.example.com"))
	wait("the second host", manifests+`.includes("PARAM_HOSTS_1: b.example.com")`)
	wait("the diff against the defaults", `document.getElementById("diff").textContent.includes("+  PARAM_OWNER: ops")`)
	wait("the resource list", `[...document.querySelectorAll("#resources a")].map(a => a.textContent).join(",") === "ConfigMap default/demo-params,Service default/demo"`)
	if *screenshot != "" {
		eval(`document.activeElement.blur(); document.getElementById("inputs").scrollTop = 0; document.getElementById("diff-box").open = true; window.scrollTo(0, 0); ""`)
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(*screenshot, "cmp-preview.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// A bad value: the command fails, and its stderr shows at the field.
	run("a fractional replicas", chromedp.SendKeys(chromedp.CSS(`[data-param="replicas"] input`), ".5"))
	wait("the error at replicas", `document.querySelector('[data-param="replicas"] .field-error').textContent.includes('"2.5" is not a whole number')`)
	if msg := eval(`document.getElementById("error").textContent`); !strings.Contains(msg, "parameter replicas") {
		t.Errorf("the error box says %q, want it to name parameter replicas", msg)
	}
	run("fixing replicas", chromedp.SetValue(chromedp.CSS(`[data-param="replicas"] input`), ""), chromedp.SendKeys(chromedp.CSS(`[data-param="replicas"] input`), "3"))
	wait("the render again", `document.getElementById("error").hidden && `+manifests+`.includes('PARAM_REPLICAS: "3"')`)

	// A narrow window: one column, nothing wider than the window.
	run("a narrow window", chromedp.EmulateViewport(420, 900))
	wait("one column", `document.getElementById("outputs").getBoundingClientRect().top >= document.getElementById("inputs").getBoundingClientRect().bottom && document.documentElement.scrollWidth <= window.innerWidth`)
	run("a wide window again", chromedp.EmulateViewport(1280, 1000))

	// The block the copy button copies, fed to cmp generate --parameters,
	// gives the page's manifests.
	eval(`window.copied = ""; navigator.clipboard.writeText = async (t) => { window.copied = t; }; ""`)
	run("copying the plugin block", chromedp.Click(chromedp.CSS(`button[data-copy="plugin-block"]`)))
	wait("the copied block", `window.copied.startsWith("plugin:")`)
	block := eval(`window.copied`)
	var app struct {
		Plugin struct {
			Name       string            `json:"name"`
			Parameters []json.RawMessage `json:"parameters"`
		} `json:"plugin"`
	}
	if err := yaml.UnmarshalStrict([]byte(block), &app); err != nil {
		t.Fatalf("the copied block: %v\n%s", err, block)
	}
	file := filepath.Join(t.TempDir(), "parameters.json")
	b, _ := json.Marshal(app.Plugin.Parameters)
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var out, stderr bytes.Buffer
	if code := cli.Main(context.Background(), []string{"cmp", "generate", appDir, "--config", plugin, "--repo-root", repoRoot, "--app-name", "demo", "--parameters", file}, nil, &out, &stderr); code != 0 {
		t.Fatalf("cmp generate --parameters (the copied block's) exited %d: %s", code, stderr.String())
	}
	if page, gen := docs(t, eval(manifests)), docs(t, out.String()); !reflect.DeepEqual(page, gen) {
		t.Errorf("cmp generate with the copied block gave\n%v\nthe page shows\n%v", gen, page)
	}
}

// docs reads a YAML stream into its documents.
func docs(t *testing.T, stream string) []any {
	t.Helper()
	var out []any
	for _, d := range strings.Split("\n"+stream, "\n---\n") {
		if strings.TrimSpace(d) == "" {
			continue
		}
		var v any
		if err := yaml.Unmarshal([]byte(d), &v); err != nil {
			t.Fatal(errors.Join(err, errors.New(d)))
		}
		out = append(out, v)
	}
	return out
}

// TestWatch: when a file of the application changes, the page reads the
// dynamic announcement again (a new parameter appears, the value set in
// the form stays) and renders again, with no click.
func TestWatch(t *testing.T) {
	exe := chromium(t)
	repo := t.TempDir()
	app := filepath.Join(repo, "app")
	if err := os.MkdirAll(app, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(app, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(repo, "plugin.yaml")
	if err := os.WriteFile(cfg, []byte(`apiVersion: argoproj.io/v1alpha1
kind: ConfigManagementPlugin
metadata:
  name: dynamic
spec:
  generate:
    command: [sh, -c, 'printf "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n" "$(cat name)-${PARAM_SUFFIX:-none}"']
  parameters:
    dynamic:
      command: [cat, params.json]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	write("params.json", `[{"name": "suffix", "title": "Suffix"}]`)
	write("name", "first")
	url := startPreviewOf(t, app, cfg, repo)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.Flag("disable-gpu", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	ctx, cancelRun := context.WithTimeout(bctx, 45*time.Second)
	defer cancelRun()
	wait := func(what, cond string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
			status, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("status").textContent + " | " + document.getElementById("error").textContent`))
			t.Fatalf("waiting for %s (%s): %v; page status: %s", what, cond, err, status)
		}
	}
	manifests := `[...document.querySelectorAll("#manifests pre.manifest")].map(p => p.textContent).join("\n")`
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	wait("the form", `document.querySelectorAll("#fields .field").length === 1`)
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`[data-param="suffix"] input`), "blue")); err != nil {
		t.Fatal(err)
	}
	wait("the render with the value", manifests+`.includes("name: first-blue")`)

	write("name", "second")
	wait("a render after the file changed", manifests+`.includes("name: second-blue")`)
	write("params.json", `[{"name": "suffix", "title": "Suffix"}, {"name": "extra", "title": "Extra"}]`)
	wait("the new parameter", `document.querySelectorAll("#fields .field").length === 2`)
	wait("the value kept", `document.querySelector('[data-param="suffix"] input').value === "blue"`)
}
