package queue

import _ "github.com/strata-dev/strata/internal/operator/store"
