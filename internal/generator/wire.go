package generator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/strata-dev/strata/internal/document"
)

// APIPath is where a plugin serves, below its base URL: Argo CD's
// ApplicationSet controller POSTs to <baseUrl>/api/v1/getparams.execute.
const APIPath = "/api/v1/getparams.execute"

// UserAgent is the User-Agent Argo CD's ApplicationSet controller sends.
const UserAgent = "argocd-applicationset"

// Wire types of POST <baseUrl>/api/v1/getparams.execute.

// Request is what the ApplicationSet controller sends: the name of the
// ApplicationSet (not its namespace) and the generator's input.parameters.
type Request struct {
	ApplicationSetName string       `json:"applicationSetName"`
	Input              RequestInput `json:"input"`
}

// RequestInput is a plugin generator's spec.generators[].plugin.input.
type RequestInput struct {
	Parameters map[string]any `json:"parameters,omitempty"`
}

// Response is what a plugin answers: one map per parameter set.
type Response struct {
	Output ResponseOutput `json:"output"`
}

// ResponseOutput holds the parameter sets of a Response.
type ResponseOutput struct {
	Parameters []map[string]any `json:"parameters"`
}

// errorBody is the JSON body of an error response: Argo CD's client shows
// its "message" field.
type errorBody struct {
	Message string `json:"message"`
}

// ErrInvalidRequest is wrapped by the errors of DecodeRequest.
var ErrInvalidRequest = errors.New("invalid request")

// requestLimits bound the tree a request body may decode into, on top of
// the byte limit the server applies while reading it.
var requestLimits = document.Limits{MaxDepth: 64, MaxNodes: 1 << 20}

// DecodeRequest decodes and checks a request body. Numbers keep their exact
// value (integers as int64, or json.Number beyond its range), duplicate keys
// are errors, and the tree is bounded in depth and size. Unknown fields are
// ignored, as by Argo CD's own types, so that a newer controller that sends
// more can still talk to this server. Errors wrap ErrInvalidRequest.
func DecodeRequest(body []byte) (*Request, error) {
	req, err := decodeRequest(body, false)
	if err != nil && errors.Is(err, errNeedLines) {
		// Only a shape error needs lines: parse again, recording them.
		req, err = decodeRequest(body, true)
	}
	return req, err
}

// errNeedLines marks a shape error found without positions.
var errNeedLines = errors.New("need lines")

func decodeRequest(body []byte, positions bool) (*Request, error) {
	lim := requestLimits
	lim.MaxBytes = int64(len(body)) + 1
	tree, pos, err := document.Loader{JSON: true, Limits: lim, Positions: positions}.ParseAny(body, "request body")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	invalid := ErrInvalidRequest
	if !positions {
		invalid = errNeedLines
	}
	top, ok := tree.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: the body must be a JSON object {\"applicationSetName\": ..., \"input\": {\"parameters\": {...}}}, but it is %s",
			invalid, document.Describe(tree))
	}
	req := &Request{}
	for k, v := range top {
		switch k {
		case "applicationSetName":
			s, ok := v.(string)
			if !ok && v != nil {
				return nil, fmt.Errorf("%w: %s: applicationSetName must be a string, but it is %s", invalid, at(pos.Key(k)), document.Describe(v))
			}
			req.ApplicationSetName = s
		case "input":
			if v == nil {
				continue
			}
			in, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%w: %s: input must be an object, but it is %s", invalid, at(pos.Key(k)), document.Describe(v))
			}
			iv := in["parameters"]
			if iv == nil {
				continue
			}
			ps, ok := iv.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%w: %s: input.parameters must be an object, but it is %s", invalid, at(pos.Key(k).Key("parameters")), document.Describe(iv))
			}
			if len(ps) > 0 { // {} is no parameters, as the controller omits it
				req.Input.Parameters = ps
			}
		}
	}
	return req, nil
}

func at(p *document.Pos) string {
	if p == nil || p.Line == 0 {
		return "request body"
	}
	return fmt.Sprintf("request body line %d", p.Line)
}

// EncodeResponse encodes sets as a response body. A nil slice is encoded as
// an empty list, never as null.
func EncodeResponse(sets []map[string]any) ([]byte, error) {
	if sets == nil {
		sets = []map[string]any{}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(Response{Output: ResponseOutput{Parameters: sets}}); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// decodeJSON decodes one JSON value the way Argo CD does (duplicate keys:
// the last wins), keeping numbers exact: integers become int64, or
// json.Number beyond its range, other numbers float64, as in the values
// package's trees. Trailing data after the value is an error.
func decodeJSON(data []byte, out *any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(out); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("unexpected data after the JSON value")
	}
	*out = convertNumbers(*out)
	return nil
}

func convertNumbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		return document.Number(string(v))
	case map[string]any:
		for k, e := range v {
			v[k] = convertNumbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = convertNumbers(e)
		}
	}
	return v
}

// parameterSets checks that v, decoded JSON, is a list of objects, and
// returns them. what names v in errors.
func parameterSets(v any, what string) ([]map[string]any, error) {
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s must be a list of objects, one per parameter set, but it is %s", what, document.Describe(v))
	}
	sets := make([]map[string]any, 0, len(list))
	for i, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s[%d] must be an object (one parameter set), but it is %s", what, i, document.Describe(e))
		}
		sets = append(sets, m)
	}
	return sets, nil
}
