package builtin_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/strata-dev/strata/internal/cmpserver"
	"github.com/strata-dev/strata/internal/cmpserver/builtin"
	"github.com/strata-dev/strata/internal/params"
)

func TestNames(t *testing.T) {
	if got, want := builtin.Names(), []string{"helm"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		want    cmpserver.Info
		wantErr string
	}{
		{name: "helm", want: cmpserver.Info{Name: "helm", DiscoveryConfigured: true, ReadOnlyRepo: true}},
		{name: "kustomize", wantErr: `"kustomize": unknown built-in plugin; the built-in plugins are: helm`},
		{name: "", wantErr: `"": unknown built-in plugin; the built-in plugins are: helm`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := builtin.New(tc.name, builtin.Options{})
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr || !errors.Is(err, builtin.ErrUnknown) {
					t.Fatalf("New(%q) error = %v, want %q wrapping ErrUnknown", tc.name, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Info(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Info() = %+v, want %+v", got, tc.want)
			}
			if got, want := p.Info().SocketName(), tc.name+".sock"; got != want {
				t.Errorf("SocketName() = %q, want %q", got, want)
			}
		})
	}
}

// TestHelmMatchesCharts runs the table's Helm plugin: it matches a
// directory holding a Chart.yaml and nothing else.
func TestHelmMatchesCharts(t *testing.T) {
	p, err := builtin.New("helm", builtin.Options{})
	if err != nil {
		t.Fatal(err)
	}
	chart, other := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(chart, "Chart.yaml"), []byte("apiVersion: v2\nname: c\nversion: 0.1.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]bool{chart: true, other: false} {
		got, err := p.Match(t.Context(), &params.Request{RepoRoot: dir, AppPath: dir})
		if err != nil || got != want {
			t.Errorf("Match(%s) = %v, %v; want %v", dir, got, err, want)
		}
	}
}
