package operator

import _ "github.com/strata-dev/strata/internal/operator/queue"
