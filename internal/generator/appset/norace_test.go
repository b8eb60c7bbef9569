//go:build !race

package appset_test

const raceEnabled = false
