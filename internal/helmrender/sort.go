package helmrender

import (
	"crypto/sha256"
	"fmt"
	"path"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	release "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/document/yamljson"
	"github.com/strata-dev/strata/internal/manifest"
)

// A doc is one rendered document: where it came from, its text, and what
// reading it gave.
type doc struct {
	source string // the template, e.g. mychart/templates/deployment.yaml
	text   string
	parsed
	err error
}

// parsed is what reading a rendered document gives: its JSON form
// (sigs.k8s.io/yaml, Kubernetes' YAML rules) and what Helm's sorter reads
// from its head. It holds values only (no maps, slices or pointers), so the
// document cache can hand it out as it is.
type parsed struct {
	json          string
	kind, version string
	name          string // metadata.name
	hook          bool   // it has a helm.sh/hook annotation,
	known         bool   // every hook it names is one Helm knows,
	test          bool   // and one of them is test
	headed        bool   // a CRD's: kind and version are read (see streamJSON)
	// checked: read by yamljson.Check (docCache.check), json is empty and bound
	// bounds its length; kind and version are set.
	checked bool
	bound   int
}

// A docCache keeps what reading a rendered document gave, by the SHA-256
// of its text: rendering the same chart again (another revision of the
// repository, another Application with the same values) mostly renders
// the same documents, and reading YAML is the costliest part of a render
// after running the templates. Only successes are kept.
type docCache struct {
	lru *Cache[parsed]
	// codecs is document.ReferenceCodecs to read every document with
	// sigs.k8s.io/yaml only (Options.Codecs).
	codecs document.Codecs
	// check reads documents with yamljson.Check first, for output that keeps
	// no JSON (GenerateYAML): what it reads is checked, not converted, and
	// not cached.
	check bool
}

// checking reports whether documents are read with yamljson.Check first.
func (c docCache) checking() bool { return c.check && c.codecs.Fast() }

// docOverhead is what a cache entry costs besides its text and JSON.
const docOverhead = 256

// A Document is a rendered document as Sort returns it.
type Document struct {
	// Source is the template that rendered it, Text its text, as
	// releaseutil.SortManifests gives them (Manifest.Name and .Content,
	// Hook.Path and .Manifest).
	Source, Text string
	// APIVersion, Kind and Name are read from its head as Helm's sorter
	// reads them.
	APIVersion, Kind, Name string
}

// Sort sorts rendered files as Helm's releaseutil.SortManifests does
// with releaseutil.InstallOrder (see sortRendered), with the same
// documents, order and errors: the hooks Helm knows, then the other
// manifests, each in install order. Documents are read with the fast path
// (yamljson) unless codecs is document.ReferenceCodecs, each once, in
// parallel, without a cache.
func Sort(files map[string]string, codecs document.Codecs) (hooks, manifests []Document, err error) {
	h, m, err := sortRendered(files, docCache{codecs: codecs})
	if err != nil {
		return nil, nil, err
	}
	out := func(docs []*doc) []Document {
		ds := make([]Document, len(docs))
		for i, d := range docs {
			ds[i] = Document{Source: d.source, Text: d.text, APIVersion: d.version, Kind: d.kind, Name: d.name}
		}
		return ds
	}
	return out(h), out(m), nil
}

// sortRendered does what Helm's releaseutil.SortManifests does with the
// rendered templates (split each file into documents, read each document's
// head, separate hooks from manifests, drop unknown hooks, sort both by
// kind in install order), with the same results and errors, but parses each
// document once, in parallel, and keeps its JSON form for the output:
// Helm's own sorter parses every document into its head and throws the
// rest away.
func sortRendered(files map[string]string, cache docCache) (hooks, manifests []*doc, err error) {
	var names []string
	for _, name := range slices.Sorted(mapKeys(files)) {
		if !strings.HasPrefix(path.Base(name), "_") && strings.TrimSpace(files[name]) != "" {
			names = append(names, name)
		}
	}
	// Each file is split in parallel, its documents kept in order.
	split := make([][]*doc, len(names))
	Parallel(len(names), func(i int) {
		for _, text := range manifest.SplitRendered(files[names[i]]) {
			split[i] = append(split[i], &doc{source: names[i], text: text})
		}
	})
	docs := slices.Concat(split...)
	Parallel(len(docs), func(i int) { docs[i].parse(cache) })
	for _, d := range docs {
		if d.err != nil {
			return nil, nil, d.err // the first in Helm's order, as Helm reports it
		}
		if !d.hook {
			manifests = append(manifests, d)
		} else if d.known {
			hooks = append(hooks, d)
		}
	}
	sortByKind(manifests)
	sortByKind(hooks)
	return hooks, manifests, nil
}

