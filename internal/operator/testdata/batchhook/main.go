// Command batchhook is a module-sdk batch hook for strata's tests, written
// from the protocol with the standard library only (module-sdk is not a
// dependency of strata): `hook list`, `hook config`, `hook run N`.
//
// Hook 0 ("zero") has onStartup and a schedule every second; hook 1
// ("one") has beforeHelm (beforeAll for a global hook) and a kubernetes
// binding on ConfigMaps with a jqFilter. Each run adds what it saw to the
// values of MODULE_NAME ("global" or the module's name, which the test
// keeps equal to its values key):
//
//	<key>.zeroSeen  the binding:type pairs hook 0 ran for
//	<key>.fromOne   the sorted filter results of hook 1's snapshot "cms"
//	<key>.moduleName, <key>.args  MODULE_NAME and the arguments of the run
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
)

const config = `{
  "version": "v1",
  "hooks": [
    {"configVersion": "v1", "metadata": {"name": "zero", "path": "batch/zero"},
     "onStartup": 1,
     "schedule": [{"name": "tick", "crontab": "* * * * * *"}]},
    {"configVersion": "v1", "metadata": {"name": "one", "path": "batch/one"},
     "beforeHelm": 1,
     "kubernetes": [{"name": "cms", "apiVersion": "v1", "kind": "ConfigMap",
                     "jqFilter": ".metadata.name", "executeHookOnEvent": true}],
     "settings": {"executionMinInterval": 0, "executionBurst": 1}}
  ]
}`

func main() {
	args := strings.Join(os.Args[1:], " ")
	switch {
	case args == "hook list":
		fmt.Print("Found 2 items:\n0 - zero\n1 - one\n")
	case args == "hook config":
		fmt.Println(config)
	case args == "hook run 0" || args == "hook run 1":
		if err := run(os.Args[3]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	default:
		fmt.Fprintf(os.Stderr, "unknown command %q\n", args)
		os.Exit(1)
	}
}

type bindingContext struct {
	Binding   string `json:"binding"`
	Type      string `json:"type"`
	Snapshots map[string][]struct {
		FilterResult any `json:"filterResult"`
	} `json:"snapshots"`
}

func run(n string) error {
	key := os.Getenv("MODULE_NAME")
	if key == "" {
		return fmt.Errorf("no MODULE_NAME")
	}
	var contexts []bindingContext
	if err := readJSON(os.Getenv("BINDING_CONTEXT_PATH"), &contexts); err != nil {
		return err
	}
	var values map[string]map[string]any
	if err := readJSON(os.Getenv("VALUES_PATH"), &values); err != nil {
		return err
	}
	patch := []map[string]any{
		{"op": "add", "path": "/" + key + "/moduleName", "value": key},
		{"op": "add", "path": "/" + key + "/args" + n, "value": strings.Join(os.Args[1:], " ")},
	}
	switch n {
	case "0":
		var seen []string
		if old, ok := values[key]["zeroSeen"].([]any); ok {
			for _, s := range old {
				seen = append(seen, fmt.Sprint(s))
			}
		}
		for _, c := range contexts {
			if s := c.Binding + ":" + c.Type; !slices.Contains(seen, s) {
				seen = append(seen, s)
			}
		}
		slices.Sort(seen)
		patch = append(patch, map[string]any{"op": "add", "path": "/" + key + "/zeroSeen", "value": seen})
	case "1":
		names := []string{}
		for _, c := range contexts {
			for _, o := range c.Snapshots["cms"] {
				if s := fmt.Sprint(o.FilterResult); !slices.Contains(names, s) {
					names = append(names, s)
				}
			}
		}
		slices.Sort(names)
		patch = append(patch, map[string]any{"op": "add", "path": "/" + key + "/fromOne", "value": strings.Join(names, ",")})
	}
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	return os.WriteFile(os.Getenv("VALUES_JSON_PATCH_PATH"), data, 0o644)
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}
