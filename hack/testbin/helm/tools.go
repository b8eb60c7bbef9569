//go:build tools

// Package tools pins the Helm CLI that strata's parity tests run. The module
// holds only this file: build.sh builds helm.sh/helm/v4/cmd/helm at the
// version required in go.mod.
package tools

import _ "helm.sh/helm/v4/cmd/helm"
