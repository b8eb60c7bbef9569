package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/strata-dev/strata/internal/cmpserver"
	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/helmplugin"
	"github.com/strata-dev/strata/internal/params"
	"github.com/strata-dev/strata/internal/values"
)

// helmCLIFlags are `helm template`'s own flags on `cmp generate` and `cmp
// parameters --builtin helm`. Each maps onto a parameter of the built-in
// Helm plugin, the one an Application would set, so a local run and the
// sidecar take one code path; --print-parameters shows the mapping.
type helmCLIFlags struct {
	valuesFiles    []string
	set            []string
	setString      []string
	setFile        []string
	setJSON        []string
	releaseName    string
	includeCRDs    bool
	skipCRDs       bool
	skipTests      bool
	skipSchema     bool
	printParameter bool
	version        string
}

func (h *helmCLIFlags) bind(fs *pflag.FlagSet) {
	fs.StringArrayVarP(&h.valuesFiles, "values", "f", nil, "with --builtin helm: a values file, as helm's -f (the values-files parameter; a file of the repository)")
	fs.StringArrayVar(&h.set, "set", nil, "with --builtin helm: KEY=VALUE[,KEY=VALUE], as helm's --set (helm-parameters)")
	fs.StringArrayVar(&h.setString, "set-string", nil, "with --builtin helm: as helm's --set-string (helm-string-parameters)")
	fs.StringArrayVar(&h.setFile, "set-file", nil, "with --builtin helm: KEY=PATH, as helm's --set-file (file-parameters; a file of the repository)")
	fs.StringArrayVar(&h.setJSON, "set-json", nil, "with --builtin helm: KEY=JSON, as helm's --set-json (merged into the values parameter)")
	fs.StringVar(&h.releaseName, "release-name", "", "with --builtin helm: the release name (release-name; also the first of two arguments, as helm template NAME CHART)")
	fs.BoolVar(&h.includeCRDs, "include-crds", false, "with --builtin helm: render the chart's crds/ (the default, as Argo CD renders)")
	fs.BoolVar(&h.skipCRDs, "skip-crds", false, "with --builtin helm: leave the chart's crds/ out (skip-crds)")
	fs.BoolVar(&h.skipTests, "skip-tests", false, "with --builtin helm: leave test hooks out, as helm's --skip-tests (skip-tests)")
	fs.BoolVar(&h.skipSchema, "skip-schema-validation", false, "with --builtin helm: do not validate the values against values.schema.json (skip-schema-validation)")
	fs.StringVar(&h.version, "version", "", "with --builtin helm and a chart from a repository (oci://HOST/PATH/CHART or REPO/CHART): the chart's version or range, as helm's --version (default: the newest)")
	fs.BoolVar(&h.printParameter, "print-parameters", false, "print the Application's spec.source.plugin.parameters that the flags equal, and exit (YAML; -o json for JSON)")
}

// used reports whether a Helm flag other than --print-parameters was given.
func (h *helmCLIFlags) used() []string {
	var out []string
	add := func(set bool, flag string) {
		if set {
			out = append(out, flag)
		}
	}
	add(len(h.valuesFiles) > 0, "--values")
	add(len(h.set) > 0, "--set")
	add(len(h.setString) > 0, "--set-string")
	add(len(h.setFile) > 0, "--set-file")
	add(len(h.setJSON) > 0, "--set-json")
	add(h.releaseName != "", "--release-name")
	add(h.includeCRDs, "--include-crds")
	add(h.skipCRDs, "--skip-crds")
	add(h.skipTests, "--skip-tests")
	add(h.skipSchema, "--skip-schema-validation")
	add(h.version != "", "--version")
	return out
}

