package helmplugin

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/helmrender"
	"github.com/strata-dev/strata/internal/values"
)

// loadChart checks the chart's directory (size, symbolic links) and loads
// it with Helm's loader, .helmignore applied, or takes a copy of the chart
// loaded before from the same files (see chartCache).
func (j *job) loadChart() (*chart.Chart, error) {
	digest, size, err := j.checkChartTree(j.p.charts.lru != nil)
	if err != nil {
		return nil, err
	}
	if ch, ok := j.p.charts.get(digest); ok {
		return ch, nil
	}
	ch, err := loadDir(j.req.AppPath, j.p.opts.Codecs)
	if err != nil {
		if _, statErr := os.Stat(filepath.Join(j.req.AppPath, "Chart.yaml")); errors.Is(statErr, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s holds no Chart.yaml", ErrNotChart, j.appRel)
		}
		return nil, fmt.Errorf("loading the chart in %s: %w", j.appRel, err)
	}
	j.p.charts.add(digest, size, ch)
	return ch, nil
}

// checkChartTree walks the chart's directory as Helm's loader does
// (following symbolic links) and refuses a link that leads outside the
// repository, a link that cannot be resolved, and a tree past the limits.
//
// With digest, it also reads every regular file and returns the SHA-256 of
// the tree and the bytes read: each entry's path in the chart and kind
// (directory, file with its contents, symbolic link with the place in the
// repository it leads to, anything else), in the walk's order (names
// sorted). That is everything Helm's loader can read from the directory,
// and more (files .helmignore leaves out), so two trees with the same
// digest load the same chart.
func (j *job) checkChartTree(digest bool) (sum [32]byte, size int64, err error) {
	realRoot, err := filepath.EvalSymlinks(j.req.RepoRoot)
	if err != nil {
		return sum, 0, fmt.Errorf("opening the repository: %w", err)
	}
	h := sha256.New()
	// Entries are named relative to the chart's directory, so that the
	// same chart elsewhere in a repository has the same digest.
	entry := func(kind byte, name string, parts ...[]byte) {
		if !digest {
			return
		}
		if j.appRel != "." {
			name = strings.TrimPrefix(name, j.appRel)
		}
		parts = append([][]byte{[]byte(name)}, parts...)
		var n [8]byte
		h.Write([]byte{kind})
		for _, p := range parts {
			binary.BigEndian.PutUint64(n[:], uint64(len(p)))
			h.Write(n[:])
			h.Write(p)
		}
	}
	var buf []byte
	fileHash := sha256.New()
	if digest {
		buf = make([]byte, 32<<10)
	}
	files := 0
	visited := map[string]bool{}
	var walk func(dir, shown string) error
	walk = func(dir, shown string) error {
		real, err := filepath.EvalSymlinks(dir)
		if err != nil {
			return fmt.Errorf("reading the chart: %w", err)
		}
		if visited[real] {
			return nil
		}
		visited[real] = true
		entries, err := os.ReadDir(dir)
		if err != nil {
			return fmt.Errorf("reading the chart: %w", err)
		}
		for _, e := range entries {
			if files++; files > j.lim.MaxChartFiles {
				return fmt.Errorf("the chart in %s has more than %d files", j.appRel, j.lim.MaxChartFiles)
			}
			p := filepath.Join(dir, e.Name())
			name := path.Join(shown, e.Name())
			var fi fs.FileInfo
			switch {
			case e.Type()&fs.ModeSymlink != 0:
				target, err := filepath.EvalSymlinks(p)
				if err != nil {
					return fmt.Errorf("chart file %s is a symbolic link that cannot be resolved: %w", name, err)
				}
				rel, err := filepath.Rel(realRoot, target)
				if err != nil || (rel != "." && !filepath.IsLocal(rel)) {
					return fmt.Errorf("chart file %s is a symbolic link leading outside the repository; charts may only link to files inside it", name)
				}
				// Where it leads, in the repository: links to the same
				// place are walked once, so which ones alias which is
				// part of the tree.
				entry('L', name, []byte(filepath.ToSlash(rel)))
				if fi, err = os.Stat(target); err != nil {
					return fmt.Errorf("reading the chart: %w", err)
				}
			case e.Type().IsRegular() && digest:
				// Read below; its size is what is read.
			default:
				if fi, err = e.Info(); err != nil {
					return fmt.Errorf("reading the chart: %w", err)
				}
			}
			switch {
			case fi != nil && fi.IsDir():
				entry('D', name)
				if err := walk(p, name); err != nil {
					return err
				}
				continue
			case fi != nil && !fi.Mode().IsRegular():
				entry('O', name) // Helm's loader refuses it, unless ignored
			case digest:
				fileHash.Reset()
				n, err := copyFile(fileHash, p, j.lim.MaxChartBytes-size, buf)
				if err != nil {
					return fmt.Errorf("reading chart file %s: %w", name, err)
				}
				entry('F', name, fileHash.Sum(nil))
				size += n
			default:
				size += fi.Size()
			}
			if size > j.lim.MaxChartBytes {
				return fmt.Errorf("the chart in %s holds more than %d bytes", j.appRel, j.lim.MaxChartBytes)
			}
		}
		return nil
	}
	if err := walk(j.req.AppPath, j.appRel); err != nil {
		return sum, 0, err
	}
	h.Sum(sum[:0])
	return sum, size, nil
}

