package hook_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/strata-dev/strata/internal/hookexec"
)

// BenchmarkHookexecFloor starts the script through hookexec alone: the
// floor of any hook run here (process group, supervision, pipes).
func BenchmarkHookexecFloor(b *testing.B) {
	p := benchScript(b)
	dir := b.TempDir()
	cmd := &hookexec.Command{Argv: []string{p}, Env: []string{"PATH=" + os.Getenv("PATH"), "VALUES_JSON_PATCH_PATH=" + filepath.Join(dir, "patch.json")}}
	defer cpuPerOp(b)()
	for b.Loop() {
		if _, err := cmd.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
		_ = os.Remove(filepath.Join(dir, "patch.json"))
	}
}
