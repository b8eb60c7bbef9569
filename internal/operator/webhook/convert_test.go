package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/webhook"
)

func conv(hookID, name string, rules ...string) webhook.Conversion {
	b := &hook.ConversionBinding{Name: name, CRDName: "crontabs.stable.example.com"}
	for i := 0; i+1 < len(rules); i += 2 {
		b.Conversions = append(b.Conversions, hook.ConversionRule{FromVersion: rules[i], ToVersion: rules[i+1]})
	}
	return webhook.Conversion{Hook: hookID, Binding: b}
}

func TestChain(t *testing.T) {
	a := conv("h1", "a", "unstable.crontab.io/v1beta1", "stable.example.com/v1beta1", "stable.example.com/v1beta1", "stable.example.com/v1beta2")
	b := conv("h2", "b", "v1beta2", "v1", "v1", "v1beta2")
	all := []webhook.Conversion{a, b}
	steps := func(ss []webhook.Step) []string {
		var out []string
		for _, s := range ss {
			out = append(out, s.Hook+":"+s.Rule.FromVersion+">"+s.Rule.ToVersion+"="+s.To)
		}
		return out
	}
	tests := []struct {
		name, from, to string
		want           []string
	}{
		{"one rule", "unstable.crontab.io/v1beta1", "stable.example.com/v1beta1", []string{"h1:unstable.crontab.io/v1beta1>stable.example.com/v1beta1=stable.example.com/v1beta1"}},
		{"a chain across hooks, short versions keep the group", "unstable.crontab.io/v1beta1", "stable.example.com/v1", []string{
			"h1:unstable.crontab.io/v1beta1>stable.example.com/v1beta1=stable.example.com/v1beta1",
			"h1:stable.example.com/v1beta1>stable.example.com/v1beta2=stable.example.com/v1beta2",
			"h2:v1beta2>v1=stable.example.com/v1"}},
		{"a short rule matches any group", "stable.example.com/v1", "stable.example.com/v1beta2", []string{"h2:v1>v1beta2=stable.example.com/v1beta2"}},
		{"no way back", "stable.example.com/v1beta2", "unstable.crontab.io/v1beta1", nil},
		{"other group's version", "other.example.com/v1beta1", "stable.example.com/v1beta2", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := steps(webhook.Chain(all, tc.from, tc.to)); !cmp.Equal(got, tc.want) {
				t.Errorf("Chain(%s, %s) = %v, want %v", tc.from, tc.to, got, tc.want)
			}
		})
	}
}

