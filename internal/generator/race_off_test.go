//go:build !race

package generator_test

const raceDetector = false
