package store

import (
	"fmt"
	"strings"

	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/module"
)

// A ScopeError is a patch operation outside the values its hook may
// change. It names the patch file and the operation's line, and wraps
// ErrScope.
type ScopeError struct {
	// Source names the patch file ("values patch
	// ($VALUES_JSON_PATCH_PATH)").
	Source string
	// Line is the line the operation starts on; 0 when unknown.
	Line int
	// Index is the operation's index in the patch, Op its op.
	Index int
	Op    string
	// Field is the member out of scope, "path" or "from"; Pointer its
	// value.
	Field, Pointer string
	// Scope is the section the patch is for: GlobalKey or a module's
	// values key.
	Scope string
}

// Error is the refusal as a hook's run reports it: the file, the line,
// the operation and what the hook may change instead.
func (e *ScopeError) Error() string {
	var msg string
	if e.Scope == GlobalKey {
		msg = fmt.Sprintf("operation %d (%s %s) is outside the global values; a global hook may change only /global/... and the /<moduleKey>Enabled flags", e.Index, e.Op, e.Pointer)
	} else {
		msg = fmt.Sprintf("operation %d (%s %s) is outside the module's values; a hook of module %s may change only /%s/...", e.Index, e.Op, e.Pointer, e.Scope, e.Scope)
	}
	if e.Line > 0 {
		return fmt.Sprintf("%s line %d: %s", e.Source, e.Line, msg)
	}
	return e.Source + ": " + msg
}

// applyError is the refusal as ApplyPatch reports it, after the patch's
// name: the operation's index and member.
func (e *ScopeError) applyError() error {
	allowed := "/" + e.Scope + "/…"
	if e.Scope == GlobalKey {
		allowed = "/global/… and /<moduleKey>Enabled"
	}
	return fmt.Errorf("%w: operation %d: %s %q: this hook may change only %s", ErrScope, e.Index, e.Field, e.Pointer, allowed)
}

func (e *ScopeError) Unwrap() error { return ErrScope }

// CheckScope is the one rule for the paths a hook's values patch (or
// config values patch) may touch, by path and from: a module hook's
// (scope: its module's values key) only /<key> and below; a global hook's
// (scope GlobalKey) /global and below, and the /<key>Enabled flags — a
// key, then Enabled, nothing below. As addon-operator's
// ValidateHookValuesPatch (pkg/utils/values_patch.go), which accepts every
// root key with the Enabled suffix from a global hook, /globalEnabled is
// such a flag: it is accepted, and stored as the flag of a module with the
// values key "global", which no module has (addon-operator's dynamic
// extender keeps a status for a module named global alike). A bare
// /Enabled names no module and is refused, and so is the whole document
// (the path ""), which is more than any one section. The error is a *ScopeError;
// source names the patch file in it.
func CheckScope(p hook.Patch, scope, source string) error {
	for i, op := range p {
		fields := []string{"path"}
		if op.Op == "move" || op.Op == "copy" {
			fields = append(fields, "from")
		}
		for _, f := range fields {
			ptr := op.Path
			if f == "from" {
				ptr = op.From
			}
			if !inScope(scope, ptr) {
				return &ScopeError{Source: source, Line: op.Line, Index: i, Op: op.Op, Field: f, Pointer: ptr, Scope: scope}
			}
		}
	}
	return nil
}

// CheckHookPatch is CheckScope for a patch hook h wrote: a global hook's
// scope is GlobalKey, a module hook's its module's values key. It is the
// check the operator gives hook.Runner.CheckPatch.
func CheckHookPatch(h *hook.Hook, p hook.Patch, source string) error {
	switch h.Kind {
	case hook.Global:
		return CheckScope(p, GlobalKey, source)
	case hook.Module:
		return CheckScope(p, h.ModuleKey, source)
	}
	return fmt.Errorf("%s: checking scope for kind %v", source, h.Kind)
}

// inScope reports whether the pointer ptr is in the values of scope.
func inScope(scope, ptr string) bool {
	if !strings.HasPrefix(ptr, "/") {
		return false // the whole document, or not a pointer
	}
	seg, deeper := firstSegment(ptr)
	if scope != GlobalKey || seg == GlobalKey {
		return seg == scope
	}
	key, flag := strings.CutSuffix(seg, module.EnabledSuffix)
	return flag && key != "" && !deeper
}

// firstSegment returns the first key of a JSON pointer, unescaped, and
// whether the pointer goes deeper.
func firstSegment(ptr string) (string, bool) {
	s := strings.TrimPrefix(ptr, "/")
	seg, _, deeper := strings.Cut(s, "/")
	seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
	return seg, deeper
}
