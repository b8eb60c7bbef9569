package cmpserver_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/cmpserver"
	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/golden"
)

// FuzzParseConfig: any input parses or fails with a typed error that names
// the file; what parses is a usable plugin.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(fullConfig))
	f.Add([]byte(cfgGen))
	for _, tc := range configErrorCases {
		f.Add([]byte(tc.input))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := cmpserver.ParseConfig(data, "plugin.yaml")
		if err != nil {
			checkConfigError(t, err)
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if cfg.Name == "" || len(cfg.Generate.Command) == 0 || cfg.Generate.Command[0] == "" {
			t.Fatalf("ParseConfig() = %+v: no name or generate command", cfg)
		}
		socket := cfg.Info().SocketName()
		if len(socket) > cmpserver.MaxSocketNameBytes || strings.ContainsAny(socket, "/\x00") {
			t.Fatalf("socket name %q is not a usable file name", socket)
		}
		for _, a := range cfg.Parameters.Static {
			if a.Name == "" {
				t.Fatalf("static announcement without a name: %+v", a)
			}
		}
	})
}

// FuzzParseManifests: any output parses or fails with a *document.LoadError
// naming the source; what parses is JSON objects with apiVersion and kind,
// which parse again, as a JSON stream, to themselves.
func FuzzParseManifests(f *testing.F) {
	for _, c := range golden.Cases(f, "testdata/output/*.txtar") {
		if s, ok := goldenStdout(c); ok {
			f.Add([]byte(s))
		}
	}
	f.Add([]byte("--- |\n  text\n...\n%YAML 1.1\n---\n[]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		manifests, err := cmpserver.ParseManifests(data, outputSource)
		if err != nil {
			var le *document.LoadError
			if !errors.As(err, &le) || le.Source != outputSource || err.Error() == "" {
				t.Fatalf("error %v is %T, want a *document.LoadError naming the source", err, err)
			}
			return
		}
		for _, m := range manifests {
			var obj map[string]any
			if err := json.Unmarshal([]byte(m), &obj); err != nil {
				t.Fatalf("manifest %s is not a JSON object: %v", m, err)
			}
			if s, _ := obj["apiVersion"].(string); s == "" {
				t.Fatalf("manifest %s has no apiVersion", m)
			}
			if s, _ := obj["kind"].(string); s == "" {
				t.Fatalf("manifest %s has no kind", m)
			}
		}
		again, err := cmpserver.ParseManifests([]byte(strings.Join(manifests, "\n")), outputSource)
		if err != nil {
			t.Fatalf("parsing the manifests again: %v", err)
		}
		if diff := cmp.Diff(manifests, again); diff != "" {
			t.Fatalf("the manifests parse again differently (-first +again):\n%s", diff)
		}
	})
}
