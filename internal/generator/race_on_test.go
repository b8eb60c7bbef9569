//go:build race

package generator_test

// raceDetector is set in builds with the race detector, which multiplies
// the memory a program uses: the memory attack test measures the server
// without it (make test runs it again without -race).
const raceDetector = true
