package kubebind

import (
	"context"
	"errors"

	"github.com/strata-dev/strata/internal/operator/hook"
)

var errTODO = errors.New("kubebind: not implemented yet")

type monitorState struct{}

func newMonitorState() *monitorState                  { return &monitorState{} }
func (s *monitorState) snapshot() []hook.ObjectResult { return nil }
func (s *monitorState) lastErr() error                { return nil }
func (m *Monitor) start(ctx context.Context, emit func(Event)) (hook.BindingContext, error) {
	return hook.BindingContext{}, errTODO
}
func (s *Set) start(ctx context.Context, emit func(Event)) ([]hook.BindingContext, error) {
	return nil, errTODO
}
func (s *Set) fill(ctxs []hook.BindingContext) []hook.BindingContext { return ctxs }

type localState struct{}

func (s *LocalSource) start(ctx context.Context) error { return errTODO }
func (s *LocalSource) watch(ctx context.Context, apiVersion, kind string, fn func(Change)) ([]*Object, error) {
	return nil, errTODO
}
