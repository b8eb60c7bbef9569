package helmrender

import (
	"bytes"

	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/document/yamljson"
	"github.com/strata-dev/strata/internal/manifest"
)

// LoadValues reads a values document as Helm's loader.LoadValues does (a
// stream of YAML documents merged in order), with the same result and the
// same errors: each document through the fast path (yamljson.ValuesFast),
// the whole stream through Helm's own function when the fast path declines
// one.
func LoadValues(data []byte) (map[string]any, error) {
	if vals, err := LoadValuesFast(data); err == nil {
		return vals, nil
	}
	return loader.LoadValues(bytes.NewReader(data))
}

// LoadValuesFast is LoadValues without the fallback: an error means the
// fast path did not read data (not that Helm would refuse it). The stream
// is split as loader.LoadValues splits it (manifest.SplitReader, Kubernetes'
// YAML reader) and its documents merged with Helm's loader.MergeMaps.
func LoadValuesFast(data []byte) (map[string]any, error) {
	if len(data) > 0 && data[len(data)-1] != '\n' {
		// As LoadValues does (helm/helm#32506), on a copy: data may be the
		// cache's or the caller's.
		data = append(data[:len(data):len(data)], '\n')
	}
	if !bytes.HasPrefix(data, []byte("---")) && !bytes.Contains(data, []byte("\n---")) {
		// One document: what the YAML reader would return.
		return yamljson.ValuesFast(data)
	}
	docs, err := manifest.SplitReader(string(data), document.FastCodecs)
	if err != nil {
		return nil, yamljson.ErrNotFast
	}
	vals := map[string]any{}
	for _, raw := range docs {
		m, err := yamljson.ValuesFast([]byte(raw))
		if err != nil {
			return nil, err
		}
		vals = loader.MergeMaps(vals, m)
	}
	return vals, nil
}
