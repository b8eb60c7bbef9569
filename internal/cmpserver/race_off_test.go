//go:build !race

package cmpserver_test

const raceDetector = false
