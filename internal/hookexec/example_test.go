package hookexec_test

import (
	"context"
	"fmt"
	"time"

	"github.com/strata-dev/strata/internal/hookexec"
)

func ExampleCommand_Run() {
	c := &hookexec.Command{
		Argv:    []string{"echo", "kind: ConfigMap"},
		Env:     []string{"PATH=/usr/bin:/bin", "ARGOCD_APP_NAME=guestbook"},
		Timeout: time.Minute,
	}
	res, err := c.Run(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s", res.Stdout)
	// Output: kind: ConfigMap
}

func ExampleExitError() {
	c := &hookexec.Command{
		Argv: []string{"sh", "-c", "echo 'Error: chart not found' >&2; exit 3"},
		Env:  []string{"PATH=/usr/bin:/bin"},
	}
	_, err := c.Run(context.Background())
	fmt.Println(err)
	// Output: `sh -c echo 'Error: chart not found' >&2; exit 3` failed exit status 3: Error: chart not found
}
