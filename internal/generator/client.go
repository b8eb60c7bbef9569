package generator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
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
// POST <BaseURL>/api/v1/getparams.execute with Content-Type and Accept
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

// URL returns the address the client posts to.
func (c *Client) URL() string {
	return strings.TrimRight(c.BaseURL, "/") + APIPath
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
	body, err := json.Marshal(Request{ApplicationSetName: appSetName, Input: RequestInput{Parameters: input}})
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
	req.Header.Set("Accept", "application/json")
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
	return sets, nil
}

// DecodeResponse decodes a plugin's 2xx response body as the ApplicationSet
// controller does: an empty body or a null output.parameters is zero
// parameter sets; unknown fields are ignored; every parameter set must be a
// JSON object.
func DecodeResponse(data []byte) ([]map[string]any, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	var v any
	if err := decodeJSON(data, &v); err != nil {
		return nil, fmt.Errorf("the answer is not JSON: %w (%s)", err, clipBody(data))
	}
	if v == nil {
		return nil, nil
	}
	top, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf(`the answer must be an object {"output": {"parameters": [...]}}, but it is %s`, document.Describe(v))
	}
	out := top["output"]
	if out == nil {
		return nil, nil
	}
	om, ok := out.(map[string]any)
	if !ok {
		return nil, fmt.Errorf(`the answer's "output" must be an object {"parameters": [...]}, but it is %s`, document.Describe(out))
	}
	return parameterSets(om["parameters"], "output.parameters")
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
