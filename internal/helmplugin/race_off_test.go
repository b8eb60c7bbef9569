//go:build !race

package helmplugin_test

const raceDetector = false
