package webhook_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/webhook"
)

// hookRunner runs a real hook through hook.Runner, as the engine does
// (without values).
type hookRunner struct {
	r *hook.Runner
	h *hook.Hook
}

func (hr hookRunner) RunWebhook(ctx context.Context, _ string, bc hook.BindingContext) ([]byte, error) {
	out, err := hr.r.Run(ctx, hr.h, hook.Input{Contexts: []hook.BindingContext{bc}})
	if err != nil {
		return nil, err
	}
	return out.Response, nil
}

// BenchmarkValidatingReview: one AdmissionReview over HTTPS answered by a
// sh hook (grep on the binding context, echo to the response file): the
// review's whole cost in the operator, the hook's process included.
func BenchmarkValidatingReview(b *testing.B) {
	dir := b.TempDir()
	p := filepath.Join(dir, "check.sh")
	script := "#!/bin/sh\nif grep -q '\"answer\":\"no\"' \"$BINDING_CONTEXT_PATH\"; then echo '{\"allowed\":false,\"message\":\"no\"}' > \"$VALIDATING_RESPONSE_PATH\"; else echo '{\"allowed\":true}' > \"$VALIDATING_RESPONSE_PATH\"; fi\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		b.Fatal(err)
	}
	r := &hook.Runner{Env: []string{"PATH=" + os.Getenv("PATH")}, TempDir: dir}
	b.Cleanup(func() { _ = r.Close() })
	pk := newPKI(b)
	m := webhook.NewManager(webhook.Settings{Validating: pk.server()}, hookRunner{r: r, h: &hook.Hook{Name: "check.sh", Path: p, Kind: hook.Global}},
		nil, prometheus.NewRegistry(), "", slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(func() { cancel(); m.Wait() })
	m.Start(ctx)
	if err := m.Update(webhook.Bindings{Validating: []webhook.Validating{validating("a.example.com", "", 10)}}); err != nil {
		b.Fatal(err)
	}
	c := pk.client()
	c.Transport.(*http.Transport).DisableKeepAlives = false // the API server keeps its connections
	url := "https://" + m.Addr("validating") + webhook.ValidatingPath("a.example.com")
	body := fmt.Sprintf(admissionReview, "v1", "no")
	b.ResetTimer()
	for range b.N {
		resp, err := c.Post(url, "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(data), `"allowed":false`) {
			b.Fatalf("answer %s", data)
		}
	}
}
