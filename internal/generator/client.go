package generator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/strata-dev/strata/internal/document"
)

// Defaults of the Client's zero fields.
const (
	// DefaultTimeout is the ApplicationSet controller's default plugin
	// request timeout.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxResponseBytes bounds a plugin's response body.
	DefaultMaxResponseBytes = 32 << 20
)

// maxErrorBody is how much of an error response's raw body a StatusError
// shows.
const maxErrorBody = 1024

// Client calls a plugin server as Argo CD's ApplicationSet controller does:
// POST <BaseURL>/api/v1/getparams.execute with Content-Type
// application/json, User-Agent argocd-applicationset and, when Token is
// set, Authorization: Bearer <Token>; no retries. Any 2xx status is
// success and an empty 2xx body means zero parameter sets; any other status
// is a *StatusError showing the body's JSON "message", else its "error",
// else the raw body, clipped. Unlike the controller, it bounds the size of
// the response.
type Client struct {
	BaseURL          string
	Token            string
	Timeout          time.Duration // 0: 30 s
	HTTPClient       *http.Client  // nil: a default client
	MaxResponseBytes int64         // 0: a sane default (32 MiB)
	// Warn, when set, is told of a 2xx answer that is an object without
	// output.parameters ({"parameters": [...]}, say): the controller reads
	// it as zero parameter sets, and so does the client.
	Warn func(msg string)
}

// StatusError is a plugin's answer with a status other than 2xx.
type StatusError struct {
	URL        string
	StatusCode int
	// Message is the body's JSON "message" or "error" field, or else the
	// raw body, clipped.
	Message string
}

func (e *StatusError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = "(empty body)"
	}
	return fmt.Sprintf("plugin %s answered %d %s: %s", e.URL, e.StatusCode, http.StatusText(e.StatusCode), msg)
}

// URL returns the address the client posts to: the base URL, a slash
// unless it ends with one, and api/v1/getparams.execute, as the controller
// joins them (so "http://p/x//" posts to "http://p/x//api/v1/...").
func (c *Client) URL() string {
	base := c.BaseURL
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	return base + strings.TrimPrefix(APIPath, "/")
}

// GetParams asks the plugin for the parameter sets of the ApplicationSet
// named appSetName, given the generator's input.parameters. Numbers in the
// answer keep their exact value: integers are int64, or json.Number beyond
// its range; other numbers float64.
func (c *Client) GetParams(ctx context.Context, appSetName string, input map[string]any) ([]map[string]any, error) {
	if c.BaseURL == "" {
		return nil, errors.New("plugin: no base URL; set baseUrl in the plugin's ConfigMap")
	}
	if strings.ContainsAny(c.Token, "\r\n") {
		return nil, errors.New("plugin: the token contains a line break; remove the trailing newline from the Secret or token file")
	}
	url := c.URL()
	// Encoded as the controller does: HTML characters as they are, a
	// trailing newline.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(Request{ApplicationSetName: appSetName, Input: RequestInput{Parameters: input}})
	body := buf.Bytes()
	if err != nil {
		return nil, fmt.Errorf("plugin %s: encoding the request: %w", url, err)
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("plugin: base URL %q: %w", c.BaseURL, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", UserAgent)
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("plugin %s: no answer within %s (requestTimeout): %w", url, timeout, err)
		}
		return nil, fmt.Errorf("plugin %s: %w", url, err)
	}
	defer resp.Body.Close()
	limit := c.MaxResponseBytes
	if limit <= 0 {
		limit = DefaultMaxResponseBytes
	}
	data, err := document.ReadAll(resp.Body, limit, "the answer")
	tooLarge := errors.Is(err, document.ErrTooLarge)
	if err != nil && !tooLarge {
		return nil, fmt.Errorf("plugin %s: %w", url, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &StatusError{URL: url, StatusCode: resp.StatusCode, Message: errorMessage(data)}
	}
	if tooLarge {
		return nil, fmt.Errorf("plugin %s: %w", url, err)
	}
	sets, err := DecodeResponse(data)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: %w", url, err)
	}
	if len(sets) == 0 && c.Warn != nil && lacksOutput(data) {
		c.Warn(fmt.Sprintf(`plugin %s answered an object without "output": {"parameters": [...]}: zero parameter sets, as the controller reads it (it then deletes the ApplicationSet's Applications): %s`, url, clipBody(data)))
	}
	return sets, nil
}

