package helmplugin

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/strata-dev/strata/internal/document"
)

// TestLoadDirMatchesHelm loads charts with loadDir and with Helm's
// loader.LoadDir and wants the same chart (every field, the subcharts
// included) or the same error: the test repository's charts, and charts
// made for the walk's corners (.helmignore, symbolic links to files and
// directories, a byte order mark, empty files, values.yaml of several
// documents, of none, invalid, absent, a packed subchart, subcharts and
// their values at two depths, invalid and in a directory Helm skips, an
// irregular file, a values.yaml the fast path leaves to Helm).
func TestLoadDirMatchesHelm(t *testing.T) {
	dirs, err := filepath.Glob("testdata/repo/*")
	if err != nil {
		t.Fatal(err)
	}
	chartYAML := "apiVersion: v2\nname: c\nversion: 0.1.0\n"
	made := map[string]map[string]string{
		"ignore": {
			"Chart.yaml": chartYAML, ".helmignore": "*.md\nskip/\n!keep.md\n", "README.md": "x", "keep.md": "y",
			"skip/a.yaml": "a: 1", "templates/cm.yaml": "kind: ConfigMap", "values.yaml": "a: 1\nb: [1, 2]\n",
		},
		"bom":       {"Chart.yaml": "\ufeff" + chartYAML, "values.yaml": "\ufeffa: 1\n", "files/empty": "", "templates/t.yaml": "\ufeffk: v"},
		"multidoc":  {"Chart.yaml": chartYAML, "values.yaml": "a: 1\nb: {c: 2}\n---\nb: {d: 3}\n---\n"},
		"emptyvals": {"Chart.yaml": chartYAML, "values.yaml": ""},
		"novals":    {"Chart.yaml": chartYAML, "templates/t.yaml": "k: v"},
		"badvals":   {"Chart.yaml": chartYAML, "values.yaml": "a: [1\n"},
		"listvals":  {"Chart.yaml": chartYAML, "values.yaml": "- a\n- b\n"},
		"anchors":   {"Chart.yaml": chartYAML, "values.yaml": "a: &x {b: 1}\nc: *x\nd: 0x1F\ne: 1e3\nf: ~\ng: yes\n"},
		"nochart":   {"values.yaml": "a: 1\n"},
		"badchart":  {"Chart.yaml": "name: [\n", "values.yaml": "a: 1\n"},
		"subcharts": {
			"Chart.yaml": chartYAML, "values.yaml": "sub: {x: 1}\n",
			"charts/sub/Chart.yaml": "apiVersion: v2\nname: sub\nversion: 1.0.0\n", "charts/sub/values.yaml": "x: 0\ny: 2\n",
			"charts/sub/templates/t.yaml": "k: v", "charts/_skipped/Chart.yaml": "bad: [",
			"charts/sub/charts/deep/Chart.yaml": "apiVersion: v2\nname: deep\nversion: 1.0.0\n", "charts/sub/charts/deep/values.yaml": "z: 3\n",
		},
		"badsubvals": {
			"Chart.yaml": chartYAML, "values.yaml": "a: 1\n",
			"charts/sub/Chart.yaml": "apiVersion: v2\nname: sub\nversion: 1.0.0\n", "charts/sub/values.yaml": "a: [1\n",
		},
		"skippedvals": {
			"Chart.yaml": chartYAML, "values.yaml": "a: 1\n",
			"charts/_skipped/Chart.yaml": chartYAML, "charts/_skipped/values.yaml": "a: [1\n",
		},
	}
	root := t.TempDir()
	for name, files := range made {
		dir := filepath.Join(root, name)
		for p, data := range files {
			writeTestFile(t, filepath.Join(dir, p), data)
		}
		dirs = append(dirs, dir)
	}
	// A packed subchart.
	packed := filepath.Join(root, "packed")
	writeTestFile(t, filepath.Join(packed, "Chart.yaml"), chartYAML)
	writeTestFile(t, filepath.Join(packed, "values.yaml"), "p: 1\n")
	writeTestFile(t, filepath.Join(packed, "charts", "inner-1.0.0.tgz"), string(tgzChart(t, "inner", map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: inner\nversion: 1.0.0\n", "values.yaml": "i: 1\n",
	})))
	dirs = append(dirs, packed)
	// Symbolic links to a file and to a directory outside the chart, and a
	// link that goes nowhere.
	links := filepath.Join(root, "links")
	writeTestFile(t, filepath.Join(links, "Chart.yaml"), chartYAML)
	writeTestFile(t, filepath.Join(root, "shared", "values.yaml"), "shared: true\n")
	writeTestFile(t, filepath.Join(root, "shared", "tpl", "t.yaml"), "k: v")
	for link, target := range map[string]string{"values.yaml": "../shared/values.yaml", "templates": "../shared/tpl"} {
		if err := os.Symlink(target, filepath.Join(links, link)); err != nil {
			t.Fatal(err)
		}
	}
	dangling := filepath.Join(root, "dangling")
	writeTestFile(t, filepath.Join(dangling, "Chart.yaml"), chartYAML)
	if err := os.Symlink("nowhere", filepath.Join(dangling, "values.yaml")); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(root, "fifo")
	writeTestFile(t, filepath.Join(fifo, "Chart.yaml"), chartYAML)
	if err := syscall.Mkfifo(filepath.Join(fifo, "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	dirs = append(dirs, links, dangling, fifo)

	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			want, wantErr := loader.LoadDir(dir)
			if _, fast := loadDirFast(dir); fast != (wantErr == nil && !slowCharts[filepath.Base(dir)]) {
				t.Errorf("loaded the fast way: %v; Helm's error: %v", fast, wantErr)
			}
			for _, codecs := range []document.Codecs{document.FastCodecs, document.ReferenceCodecs} {
				reference := !codecs.Fast()
				got, err := loadDir(dir, codecs)
				if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
					t.Fatalf("reference=%v: error %v, Helm's %v", reference, err, wantErr)
				}
				if err == nil && !reflect.DeepEqual(sortDeps(got), sortDeps(want)) {
					t.Errorf("reference=%v: the chart differs from Helm's:\ngot  %s\nwant %s", reference, describeChart(got), describeChart(want))
				}
			}
		})
	}
}