// parse reads the document's JSON form as Argo CD reads it from helm
// template's output, where it is printed followed by a line break (see
// printedText), and its head as Helm's sorter reads it from the text
// itself: sigs.k8s.io/yaml.Unmarshal into releaseutil.SimpleHead (see
// yamljson.ToJSON). The line break changes only a block scalar that ends the
// document, so the head is read again from the text when one of its
// fields could have been such a scalar.
func (d *doc) parse(cache docCache) {
	if cache.checking() {
		// A head with a line break a block scalar may have given is read
		// again below; such a document goes the usual way.
		head, bound, err := yamljson.Check(printedText(d.text, middle))
		if err == nil && !(mayEndInBlockScalar(d.text) && headHasLineBreak(head)) {
			d.parsed = parsed{kind: head.Kind, version: head.Version, name: head.Name(), checked: true, bound: bound}
			d.readHooks(head)
			return
		}
	}
	var text []byte
	if strings.Contains(d.text, "\r") {
		text = []byte(printedText(d.text, middle))
	} else {
		text = make([]byte, len(d.text)+1)
		copy(text, d.text)
		text[len(d.text)] = '\n'
	}
	var key [32]byte
	if cache.lru != nil {
		key = sha256.Sum256(text)
		if p, ok := cache.lru.Get(key); ok {
			d.parsed = p
			return
		}
	}
	js, head, err := convertDoc(text, cache.codecs)
	if err == nil && mayEndInBlockScalar(d.text) && headHasLineBreak(head) {
		head, err = yamljson.UnmarshalHead([]byte(d.text))
	}
	if err != nil {
		// Helm's sorter reads the text itself: its error, when it has one,
		// is the one Helm reports (the line numbers of its text).
		if herr := sigsyaml.Unmarshal([]byte(d.text), &releaseutil.SimpleHead{}); herr != nil {
			d.err = fmt.Errorf("YAML parse error on %s: %w", d.source, herr)
		} else if js == nil {
			d.err = fmt.Errorf("YAML parse error on %s: error converting YAML to JSON: %w", d.source, err)
		} else {
			d.err = fmt.Errorf("YAML parse error on %s: %w", d.source, err)
		}
		return
	}
	d.parsed = parsed{json: string(js), kind: head.Kind, version: head.Version, name: head.Name()}
	d.readHooks(head)
	cache.lru.Add(key, int64(len(text)+len(js)+docOverhead), d.parsed)
}

// convertDoc converts a rendered document with yamljson.ToJSON; an error
// reading its head is then Helm's own, naming Helm's type
// (releaseutil.SimpleHead), as Helm's sorter reports it.
func convertDoc(doc []byte, codecs document.Codecs) ([]byte, yamljson.Head, error) {
	js, head, err := yamljson.ToJSON(doc, codecs)
	if err != nil && js != nil {
		if herr := sigsyaml.Unmarshal(doc, &releaseutil.SimpleHead{}); herr != nil {
			err = herr
		}
	}
	return js, head, err
}

// mayEndInBlockScalar reports whether text could hold a block scalar
// (whose value depends on the line breaks at the end of the document):
// whether it has a '|' or a '>' at all. Without one, YAML reads the same
// with or without trailing whitespace.
func mayEndInBlockScalar(text string) bool {
	return strings.ContainsAny(text, "|>")
}

// headHasLineBreak reports whether a field of the head Helm's sorter uses
// ends in a line break, which a block scalar ending the document would
// give.
func headHasLineBreak(h yamljson.Head) bool {
	if strings.HasSuffix(h.Kind, "\n") || strings.HasSuffix(h.Version, "\n") {
		return true
	}
	if h.Metadata == nil {
		return false
	}
	if strings.HasSuffix(h.Metadata.Name, "\n") {
		return true
	}
	for _, v := range h.Metadata.Annotations {
		if strings.HasSuffix(v, "\n") {
			return true
		}
	}
	return false
}

// readHooks reads the hooks a document names, as Helm's sorter does.
func (d *doc) readHooks(head yamljson.Head) {
	m := head.Metadata
	if m == nil || len(m.Annotations) == 0 {
		return
	}
	hookTypes, ok := m.Annotations[release.HookAnnotation]
	if !ok {
		return
	}
	d.hook = true
	test := false
	for t := range strings.SplitSeq(hookTypes, ",") {
		e, ok := hookEvents[strings.ToLower(strings.TrimSpace(t))]
		if !ok {
			return // an unknown hook: Helm skips the document
		}
		test = test || e == release.HookTest
	}
	d.known, d.test = true, test
}

var hookEvents = map[string]release.HookEvent{
	string(release.HookPreInstall):   release.HookPreInstall,
	string(release.HookPostInstall):  release.HookPostInstall,
	string(release.HookPreDelete):    release.HookPreDelete,
	string(release.HookPostDelete):   release.HookPostDelete,
	string(release.HookPreUpgrade):   release.HookPreUpgrade,
	string(release.HookPostUpgrade):  release.HookPostUpgrade,
	string(release.HookPreRollback):  release.HookPreRollback,
	string(release.HookPostRollback): release.HookPostRollback,
	string(release.HookTest):         release.HookTest,
	"test-success":                   release.HookTest,
}

// installOrder ranks kinds as Helm's releaseutil.InstallOrder does.
var installOrder = func() map[string]int {
	m := make(map[string]int, len(releaseutil.InstallOrder))
	for i, k := range releaseutil.InstallOrder {
		m[k] = i
	}
	return m
}()

// sortByKind sorts stably by kind in install order; unknown kinds go last,
// alphabetically (Helm's lessByKind).
func sortByKind(docs []*doc) {
	sort.SliceStable(docs, func(i, j int) bool {
		a, b := docs[i].kind, docs[j].kind
		first, aok := installOrder[a]
		second, bok := installOrder[b]
		switch {
		case !aok && !bok:
			return a < b
		case !aok:
			return false
		case !bok:
			return true
		}
		return first < second
	})
}

// Parallel runs fn(0..n-1) on up to GOMAXPROCS goroutines.
func Parallel(n int, fn func(int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	next := 0
	for range workers {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= n {
					return
				}
				fn(i)
			}
		})
	}
	wg.Wait()
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// isTest reports whether a hook runs on `helm test`.
func (d *doc) isTest() bool { return d.test }

// emptyJSON reports whether a JSON document is empty (null).
func emptyJSON(js string) bool {
	js = strings.TrimSpace(js)
	return len(js) == 0 || string(js) == "null"
}