// lacksOutput reports whether a 2xx body is a JSON object without
// output.parameters, in any case.
func lacksOutput(data []byte) bool {
	var top map[string]json.RawMessage
	if json.NewDecoder(bytes.NewReader(data)).Decode(&top) != nil || top == nil {
		return false
	}
	for k, v := range top {
		if !strings.EqualFold(k, "output") {
			continue
		}
		var out map[string]json.RawMessage
		if json.Unmarshal(v, &out) != nil || out == nil {
			return true
		}
		for k := range out {
			if strings.EqualFold(k, "parameters") {
				return false
			}
		}
	}
	return true
}

// DecodeResponse decodes a plugin's 2xx response body as the ApplicationSet
// controller does, with encoding/json into its response type: an empty
// body, null, a missing or null output or output.parameters is zero
// parameter sets; the names "output" and "parameters" match in any case
// ("Output" too); unknown fields and anything after the first JSON value
// are ignored; a null parameter set is an empty one. Every parameter set
// must be a JSON object. Numbers keep their exact value, but one a float64
// cannot hold (1e400) is an error, as in the controller.
func DecodeResponse(data []byte) ([]map[string]any, error) {
	var resp struct {
		Output struct {
			Parameters []map[string]any `json:"parameters"`
		} `json:"output"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&resp); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil // an empty body
		}
		return nil, responseError(err, data)
	}
	sets := resp.Output.Parameters
	for i, s := range sets {
		if s == nil {
			sets[i] = map[string]any{} // null: the controller's nil map
			continue
		}
		if err := checkFloats(s); err != nil {
			return nil, fmt.Errorf("output.parameters[%d]: %w", i, err)
		}
		convertNumbers(s)
	}
	return sets, nil
}

// rangeError is the error of a number a float64 cannot hold.
func rangeError(num string) error {
	return fmt.Errorf("the number %s is out of range (the controller reads numbers as 64-bit floats)", document.Clip(num, 40))
}

// responseError explains why a 2xx body is not a plugin response.
func responseError(err error, data []byte) error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return fmt.Errorf("the answer is not JSON: %w (%s)", err, clipBody(data))
	}
	what := "a JSON " + te.Value
	switch {
	case te.Field == "":
		return fmt.Errorf(`the answer must be an object {"output": {"parameters": [...]}}, but it is %s`, what)
	case te.Type.Kind() == reflect.Struct:
		return fmt.Errorf(`the answer's "output" must be an object {"parameters": [...]}, but it is %s`, what)
	case te.Type.Kind() == reflect.Slice:
		return fmt.Errorf("output.parameters must be a list of objects, one per parameter set, but it is %s", what)
	}
	return fmt.Errorf("each item of output.parameters must be an object (one parameter set), but one is %s", what)
}

// checkFloats reports a number of v that encoding/json could not decode
// into a float64, as the controller does.
func checkFloats(v any) error {
	switch v := v.(type) {
	case json.Number:
		if _, err := strconv.ParseFloat(string(v), 64); err != nil {
			return rangeError(string(v))
		}
	case map[string]any:
		for _, e := range v {
			if err := checkFloats(e); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range v {
			if err := checkFloats(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// errorMessage is what an error response says: its JSON "message", else
// its "error", else the raw body, clipped.
func errorMessage(data []byte) string {
	var v struct {
		Message any `json:"message"`
		Error   any `json:"error"`
	}
	if json.Unmarshal(data, &v) == nil {
		for _, f := range []any{v.Message, v.Error} {
			switch f := f.(type) {
			case string:
				if f != "" {
					return document.Clip(f, maxErrorBody)
				}
			case nil:
			default:
				b, _ := json.Marshal(f)
				return document.Clip(string(b), maxErrorBody)
			}
		}
	}
	return clipBody(data)
}

func clipBody(data []byte) string {
	if len(data) > 2*maxErrorBody {
		data = data[:2*maxErrorBody]
	}
	return document.Clip(strings.ToValidUTF8(strings.TrimSpace(string(data)), "\uFFFD"), maxErrorBody)
}
