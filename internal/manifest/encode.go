package manifest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/strata-dev/strata/internal/document"
)

// An Encoder writes manifests, each the JSON of one object as a plugin
// writes it, as one stream: a YAML stream (each document after a "---"
// line, keys sorted) or a JSON list. A manifest that is not valid JSON is
// an error naming it ("manifest 2"), as document.Loader reports it.
type Encoder struct {
	Format document.Format // document.YAML or document.JSON

	// Codecs is the reference switch of the fast paths:
	// document.ReferenceCodecs reads every manifest with document.Loader
	// and writes it with document.Encode. The fast paths
	// (document.DecodeJSONFast, or encoding/json, and document.YAMLWriter)
	// write the same bytes for every manifest the Loader reads (their
	// differential tests and fuzzers hold them to it) in a fraction of the
	// time; this is the switch to rule them out.
	Codecs document.Codecs
}

// Encode writes manifests to w.
func (e Encoder) Encode(w io.Writer, manifests []string) error {
	if e.Format == document.JSON {
		list := make([]any, 0, len(manifests))
		for i, m := range manifests {
			v, err := reference(m, i)
			if err != nil {
				return err
			}
			list = append(list, v)
		}
		return document.Encode(w, list, document.JSON)
	}
	// Each document is encoded on its own, on every CPU, and written in
	// order through one buffer: encoding YAML costs more than rendering.
	out := make([]bytes.Buffer, len(manifests))
	errs := make([]error, len(manifests))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(manifests)) {
		wg.Go(func() {
			var yw document.YAMLWriter
			for i := int(next.Add(1) - 1); i < len(manifests); i = int(next.Add(1) - 1) {
				if e.Codecs.Fast() {
					if b, ok := fastYAML(&yw, manifests[i]); ok {
						out[i] = *bytes.NewBuffer(b)
						continue
					}
				}
				v, err := reference(manifests[i], i)
				if err == nil {
					out[i].WriteString("---\n")
					err = document.Encode(&out[i], v, document.YAML)
				}
				errs[i] = err
			}
		})
	}
	wg.Wait()
	bw := bufio.NewWriterSize(w, 256<<10)
	for i := range out {
		if errs[i] != nil {
			return errs[i]
		}
		if _, err := bw.Write(out[i].Bytes()); err != nil {
			return err
		}
		out[i] = bytes.Buffer{}
	}
	return bw.Flush()
}

// fastYAML writes a manifest with its "---" line by the fast paths, or
// returns false. The manifests are encoding/json's: they are read as it
// reads them (DecodeJSONFast, or encoding/json itself).
func fastYAML(yw *document.YAMLWriter, m string) ([]byte, bool) {
	v, ok := document.DecodeJSONFast(m)
	if !ok {
		dec := json.NewDecoder(strings.NewReader(m))
		dec.UseNumber()
		ok = dec.Decode(&v) == nil && !dec.More()
	}
	if !ok {
		return nil, false
	}
	b, err := yw.Append([]byte("---\n"), v)
	return b, err == nil
}

// reference reads manifest i with document.Loader's checks.
func reference(m string, i int) (any, error) {
	v, _, err := document.Loader{JSON: true}.ParseAny([]byte(m), fmt.Sprintf("manifest %d", i))
	return v, err
}