func TestVersionsMatch(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"v1", "v1", true}, {"v1", "g.io/v1", true}, {"g.io/v1", "v1", true}, {"g.io/v1", "h.io/v1", false}, {"v1", "v2", false}, {"g.io/v1", "g.io/v2", false},
	} {
		if got := webhook.VersionsMatch(tc.a, tc.b); got != tc.want {
			t.Errorf("VersionsMatch(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestParseAnswers(t *testing.T) {
	vtests := []struct{ in, want string }{
		{`{"allowed":true}`, ""},
		{`{"allowed":false,"message":"no","warnings":["w"]}`, ""},
		{``, `the hook wrote no answer to $VALIDATING_RESPONSE_PATH; write {"allowed": true} or {"allowed": false, "message": "..."}`},
		{`{"message":"x"}`, `$VALIDATING_RESPONSE_PATH has no "allowed"; write {"allowed": true} or {"allowed": false, "message": "..."}`},
		{`{"allowed":true,"patch":"W10="}`, `$VALIDATING_RESPONSE_PATH has a patch: a validating webhook cannot change the object (strata has no mutating webhooks)`},
		{`{"allowed":false,"message":"a` + strings.Repeat("é", 3000) + `"}`, ""},
		{`{"allowed":true,"alowed":true}`, `$VALIDATING_RESPONSE_PATH has an unknown field "alowed"; the fields are allowed, message and warnings`},
		{`[true]`, `$VALIDATING_RESPONSE_PATH is not a JSON object (json: cannot unmarshal array into Go value of type map[string]json.RawMessage); write {"allowed": true} or {"allowed": false, "message": "..."}`},
	}
	for _, tc := range vtests {
		a, err := webhook.ParseValidatingAnswer([]byte(tc.in))
		if got := errString(err); got != tc.want {
			t.Errorf("ParseValidatingAnswer(%.80s) = %q, want %q", tc.in, got, tc.want)
		}
		if a != nil && (len(a.Message) > 4096+len("…") || !utf8.ValidString(a.Message)) {
			t.Errorf("ParseValidatingAnswer(%.80s): message of %d bytes, valid UTF-8 %v; want at most 4096 and valid", tc.in, len(a.Message), utf8.ValidString(a.Message))
		}
	}
	ctests := []struct{ in, want string }{
		{`{"convertedObjects":[{"apiVersion":"v2"}]}`, ""},
		{`{"failedMessage":"Conversion of crontabs.stable.example.com is failed"}`, ""},
		{`{}`, `$CONVERSION_RESPONSE_PATH has neither convertedObjects nor failedMessage`},
		{`{"convertedObjects":[1]}`, `$CONVERSION_RESPONSE_PATH: convertedObjects[0] is not an object`},
		{`{"converted":[]}`, `$CONVERSION_RESPONSE_PATH has an unknown field "converted"; the fields are convertedObjects and failedMessage`},
		{"  \n", `the hook wrote no answer to $CONVERSION_RESPONSE_PATH; write {"convertedObjects": [...]} or {"failedMessage": "..."}`},
	}
	for _, tc := range ctests {
		_, err := webhook.ParseConversionAnswer([]byte(tc.in))
		if got := errString(err); got != tc.want {
			t.Errorf("ParseConversionAnswer(%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

var versionRE = regexp.MustCompile(`"apiVersion":"[^"]*"`)

// convertingRunner converts by rewriting apiVersion to the rule's target
// (the review's desiredAPIVersion); answers maps a binding to a fixed
// answer instead.
func convertingRunner(calls *[]string, mu *sync.Mutex, answers map[string]string) webhook.Runner {
	return runFunc(func(_ context.Context, hookID string, bc hook.BindingContext) ([]byte, error) {
		mu.Lock()
		*calls = append(*calls, fmt.Sprintf("%s %s %s>%s", hookID, bc.Binding, bc.FromVersion, bc.ToVersion))
		mu.Unlock()
		if a, ok := answers[bc.Binding]; ok {
			return []byte(a), nil
		}
		var r struct {
			Request struct {
				DesiredAPIVersion string            `json:"desiredAPIVersion"`
				Objects           []json.RawMessage `json:"objects"`
			} `json:"request"`
		}
		if err := json.Unmarshal(bc.Review, &r); err != nil {
			return nil, err
		}
		for i, o := range r.Request.Objects {
			r.Request.Objects[i] = versionRE.ReplaceAll(o, []byte(`"apiVersion":"`+r.Request.DesiredAPIVersion+`"`))
		}
		return json.Marshal(map[string]any{"convertedObjects": r.Request.Objects})
	})
}

const conversionReview = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u-1","desiredAPIVersion":%q,"objects":[%s]}}`

func obj(version, name string) string {
	return fmt.Sprintf(`{"apiVersion":%q,"kind":"CronTab","metadata":{"name":%q}}`, version, name)
}

func TestConversionReviews(t *testing.T) {
	var calls []string
	var mu sync.Mutex
	bindings := webhook.Bindings{Conversion: []webhook.Conversion{
		conv("global a.sh", "alpha", "stable.example.com/v1alpha1", "stable.example.com/v1alpha2"),
		conv("module m b.sh", "beta", "v1alpha2", "v1", "stable.example.com/v1", "stable.example.com/v1alpha1"),
		conv("global c.sh", "broken", "stable.example.com/v9", "stable.example.com/v10"),
		conv("global d.sh", "short", "stable.example.com/v5", "stable.example.com/v6"),
		conv("global e.sh", "failing", "stable.example.com/v7", "stable.example.com/v8"),
	}}
	answers := map[string]string{
		"broken":  `{"convertedObjects":[{"apiVersion":"stable.example.com/v9"}]}`,
		"short":   `{"convertedObjects":[]}`,
		"failing": `{"failedMessage":"Conversion of crontabs.stable.example.com is failed"}`,
	}
	m, p, _ := started(t, convertingRunner(&calls, &mu, answers), bindings, "Fail")
	c := p.client()
	url := "https://" + m.Addr("conversion") + webhook.ConversionPath("crontabs.stable.example.com")

	tests := []struct {
		name, desired, objects string
		wantObjects            []string // apiVersion/name of each
		wantCalls              []string
		wantFailure            string
	}{
		{"mixed versions, a chain across hooks, order kept", "stable.example.com/v1",
			strings.Join([]string{obj("stable.example.com/v1alpha1", "a"), obj("stable.example.com/v1", "b"), obj("stable.example.com/v1alpha2", "c"), obj("stable.example.com/v1alpha1", "d")}, ","),
			[]string{"stable.example.com/v1/a", "stable.example.com/v1/b", "stable.example.com/v1/c", "stable.example.com/v1/d"},
			[]string{"global a.sh alpha stable.example.com/v1alpha1>stable.example.com/v1alpha2", "module m b.sh beta v1alpha2>v1", "module m b.sh beta v1alpha2>v1"}, ""},
		{"two steps back", "stable.example.com/v1alpha1", obj("stable.example.com/v1alpha2", "a"), []string{"stable.example.com/v1alpha1/a"},
			[]string{"module m b.sh beta v1alpha2>v1", "module m b.sh beta stable.example.com/v1>stable.example.com/v1alpha1"}, ""},
		{"no chain", "stable.example.com/v1alpha1", obj("stable.example.com/v10", "a"), nil, nil,
			"no hook converts crontabs.stable.example.com from stable.example.com/v10 to stable.example.com/v1alpha1; the hooks' conversions are stable.example.com/v1alpha1 -> stable.example.com/v1alpha2 (global a.sh), v1alpha2 -> v1 (module m b.sh), stable.example.com/v1 -> stable.example.com/v1alpha1 (module m b.sh), stable.example.com/v9 -> stable.example.com/v10 (global c.sh), stable.example.com/v5 -> stable.example.com/v6 (global d.sh), stable.example.com/v7 -> stable.example.com/v8 (global e.sh)"},
		{"failedMessage", "stable.example.com/v8", obj("stable.example.com/v7", "a"), nil, []string{"global e.sh failing stable.example.com/v7>stable.example.com/v8"},
			"Conversion of crontabs.stable.example.com is failed"},
		{"wrong apiVersion back", "stable.example.com/v10", obj("stable.example.com/v9", "a"), nil, []string{"global c.sh broken stable.example.com/v9>stable.example.com/v10"},
			`global c.sh (binding broken) returned convertedObjects[0] with apiVersion "stable.example.com/v9"; the rule stable.example.com/v9 -> stable.example.com/v10 converts to stable.example.com/v10`},
		{"objects missing", "stable.example.com/v6", obj("stable.example.com/v5", "a"), nil, []string{"global d.sh short stable.example.com/v5>stable.example.com/v6"},
			"global d.sh (binding short) returned 0 objects for 1; convertedObjects must hold every object of the request, in order"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			calls = nil
			mu.Unlock()
			code, out := post(t, c, url, fmt.Sprintf(conversionReview, tc.desired, tc.objects))
			if code != http.StatusOK {
				t.Fatalf("status %d", code)
			}
			resp := out["response"].(map[string]any)
			if resp["uid"] != "u-1" {
				t.Errorf("uid %v", resp["uid"])
			}
			result := resp["result"].(map[string]any)
			if tc.wantFailure != "" {
				if result["status"] != "Failure" || result["message"] != tc.wantFailure {
					t.Errorf("result %v, want Failure: %s", result, tc.wantFailure)
				}
			} else {
				if result["status"] != "Success" {
					t.Fatalf("result %v", result)
				}
				var got []string
				for _, o := range resp["convertedObjects"].([]any) {
					om := o.(map[string]any)
					got = append(got, om["apiVersion"].(string)+"/"+om["metadata"].(map[string]any)["name"].(string))
				}
				if !cmp.Equal(got, tc.wantObjects) {
					t.Errorf("converted %v, want %v", got, tc.wantObjects)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if !cmp.Equal(calls, tc.wantCalls) {
				t.Errorf("hook runs %v, want %v", calls, tc.wantCalls)
			}
		})
	}
}

func FuzzParseValidatingAnswer(f *testing.F) {
	for _, s := range []string{`{"allowed":true}`, `{"allowed":false,"message":"m","warnings":["a"]}`, `{"allowed":1}`, `[]`, ``, `{"patch":"x"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := webhook.ParseValidatingAnswer(data)
		if err == nil && (a == nil || len(a.Message) > 4096+len("…")) {
			t.Fatalf("answer %+v", a)
		}
	})
}

func FuzzParseConversionAnswer(f *testing.F) {
	for _, s := range []string{`{"convertedObjects":[{}]}`, `{"failedMessage":"x"}`, `{"convertedObjects":[1]}`, `{}`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := webhook.ParseConversionAnswer(data)
		if err != nil {
			return
		}
		if a.FailedMessage == "" && a.ConvertedObjects == nil {
			t.Fatalf("an answer with nothing: %s", data)
		}
		for _, o := range a.ConvertedObjects {
			if !json.Valid(o) {
				t.Fatalf("invalid object %s", o)
			}
		}
	})
}

// FuzzReviewBodies: whatever the body of a review, the handler answers
// 200 with a review of the request's uid, or a client error; it never
// panics.
func FuzzReviewBodies(f *testing.F) {
	for _, s := range []string{fmt.Sprintf(admissionReview, "v1", "x"), fmt.Sprintf(conversionReview, "stable.example.com/v2", obj("stable.example.com/v1", "a")),
		`{"request":{}}`, `{"request":null}`, `[]`, `{"request":{"uid":"u","objects":[1,{"apiVersion":5}]}}`} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	var calls []string
	var mu sync.Mutex
	runner := convertingRunner(&calls, &mu, nil)
	bindings := webhook.Bindings{
		Validating: []webhook.Validating{validating("a.example.com", "Fail", 10)},
		Conversion: []webhook.Conversion{conv("global a.sh", "a", "stable.example.com/v1", "stable.example.com/v2")},
	}
	mr := runFunc(func(ctx context.Context, id string, bc hook.BindingContext) ([]byte, error) {
		if bc.Type == hook.TypeValidating {
			return []byte(`{"allowed":true}`), nil
		}
		return runner.RunWebhook(ctx, id, bc)
	})
	m, _, _ := started(f, mr, bindings, "Fail")
	h := m.Handler()
	f.Fuzz(func(t *testing.T, body []byte, validating bool) {
		path := webhook.ConversionPath("crontabs.stable.example.com")
		if validating {
			path = webhook.ValidatingPath("a.example.com")
		}
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			if rec.Code < 400 || rec.Code >= 500 {
				t.Fatalf("status %d", rec.Code)
			}
			return
		}
		var out struct {
			Response *struct {
				UID string `json:"uid"`
			} `json:"response"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil {
			t.Fatalf("answer %s: %v", rec.Body.Bytes(), err)
		}
	})
}