// apply adds the parameters the Helm flags stand for to b, after those
// --parameters and --param* set: values files and file parameters as
// paths from appDir inside root, --set lists split into entries.
func (h *helmCLIFlags) apply(b *params.Builder, appDir, root string) error {
	if h.includeCRDs && h.skipCRDs {
		return errors.New("--include-crds and --skip-crds: give one")
	}
	for _, f := range h.valuesFiles {
		p, err := repoFile("--values", f, appDir, root)
		if err != nil {
			return err
		}
		b.AppendArray(helmplugin.ParamValuesFiles, p)
	}
	for _, kinds := range []struct {
		flag, param string
		args        []string
	}{
		{"--set", helmplugin.ParamHelmParameters, h.set},
		{"--set-string", helmplugin.ParamHelmStringParameters, h.setString},
		{"--set-file", helmplugin.ParamFileParameters, h.setFile},
	} {
		for _, arg := range kinds.args {
			entries, err := splitSet(arg)
			if err != nil {
				return fmt.Errorf("%s %q: %w", kinds.flag, arg, err)
			}
			for _, e := range entries {
				if kinds.flag == "--set-file" {
					if e.value, err = repoFile("--set-file "+e.key, e.value, appDir, root); err != nil {
						return err
					}
				}
				b.SetMapEntry(kinds.param, e.key, e.value)
			}
		}
	}
	if len(h.setJSON) > 0 {
		tree := map[string]any{}
		if v := b.Get(helmplugin.ParamValues); v != nil && v.String != nil && strings.TrimSpace(*v.String) != "" {
			t, err := document.Parse([]byte(*v.String), "the values parameter")
			if err != nil {
				return err
			}
			tree = t
		}
		for _, arg := range h.setJSON {
			if err := values.ApplySet(tree, values.SetJSON, arg, nil); err != nil {
				return err
			}
		}
		out, err := yaml.Marshal(tree)
		if err != nil {
			return fmt.Errorf("--set-json: %w", err)
		}
		s := string(out)
		b.SetString(helmplugin.ParamValues, s)
	}
	if h.releaseName != "" {
		b.SetString(helmplugin.ParamReleaseName, h.releaseName)
	}
	for _, f := range []struct {
		set   bool
		param string
	}{{h.skipCRDs, helmplugin.ParamSkipCRDs}, {h.skipTests, helmplugin.ParamSkipTests}, {h.skipSchema, helmplugin.ParamSkipSchemaValidation}} {
		if f.set {
			b.SetString(f.param, "true")
		}
	}
	return nil
}

// repoFile maps a file named on the command line (relative to the working
// directory, as helm reads it) to the path an Application's parameter
// gives: relative to the chart's directory, inside the repository.
func repoFile(flag, name, appDir, root string) (string, error) {
	if strings.Contains(name, "://") {
		return "", fmt.Errorf("%s %s: a URL; the plugin never fetches values files (as Argo CD): download it into the repository", flag, name)
	}
	if name == "-" {
		return "", fmt.Errorf("%s -: standard input is not a file of the repository; write the values to a file in it, or use the values parameter (--param values=...)", flag)
	}
	abs, err := filepath.Abs(name)
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", flag, name, err)
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return "", err
	}
	if rel, err := filepath.Rel(absRoot, abs); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s %s: the file is outside the repository %s; an Application's values come from its repository: copy the file into it, or pass the values with --set", flag, name, root)
	}
	if _, err := os.Stat(abs); err != nil {
		return "", fmt.Errorf("%s %s: %w", flag, name, errors.Unwrap(err))
	}
	absApp, err := filepath.Abs(appDir)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(absApp, abs)
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", flag, name, err)
	}
	return filepath.ToSlash(rel), nil
}

type setEntry struct{ key, value string }

