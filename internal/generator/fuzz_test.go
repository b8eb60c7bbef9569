package generator_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/strata-dev/strata/internal/generator"
)

func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"applicationSetName":"a","input":{"parameters":{"k":"v","n":1,"big":12345678901234567890,"f":1.5}}}`,
		`{"applicationSetName":"a","input":{}}`,
		`{}`, `[]`, `null`, `{"input":null}`, `{"input":{"parameters":[1]}}`,
		"{\n\"applicationSetName\": 3}", `{"input":{},"input":{}}`, `{"applicationSetName":"\ud83d\ude00"}`,
		`{"a":{"b":{"c":{"d":[[[[[]]]]]}}}}`, `{"applicationSetName":`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := generator.DecodeRequest(body)
		if err != nil {
			if !errors.Is(err, generator.ErrInvalidRequest) {
				t.Fatalf("DecodeRequest(%q) = %v, not an ErrInvalidRequest", body, err)
			}
			return
		}
		// What was accepted encodes and decodes to the same request: the
		// cache key is stable and the command sees what the client sent.
		again, err := json.Marshal(req)
		if err != nil {
			t.Fatalf("json.Marshal(%#v): %v", req, err)
		}
		req2, err := generator.DecodeRequest(again)
		if err != nil {
			t.Fatalf("DecodeRequest(%s) of an encoded request: %v", again, err)
		}
		// JSON does not tell 1e16 from 10000000000000000, nor {} from an
		// omitted parameters: the encodings must agree, not the Go types.
		again2, err := json.Marshal(req2)
		if err != nil {
			t.Fatalf("json.Marshal(%#v): %v", req2, err)
		}
		if diff := cmp.Diff(string(again), string(again2)); diff != "" {
			t.Fatalf("round trip of %q changed the request (-first +second):\n%s", body, diff)
		}
	})
}

func FuzzDecodeResponse(f *testing.F) {
	for _, s := range []string{
		`{"output":{"parameters":[{"a":"b"},{"c":{"d":[1,2.5,12345678901234567890]}}]}}`,
		``, `null`, `{"output":null}`, `{"output":{"parameters":null}}`, `[{"a":"b"}]`,
		`{"output":{"parameters":[1]}}`, `{"output":[]}`, `{"output":{}} x`, `<html>`,
		`{"Output":{"PARAMETERS":[null,{"a":1e400}]}}`, `{"output":{"parameters":[{"a":1}]},"output":{"parameters":[{"b":2}]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		sets, err := generator.DecodeResponse(body)
		if err != nil {
			return
		}
		for i, s := range sets {
			if s == nil {
				t.Fatalf("DecodeResponse(%q): set %d is nil", body, i)
			}
		}
		// A server answering these sets is read back the same.
		enc, err := generator.EncodeResponse(sets)
		if err != nil {
			t.Fatalf("EncodeResponse(%v): %v", sets, err)
		}
		back, err := generator.DecodeResponse(enc)
		if err != nil {
			t.Fatalf("DecodeResponse(%s) of an encoded response: %v", enc, err)
		}
		if len(back) != len(sets) {
			t.Fatalf("round trip of %q: %d sets, want %d", body, len(back), len(sets))
		}
	})
}

func FuzzParseOutput(f *testing.F) {
	for _, s := range []string{
		`[{"a":"b"}]`, `{"output":{"parameters":[{"a":"b"}]}}`, `[]`, ``, `null`, `not json`,
		`[{"a":"b"}, 3]`, `{"a":"b"}`, `{"output":{"parameters":null}}`, "[{}]\n[{}]",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		sets, err := generator.ParseOutput(out)
		if err != nil {
			if !errors.Is(err, generator.ErrBadOutput) {
				t.Fatalf("ParseOutput(%q) = %v, not an ErrBadOutput", out, err)
			}
			return
		}
		if sets == nil {
			t.Fatalf("ParseOutput(%q) = nil sets without error", out)
		}
	})
}

// FuzzEncodeOutput: EncodeOutput accepts what ParseOutput accepts, and
// its body reads back as the sets ParseOutput built.
func FuzzEncodeOutput(f *testing.F) {
	for _, s := range []string{
		`[{"a":"b"}]`, `{"output":{"parameters":[{"a":"b"}]}}`, `[]`, ``, `null`, `not json`,
		`[{"a":"b"}, 3]`, `{"a":"b"}`, `{"output":{"parameters":null}}`, "[{}]\n[{}]",
		`{"output":{"parameters":[{}]},"output":{}}`, `[{"a":1,"a":2.50,"b":12345678901234567890}]`,
		`{"output":{"parameters":[{}],"parameters":3}}`, "[{\"\xff\": \"\u2028<>&\"}]", ` [ { } ] `,
		`[{"n":1e400}]`, `[{"s":"\\","n":-1E999}]`, `[{"n":1e-400}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		want, wantErr := generator.ParseOutput(out)
		body, err := generator.EncodeOutput(out)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("EncodeOutput(%q) error = %v; ParseOutput's = %v", out, err, wantErr)
		}
		if err != nil {
			if !errors.Is(err, generator.ErrBadOutput) {
				t.Fatalf("EncodeOutput(%q) = %v, not an ErrBadOutput", out, err)
			}
			return
		}
		got, err := generator.DecodeResponse(body)
		if err != nil {
			t.Fatalf("DecodeResponse(%s) of EncodeOutput(%q): %v", body, out, err)
		}
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("EncodeOutput(%q) = %s, reads back differently from ParseOutput's sets (-want +got):\n%s", out, body, diff)
		}
	})
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(header + "plugins:\n- name: p\n  token: {env: T}\n  cache: {ttl: 1m}\n  backend: {command: {argv: [./x.sh], timeout: 5}}\n"))
	f.Add([]byte(header + "tls: {certFile: a, keyFile: b}\nplugins:\n- {name: p, path: /, allowUnauthenticated: true, backend: {static: {files: ['*.yaml']}}}\n"))
	f.Add([]byte(header + "plugins:\n- name: p\n  backend: {command: {argv: x}}\n"))
	f.Add([]byte("[]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := generator.ParseConfig(data, "gen.yaml", "/conf")
		if err != nil {
			return
		}
		if len(cfg.Plugins) == 0 || cfg.Listen == "" || cfg.WriteTimeout <= 0 {
			t.Fatalf("ParseConfig(%q) accepted an incomplete configuration: %+v", data, cfg)
		}
		for _, p := range cfg.Plugins {
			if p.Backend == nil || (p.Token == nil) != p.AllowUnauthenticated || p.RequestTimeout <= 0 {
				t.Fatalf("ParseConfig(%q) accepted plugin %+v", data, p)
			}
		}
	})
}
