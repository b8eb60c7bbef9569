package main

import (
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

func parseLevels(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 4096 {
			return nil, fmt.Errorf("-concurrency %q: write positive numbers up to 4096, comma-separated", s)
		}
		out = append(out, n)
	}
	return out, nil
}

func numCPU() int { return runtime.NumCPU() }

// targetNames are the short names of the servers, as -targets takes them.
var targetNames = map[string]string{"off": targetOff, "on": targetOn, "python": targetPython}

func parseTargets(s string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		t, ok := targetNames[strings.TrimSpace(f)]
		if !ok {
			return nil, fmt.Errorf("-targets %q: write off, on or python, comma-separated", s)
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out, nil
}
