//go:build tools

// Package tools pins flant's addon-operator, the peer of hack/opbench's
// cluster mode. The module holds only this file: build.sh builds
// github.com/flant/addon-operator/cmd/addon-operator at the version required
// in go.mod, with the replace directives of that version's own go.mod.
package tools

import _ "github.com/flant/addon-operator/cmd/addon-operator"
