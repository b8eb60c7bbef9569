//go:build race

package cmpserver_test

// raceDetector is set in builds with the race detector, which multiplies
// a process's memory and time several-fold: the attack tests that measure
// memory run without it (make unit).
const raceDetector = true
