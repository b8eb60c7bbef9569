package main

import (
	"fmt"
	"runtime"
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