// splitSet splits a --set argument into its assignments, as helm does:
// at commas outside braces ({a,b} is one list value) and not escaped by a
// backslash. An escaped comma in a value becomes a plain one: the plugin
// escapes commas in helm-parameters values itself, as Argo CD does.
func splitSet(arg string) ([]setEntry, error) {
	var (
		out   []setEntry
		cur   strings.Builder
		depth int
	)
	flush := func() error {
		s := cur.String()
		cur.Reset()
		key, value, ok := strings.Cut(s, "=")
		if !ok || key == "" {
			return fmt.Errorf("%q is not KEY=VALUE", s)
		}
		out = append(out, setEntry{key, value})
		return nil
	}
	for i := 0; i < len(arg); i++ {
		c := arg[i]
		switch {
		case c == '\\' && i+1 < len(arg):
			if arg[i+1] == ',' && strings.Contains(cur.String(), "=") && depth == 0 {
				cur.WriteByte(',') // a comma inside a value
			} else {
				cur.WriteByte(c)
				cur.WriteByte(arg[i+1])
			}
			i++
		case c == '{':
			depth++
			cur.WriteByte(c)
		case c == '}':
			if depth > 0 {
				depth--
			}
			cur.WriteByte(c)
		case c == ',' && depth == 0:
			if err := flush(); err != nil {
				return nil, err
			}
		default:
			cur.WriteByte(c)
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

// helmArgs checks the arguments of cmp generate and cmp parameters: APPDIR,
// or, with --builtin helm, NAME APPDIR as helm template takes them.
func helmArgs(f *localFlags) cobra.PositionalArgs {
	one := positional("APPDIR")
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 2 && f.plugin.builtin == "helm" {
			if f.helm.releaseName != "" && f.helm.releaseName != args[0] {
				return fmt.Errorf("release name %q and --release-name %q: give one", args[0], f.helm.releaseName)
			}
			return nil
		}
		return one(cmd, args)
	}
}

// takeReleaseName moves a release name given as the first of two
// arguments (helm template NAME CHART) to --release-name, and returns the
// arguments left: APPDIR.
func (h *helmCLIFlags) takeReleaseName(args []string) []string {
	if len(args) == 2 {
		h.releaseName = args[0]
		return args[1:]
	}
	return args
}

// remoteChart fetches the chart ref names (oci://… or REPO/CHART, as helm
// template takes it) into a private directory that stands for its
// repository, with copies of the values files and --set-file files the
// flags name, wherever they are. It returns the chart's directory, the
// repository root, and a function removing both.
func (f *localFlags) remoteChart(ctx context.Context, ref string) (appDir, root string, cleanup func(), err error) {
	root, err = os.MkdirTemp("", "strata-chart-")
	if err != nil {
		return "", "", nil, err
	}
	remove := func() { os.RemoveAll(root) }
	defer func() {
		if err != nil {
			remove()
		}
	}()
	appDir, err = helmplugin.FetchChartDir(ctx, f.plugin.deps.options(), ref, f.helm.version, filepath.Join(root, "chart"))
	if err != nil {
		return "", "", nil, err
	}
	n := 0
	copyIn := func(flag, name string) (string, error) {
		if name == "-" || strings.Contains(name, "://") {
			return name, nil // refused with its reason by apply
		}
		data, err := os.ReadFile(name)
		if err != nil {
			return "", fmt.Errorf("%s %s: %w", flag, name, errors.Unwrap(err))
		}
		n++
		p := filepath.Join(root, "values", fmt.Sprintf("%d-%s", n, filepath.Base(name)))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return "", err
		}
		return p, os.WriteFile(p, data, 0o600)
	}
	for i, v := range f.helm.valuesFiles {
		if f.helm.valuesFiles[i], err = copyIn("--values", v); err != nil {
			return "", "", nil, err
		}
	}
	for i, arg := range f.helm.setFile {
		entries, err := splitSet(arg)
		if err != nil {
			return "", "", nil, fmt.Errorf("--set-file %q: %w", arg, err)
		}
		var parts []string
		for _, e := range entries {
			p, err := copyIn("--set-file "+e.key, e.value)
			if err != nil {
				return "", "", nil, err
			}
			parts = append(parts, e.key+"="+strings.ReplaceAll(p, ",", `\,`))
		}
		f.helm.setFile[i] = strings.Join(parts, ",")
	}
	return appDir, root, remove, nil
}

// valueExplainer is what a plugin offering --explain has: the built-in
// Helm plugin (helmplugin.Plugin.ExplainValues).
type valueExplainer interface {
	ExplainValues(ctx context.Context, req *params.Request, path document.Path) ([]values.Explanation, error)
}

// explain prints, instead of the manifests, where each value the chart
// gets came from: the chart's values.yaml, a values file and line, or a
// parameter entry, and what it overrode (text, or -o yaml|json).
func (f *localFlags) explain(cmd *cobra.Command, g *globals, dir, path, output string) error {
	if f.plugin.builtin != "helm" {
		return errors.New("--explain applies with --builtin helm: a plugin.yaml's commands build their values themselves")
	}
	p, err := explainPath(path)
	if err != nil {
		return err
	}
	format := "text"
	if cmd.Flags().Changed("output") {
		format = output
	}
	return f.run(cmd, g, dir, func(plugin cmpserver.Plugin, req *params.Request) error {
		ve, ok := plugin.(valueExplainer)
		if !ok {
			return fmt.Errorf("the %s plugin cannot explain its values", f.plugin.builtin)
		}
		exps, err := ve.ExplainValues(cmd.Context(), req, p)
		if err != nil {
			return err
		}
		return values.WriteExplanations(g.stdout, exps, format)
	})
}
