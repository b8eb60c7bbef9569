package main

import _ "github.com/strata-dev/strata/internal/cli"
