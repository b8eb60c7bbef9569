package store_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/strata-dev/strata/internal/operator/config"
	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/module"
	"github.com/strata-dev/strata/internal/operator/store"
)

// A module's values from its values.yaml, the config store and a hook's
// patch, and where each key came from.
func Example() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	os.MkdirAll(filepath.Join(dir, "modules", "001-cert-manager"), 0o755)
	os.WriteFile(filepath.Join(dir, "modules", "001-cert-manager", "values.yaml"),
		[]byte("certManager:\n  replicas: 1\n  image: cm:v1\ncertManagerEnabled: true\n"), 0o644)

	set, _ := module.Discover([]string{filepath.Join(dir, "modules")}, "", module.Options{})
	st, _ := store.New(set, store.Options{})
	cfg, _ := config.Parse([]byte("certManager: |\n  replicas: 3\n"), "config.yaml", config.Limits{})
	st.SetConfig(cfg)
	patch, _ := hook.ParsePatch([]byte(`[{"op":"add","path":"/certManager/internal","value":{"ca":"..."}}]`), "patch.json")
	st.ApplyPatch(store.Patch{Scope: "certManager", Hook: "hooks/ca.sh", Binding: "beforeHelm",
		Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Ops: patch})

	exps, _ := st.Explain("certManager", nil)
	for _, e := range exps {
		fmt.Printf("%s = %v <- %s\n", e.Path, e.Value, e.Winner.Layer)
	}
	// Output:
	// certManager.image = cm:v1 <- module values.yaml
	// certManager.internal.ca = ... <- hook hooks/ca.sh (beforeHelm) at 2026-01-01T00:00:00Z
	// certManager.replicas = 3 <- config store
}
