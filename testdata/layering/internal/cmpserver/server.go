package cmpserver

import (
	_ "helm.sh/helm/v4/pkg/action"

	_ "github.com/strata-dev/strata/internal/generator"
	_ "github.com/strata-dev/strata/internal/values"
)
