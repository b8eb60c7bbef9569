package hook

import (
	"context"
	"errors"
	"strconv"
)

var errTODO = errors.New("hook: not implemented yet")

func itoa(n int) string { return strconv.Itoa(n) }

func parseConfig(data []byte, k Kind, name string) (*Config, error) { return nil, errTODO }
func encodeContexts(buf []byte, version string, ctxs []BindingContext) ([]byte, error) {
	return nil, errTODO
}
func decodeContexts(data []byte) ([]BindingContext, error)                     { return nil, errTODO }
func parsePatch(data []byte, source string) (Patch, error)                     { return nil, errTODO }
func checkScope(p Patch, k Kind, moduleKey, source string) error               { return errTODO }
func parseMetrics(data []byte, source string) ([]MetricOperation, error)       { return nil, errTODO }
func parseKubernetesPatch(data []byte, source string) ([]KubeOperation, error) { return nil, errTODO }
func (r *Runner) config(ctx context.Context, h *Hook) (*Config, error)         { return nil, errTODO }
func (r *Runner) run(ctx context.Context, h *Hook, in Input) (*Output, error)  { return nil, errTODO }
