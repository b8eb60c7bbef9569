// Command hello stands in for strata in hack/dist's tests: a small
// program with one module dependency, quick to build.
package main

import (
	"fmt"

	"github.com/google/go-cmp/cmp"
)

func main() { fmt.Println(cmp.Equal(1, 1)) }
