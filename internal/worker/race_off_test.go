//go:build !race

package worker_test

const raceDetector = false