// slowCharts load without error but not the fast way: values.yaml is a
// list, which the fast path leaves to Helm; a subchart directory Helm
// skips (its name starts with "_") has invalid values, which the fast
// path reads anyway.
var slowCharts = map[string]bool{"listvals": true, "skippedvals": true}

// sortDeps sorts the subcharts by name, recursively: Helm's loader adds
// them in the order of a map.
func sortDeps(ch *chart.Chart) *chart.Chart {
	deps := slices.Clone(ch.Dependencies())
	slices.SortFunc(deps, func(a, b *chart.Chart) int { return strings.Compare(a.Name(), b.Name()) })
	for _, d := range deps {
		sortDeps(d)
	}
	ch.SetDependencies(deps...)
	return ch
}

func describeChart(ch *chart.Chart) string {
	var b bytes.Buffer
	var walk func(c *chart.Chart, indent string)
	walk = func(c *chart.Chart, indent string) {
		b.WriteString(indent + c.Name() + ": values ")
		b.WriteString(reflect.ValueOf(c.Values).String())
		for _, f := range c.Raw {
			b.WriteString(" raw:" + f.Name + "=" + string(f.Data))
		}
		b.WriteString("\n")
		for _, d := range c.Dependencies() {
			walk(d, indent+"  ")
		}
	}
	walk(ch, "")
	return b.String()
}

func writeTestFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func tgzChart(t *testing.T, name string, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for p, data := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name + "/" + p, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestReadExactly: a file is read whole when it holds the size the walk
// found, and refused when it holds more or fewer bytes or is missing.
func TestReadExactly(t *testing.T) {
	dir := t.TempDir()
	big := bytes.Repeat([]byte("0123456789"), 100_000) // read in several reads
	for name, data := range map[string][]byte{"empty": nil, "small": []byte("a: b\n"), "big": big} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := readExactly(p, int64(len(data)))
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("readExactly(%s) = %d bytes, %v; want the file's %d", name, len(got), err, len(data))
		}
		for _, size := range []int64{int64(len(data)) - 1, int64(len(data)) + 1} {
			if size < 0 {
				continue
			}
			if _, err := readExactly(p, size); err == nil {
				t.Errorf("readExactly(%s, %d) of a %d-byte file succeeded", name, size, len(data))
			}
		}
	}
	if _, err := readExactly(filepath.Join(dir, "missing"), 0); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("readExactly(missing) error = %v, want it not to exist", err)
	}
}
