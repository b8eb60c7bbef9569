package helmplugin

import (
	"bytes"
	"errors"
	"io"
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
)

// loadDir loads the chart in dir as Helm's loader.LoadDir does, with the
// same result: the same walk (names sorted, symbolic links followed,
// .helmignore and its defaults applied, a byte order mark dropped from
// each file), the files handed to loader.LoadFiles. It is faster on a
// large chart: the files are read in parallel, each into a buffer of its
// size (Helm's reader grows one from 512 bytes), and the chart's own
// values.yaml, its largest YAML, is read by the fast YAML path (see
// loadValues) meanwhile instead of by LoadFiles. Anything out of the
// common way (an irregular file, a file that cannot be read or changed
// size since the walk, a chart past Helm's size budget, a values.yaml the
// fast path leaves to Helm, any error) and the chart is loaded by
// loader.LoadDir itself, which gives Helm's own error; reference loads it
// so always (Options.ReferenceYAML).
func loadDir(dir string, reference bool) (*chart.Chart, error) {
	if reference {
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
	parallel(len(found), func(i int) {
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
	// The chart's own values.yaml is read here; LoadFiles gets it empty
	// (no values), and the chart its text back in Raw.
	i := slices.IndexFunc(files, func(f *archive.BufferedFile) bool { return f.Name == "values.yaml" })
	var (
		values  map[string]any
		valsErr error
		parsed  = make(chan struct{})
	)
	if i < 0 {
		close(parsed)
	} else {
		orig := files[i]
		go func() {
			defer close(parsed)
			values, valsErr = loadValuesFast(orig.Data)
		}()
		files[i] = &archive.BufferedFile{Name: orig.Name, ModTime: orig.ModTime, Data: []byte{}}
		defer func() {
			if ch != nil {
				for _, r := range ch.Raw {
					if r.Name == orig.Name {
						r.Data = orig.Data
					}
				}
			}
		}()
	}
	ch, err = loader.LoadFiles(files)
	<-parsed
	if err != nil || valsErr != nil {
		return nil, false
	}
	if i >= 0 {
		ch.Values = values
	}
	return ch, true
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

// readExactly reads the file at path, which must hold size bytes.
func readExactly(path string, size int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data := make([]byte, size+1)
	n, err := io.ReadFull(f, data)
	if (!errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF)) || int64(n) != size {
		return nil, errors.New("the file changed size")
	}
	return data[:n], nil
}
