package generator

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/strata-dev/strata/internal/document"
)

// maxTokenBytes bounds a token file.
const maxTokenBytes = 64 << 10

// A tokenChecker holds a plugin's token, as a SHA-256 digest so that
// comparing takes the same time whatever the lengths, and re-reads a token
// file when it changes.
type tokenChecker struct {
	src    TokenSource
	mu     sync.Mutex // serializes Reload
	stamp  string
	digest atomic.Pointer[[sha256.Size]byte]
}

func newTokenChecker(src TokenSource) (*tokenChecker, error) {
	t := &tokenChecker{src: src}
	if src.Env != "" {
		v, ok := os.LookupEnv(src.Env)
		if !ok {
			return nil, fmt.Errorf("token: environment variable %s is not set", src.Env)
		}
		if err := t.set(v); err != nil {
			return nil, fmt.Errorf("token: environment variable %s: %w", src.Env, err)
		}
		return t, nil
	}
	if _, err := t.Reload(); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *tokenChecker) set(token string) error {
	// A file written with echo ends in a newline; a Secret's value may too.
	token = strings.TrimRight(token, "\r\n")
	switch {
	case strings.TrimSpace(token) == "":
		return errors.New("the token is empty")
	case strings.ContainsAny(token, "\r\n"):
		return errors.New("the token spans several lines; a token is one line")
	}
	d := sha256.Sum256([]byte(token))
	t.digest.Store(&d)
	return nil
}

// Reload re-reads the token file when it changed. It reports whether it
// did; on error the last good token stays.
func (t *tokenChecker) Reload() (bool, error) {
	if t.src.File == "" {
		return false, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	stamp := fileStamp([]string{t.src.File})
	if stamp == t.stamp && t.digest.Load() != nil {
		return false, nil
	}
	data, err := document.ReadFile(t.src.File, maxTokenBytes)
	if errors.Is(err, document.ErrTooLarge) {
		return false, fmt.Errorf("token: %w; is it the right file?", err)
	}
	if err != nil {
		return false, fmt.Errorf("token: %w", err)
	}
	if err := t.set(string(data)); err != nil {
		return false, fmt.Errorf("token: %s: %w", t.src.File, err)
	}
	t.stamp = stamp
	return true, nil
}

// check answers 0 for a request with the right token, else the status to
// answer and why: 401 without a bearer token, 403 with a wrong one.
func (t *tokenChecker) check(r *http.Request) (int, string) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return http.StatusUnauthorized, "missing bearer token: send Authorization: Bearer <token> (the token in the plugin's ConfigMap)"
	}
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return http.StatusUnauthorized, "the Authorization header is not a bearer token: send Authorization: Bearer <token>"
	}
	token = strings.TrimSpace(token)
	got := sha256.Sum256([]byte(token))
	want := t.digest.Load()
	if want == nil || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
		if strings.HasPrefix(token, "$") {
			// Argo CD sends the ConfigMap's reference itself when it
			// cannot resolve it.
			return http.StatusForbidden, "wrong token: it starts with $, so the ApplicationSet controller sent the plugin ConfigMap's token reference unresolved; " +
				"check that the Secret it names exists in the controller's namespace, holds the key, and is labelled app.kubernetes.io/part-of: argocd"
		}
		return http.StatusForbidden, "wrong token"
	}
	return 0, ""
}