// copyFile writes the contents of a chart file (through symbolic links,
// checked by the caller) to w, at most max bytes and one more (to tell
// that the chart is too large), and returns the bytes read.
func copyFile(w io.Writer, p string, max int64, buf []byte) (int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return io.CopyBuffer(w, io.LimitReader(f, max+1), buf)
}

// chartValues reads the chart's Chart.yaml (it must exist) and
// values.yaml (it may not), the latter as Helm's loader reads it, through
// the cache, without loading the rest of the chart.
func (j *job) chartValues() (map[string]any, error) {
	data, err := j.chartValuesText()
	if err != nil {
		return nil, err
	}
	return j.parseChartValues(data)
}

// chartValuesText checks the chart and returns the text of its
// values.yaml, without a byte order mark; nil when there is none.
func (j *job) chartValuesText() ([]byte, error) {
	if _, _, err := j.checkChartTree(false); err != nil {
		return nil, err
	}
	dir := j.appRel
	if _, err := j.readFile(path.Join(dir, "Chart.yaml")); err != nil {
		if errors.Is(err, errMissing) {
			return nil, fmt.Errorf("%w: %s holds no Chart.yaml", ErrNotChart, dir)
		}
		return nil, err
	}
	data, err := j.readFile(path.Join(dir, "values.yaml"))
	switch {
	case errors.Is(err, errMissing):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return bytes.TrimPrefix(data, []byte("\xEF\xBB\xBF")), nil
}

// parseChartValues parses the text chartValuesText returned.
func (j *job) parseChartValues(data []byte) (map[string]any, error) {
	if data == nil {
		return map[string]any{}, nil
	}
	vals, err := j.p.values.parse(data)
	if err != nil {
		return nil, fmt.Errorf("cannot load values.yaml: %w", err)
	}
	return vals, nil
}

// errMissing marks a values file that does not exist.
var errMissing = errors.New("does not exist")

// resolve turns a path given in a parameter into a path inside the
// repository: relative paths are relative to the application's directory,
// absolute ones to the repository's root (as in Argo CD). URLs are refused:
// nothing is fetched at render time.
func (j *job) resolve(p string) (string, error) {
	if scheme, _, ok := strings.Cut(p, "://"); ok && scheme != "" && !strings.ContainsAny(scheme, "/.") {
		return "", fmt.Errorf("%q is a URL; strata renders without network access, so commit the file to the repository and name its path", p)
	}
	p = filepath.ToSlash(p)
	var rel string
	if path.IsAbs(p) {
		rel = path.Clean(strings.TrimLeft(p, "/"))
	} else {
		rel = path.Join(j.appRel, p)
	}
	if !filepath.IsLocal(filepath.FromSlash(rel)) {
		return "", fmt.Errorf("%q leads outside the repository; files must be inside it", p)
	}
	return rel, nil
}

// readFile reads a regular file inside the repository, through os.Root: a
// symbolic link leading out of the repository is refused. A missing file
// wraps errMissing.
func (j *job) readFile(rel string) ([]byte, error) {
	f, err := j.root.Open(filepath.FromSlash(rel))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s %w in the repository", rel, errMissing)
		}
		return nil, fmt.Errorf("%s cannot be read inside the repository (a symbolic link leading outside it is refused): %w", rel, unwrapPath(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", rel)
	}
	data, err := document.ReadAll(f, j.lim.MaxValuesBytes, rel)
	if err != nil {
		return nil, err
	}
	if err := j.count(int64(len(data))); err != nil {
		return nil, err
	}
	return data, nil
}

func (j *job) count(n int64) error {
	j.read += n
	if j.read > j.lim.MaxTotalValuesBytes {
		return fmt.Errorf("the values files, inline values and file parameters hold more than %d bytes in all", j.lim.MaxTotalValuesBytes)
	}
	return nil
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// valueSet is what a request's values come to.
type valueSet struct {
	// user is what Helm gets as the user-supplied values (what
	// `helm template -f ... --set ...` passes on): the values files, the
	// inline values, then the --set style parameters.
	user map[string]any
	// chart is the chart's own values.yaml.
	chart map[string]any
	// skipped lists the helm-parameters left at their current value.
	skipped []string
}

// userValues computes the values Helm gets, as `helm template` merges its
// flags: values files in order, the inline values (Argo CD passes them as a
// last values file), then --set (helm-parameters), --set-string
// (helm-string-parameters) and --set-file (file-parameters). Within a map
// parameter, entries are applied in key order. Values files are parsed by
// helmrender.LoadValues, which reads them as Helm's loader.LoadValues does
// (numbers, multi-document files, errors; a fast path held to Helm's by
// differential tests, Helm's own function with Options.Codecs), and
// merged by Helm's loader.MergeMaps.
func (j *job) userValues(chartValues map[string]any) (*valueSet, error) {
	s := j.s
	user := map[string]any{}
	files, err := j.valuesFiles()
	if err != nil {
		return nil, err
	}
	for _, vf := range files {
		f, field, rel := vf.given, vf.field, vf.rel
		data, err := j.readFile(rel)
		if errors.Is(err, errMissing) && s.ignoreMissing {
			j.p.log.Info("values file does not exist; skipped (ignore-missing-value-files)", "app", j.req.AppName, "file", rel)
			continue
		}
		if errors.Is(err, errMissing) {
			return nil, &paramError{name: ParamValuesFiles, field: field, msg: fmt.Sprintf("values file %q: %v; fix the path (relative to the chart's directory) or set %s", f, err, ParamIgnoreMissingValueFiles)}
		}
		if err != nil {
			return nil, &paramError{name: ParamValuesFiles, field: field, err: err}
		}
		m, err := j.p.values.parse(data)
		if err != nil {
			return nil, &paramError{name: ParamValuesFiles, field: field, msg: fmt.Sprintf("failed to parse %s", rel), err: err}
		}
		user = loader.MergeMaps(user, m)
	}
	if s.hasValues && strings.TrimSpace(s.values) != "" {
		if int64(len(s.values)) > j.lim.MaxValuesBytes {
			return nil, &paramError{name: ParamValues, msg: fmt.Sprintf("%d bytes, more than the limit of %d", len(s.values), j.lim.MaxValuesBytes)}
		}
		if err := j.count(int64(len(s.values))); err != nil {
			return nil, &paramError{name: ParamValues, err: err}
		}
		if err := checkValuesNodes([]byte(s.values), j.lim.MaxValuesNodes); err != nil {
			return nil, &paramError{name: ParamValues, err: err}
		}
		m, err := helmrender.LoadValues([]byte(s.values))
		if err != nil {
			return nil, &paramError{name: ParamValues, msg: "failed to parse the values as YAML", err: err}
		}
		user = loader.MergeMaps(user, m)
	}
	vs := &valueSet{chart: chartValues}
	if vs.chart == nil {
		vs.chart = map[string]any{}
	}
	// What the keys hold before any parameter sets them, to leave out the
	// helm-parameters entries that keep a key's value.
	var before map[string]any
	if len(s.set) > 0 {
		before = plain(loader.MergeMaps(vs.chart, user)).(map[string]any)
	}
	for _, k := range slices.Sorted(maps.Keys(s.set)) {
		v := s.set[k]
		if unchanged(before, k, v) {
			vs.skipped = append(vs.skipped, k)
			continue
		}
		arg := k + "=" + escapeSetValue(expand(v, j.env))
		if err := values.ApplySet(user, values.SetValue, arg, nil); err != nil {
			return nil, &paramError{name: ParamHelmParameters, field: mapField(k), err: err}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.setString)) {
		arg := k + "=" + escapeSetValue(expand(s.setString[k], j.env))
		if err := values.ApplySet(user, values.SetString, arg, nil); err != nil {
			return nil, &paramError{name: ParamHelmStringParameters, field: mapField(k), err: err}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.setFile)) {
		p := expand(s.setFile[k], j.env)
		rel, err := j.resolve(p)
		if err != nil {
			return nil, &paramError{name: ParamFileParameters, field: mapField(k), err: err}
		}
		data, err := j.readFile(rel)
		if err != nil {
			return nil, &paramError{name: ParamFileParameters, field: mapField(k), err: err}
		}
		// The file is read here, through the repository's root; the
		// assignment's value only stands in for its path, so that the
		// key is parsed exactly as helm's --set-file parses it.
		read := func(string) ([]byte, error) { return data, nil }
		if err := values.ApplySet(user, values.SetFile, k+"=file", read); err != nil {
			return nil, &paramError{name: ParamFileParameters, field: mapField(k), err: err}
		}
	}
	vs.user = user
	return vs, nil
}

// escapeSetValue escapes the commas of a --set value, as Argo CD does, so
// that a value is one value: `a,b` is the string "a,b". A value in braces
// is a Helm list and is left as is, and so is a comma already escaped.
func escapeSetValue(v string) string {
	if strings.HasPrefix(v, "{") && strings.HasSuffix(v, "}") {
		return v
	}
	if !strings.Contains(v, ",") {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == ',' && (i == 0 || v[i-1] != '\\') {
			b.WriteByte('\\')
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// unchanged reports whether the helm-parameters entry key=v sets the key
// to the value it holds already, as the announcement prints it.
func unchanged(tree map[string]any, key, v string) bool {
	p, err := document.ParsePath(key)
	if err != nil {
		return false
	}
	var cur any = tree
	for _, s := range p {
		switch c := cur.(type) {
		case map[string]any:
			if s.IsIndex {
				return false
			}
			next, ok := c[s.Key]
			if !ok {
				return false
			}
			cur = next
		case []any:
			if !s.IsIndex || s.Index >= len(c) {
				return false
			}
			cur = c[s.Index]
		default:
			return false
		}
	}
	shown, ok := display(cur)
	return ok && shown == v
}

// display prints a leaf of the values as the helm-parameters announcement
// shows it; ok is false for a map or list that is not empty.
func display(v any) (string, bool) {
	switch v := v.(type) {
	case nil:
		return "null", true
	case string:
		return v, true
	case bool:
		return strconv.FormatBool(v), true
	case int64:
		return strconv.FormatInt(v, 10), true
	case int:
		return strconv.Itoa(v), true
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), true
	case json.Number:
		return v.String(), true
	case map[string]any:
		return "{}", len(v) == 0
	case []any:
		return "[]", len(v) == 0
	}
	return fmt.Sprint(v), true
}

// plain copies a value tree, turning Helm's named map types into
// map[string]any.
func plain(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = plain(e)
		}
		return m
	case common.Values:
		return plain(map[string]any(v))
	case []any:
		l := make([]any, len(v))
		for i, e := range v {
			l[i] = plain(e)
		}
		return l
	}
	return v
}

func mapField(k string) string { return fmt.Sprintf("map[%q]", k) }
