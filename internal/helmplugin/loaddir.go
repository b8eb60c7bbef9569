package helmplugin

import (
	"bytes"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/ignore"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/helmrender"
)

// loadDir loads the chart in dir as Helm's loader.LoadDir does, with the
// same result: the same walk (names sorted, symbolic links followed,
// .helmignore and its defaults applied, a byte order mark dropped from
// each file), the files handed to loader.LoadFiles. It is faster on a
// large chart: the files are read in parallel, each into a buffer of its
// size (Helm's reader grows one from 512 bytes), and the values.yaml of
// the chart and of its subchart directories, its largest YAML, are read by
// the fast YAML path (see helmrender.LoadValues) meanwhile instead of by LoadFiles. Anything out of the
// common way (an irregular file, a file that cannot be read or changed
// size since the walk, a chart past Helm's size budget, a values.yaml the
// fast path leaves to Helm, any error) and the chart is loaded by
// loader.LoadDir itself, which gives Helm's own error; with
// document.ReferenceCodecs it is loaded so always (Options.Codecs).
func loadDir(dir string, codecs document.Codecs) (*chart.Chart, error) {
	if !codecs.Fast() {
		return loader.LoadDir(dir)
	}
	if ch, ok := loadDirFast(dir); ok {
		return ch, nil
	}
	return loader.LoadDir(dir)
}

// chartFile is a file the walk found: its path on disk, its name in the
// chart (slash-separated) and its size and time.
type chartFile struct {
	path, name string
	info       fs.FileInfo
}

// loadDirFast is loadDir's fast way; ok is false when the chart must be
// loaded by Helm's loader instead.
func loadDirFast(dir string) (ch *chart.Chart, ok bool) {
	top, err := filepath.Abs(dir)
	if err != nil {
		return nil, false
	}
	rules := ignore.Empty()
	if _, err := os.Stat(filepath.Join(top, ignore.HelmIgnore)); err == nil {
		if rules, err = ignore.ParseFile(filepath.Join(top, ignore.HelmIgnore)); err != nil {
			return nil, false
		}
	}
	rules.AddDefaults()
	var found []chartFile
	var size int64
	top += string(filepath.Separator)
	if !walkChart(top, top, rules, &found, &size) || size > archive.MaxDecompressedChartSize {
		return nil, false
	}
	files := make([]*archive.BufferedFile, len(found))
	failed := make([]bool, len(found))
	helmrender.Parallel(len(found), func(i int) {
		f := found[i]
		data, err := readExactly(f.path, f.info.Size())
		if err != nil {
			failed[i] = true
			return
		}
		files[i] = &archive.BufferedFile{Name: f.name, ModTime: f.info.ModTime(), Data: bytes.TrimPrefix(data, utf8BOM)}
	})
	if slices.Contains(failed, true) {
		return nil, false
	}
	// The values.yaml of the chart and of its subchart directories are read
	// here, in parallel, while LoadFiles reads the rest: LoadFiles gets
	// each as a placeholder of its own (a line break: no values), and the
	// chart that holds the placeholder in Raw gets the values and its text
	// back.
	type valuesFile struct {
		orig   *archive.BufferedFile
		values map[string]any
		err    error
	}
	held := map[*byte]*valuesFile{}
	var vfs []*valuesFile
	for i, f := range files {
		if isValuesFile(f.Name) {
			vf := &valuesFile{orig: f}
			placeholder := []byte{'\n'}
			held[&placeholder[0]] = vf
			vfs = append(vfs, vf)
			files[i] = &archive.BufferedFile{Name: f.Name, ModTime: f.ModTime, Data: placeholder}
		}
	}
	parsed := make(chan struct{})
	go func() {
		defer close(parsed)
		helmrender.Parallel(len(vfs), func(i int) { vfs[i].values, vfs[i].err = helmrender.LoadValuesFast(vfs[i].orig.Data) })
	}()
	ch, err = loader.LoadFiles(files)
	<-parsed
	if err != nil || slices.ContainsFunc(vfs, func(vf *valuesFile) bool { return vf.err != nil }) {
		return nil, false
	}
	var give func(c *chart.Chart)
	give = func(c *chart.Chart) {
		// A chart's Raw holds its subcharts' files too, by their paths.
		for _, r := range c.Raw {
			if len(r.Data) != 1 {
				continue
			}
			if vf, ok := held[&r.Data[0]]; ok {
				r.Data = vf.orig.Data
				if r.Name == "values.yaml" {
					c.Values = vf.values
				}
			}
		}
		for _, d := range c.Dependencies() {
			give(d)
		}
	}
	give(ch)
	return ch, true
}

// isValuesFile reports whether a chart file is the values.yaml of the
// chart or of a subchart directory under charts/ (at any depth), which
// LoadFiles reads as values.
func isValuesFile(name string) bool {
	for {
		if name == "values.yaml" {
			return true
		}
		rest, ok := strings.CutPrefix(name, "charts/")
		if !ok {
			return false
		}
		_, name, ok = strings.Cut(rest, "/")
		if !ok {
			return false
		}
	}
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// walkChart walks the chart's directory as Helm's loader does (names
// sorted, symbolic links followed), adding the files .helmignore keeps to
// found and their sizes to size; false means the walk met something
// loader.LoadDir reports or treats its own way (an error, an irregular
// file).
func walkChart(path, prefix string, rules *ignore.Rules, found *[]chartFile, size *int64) bool {
	info, err := os.Lstat(path)
	if err != nil {
		return false
	}
	return walkEntry(path, prefix, info, rules, found, size)
}

func walkEntry(path, prefix string, info fs.FileInfo, rules *ignore.Rules, found *[]chartFile, size *int64) bool {
	if info.Mode()&fs.ModeSymlink != 0 {
		resolved, err := filepath.EvalSymlinks(path)
		if err != nil {
			return false
		}
		// What Helm's walk logs for a link.
		slog.Info("found symbolic link in path. Contents of linked file included and used", "path", path, "resolved", resolved)
		if info, err = os.Lstat(resolved); err != nil {
			return false
		}
		return walkEntry(path, prefix, info, rules, found, size)
	}
	name := filepath.ToSlash(strings.TrimPrefix(path, prefix))
	switch {
	case name == "": // the chart's directory
	case info.IsDir():
		if rules.Ignore(name, info) {
			return true // skipped, as filepath.SkipDir
		}
	case rules.Ignore(name, info):
		return true
	case !info.Mode().IsRegular():
		return false
	default:
		*found = append(*found, chartFile{path: path, name: name, info: info})
		*size += info.Size()
		return true
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return false
	}
	slices.Sort(names)
	for _, n := range names {
		p := filepath.Join(path, n)
		fi, err := os.Lstat(p)
		if err != nil || !walkEntry(p, prefix, fi, rules, found, size) {
			return false
		}
	}
	return true
}

// errChangedSize says that a chart file did not hold the bytes the walk
// found (loadDirFast then leaves the chart to Helm's loader).
var errChangedSize = errors.New("the file changed size")
