//go:build race

package worker_test

// raceDetector: the race detector's runtime maps its shadow memory
// beside the heap, under the address space limit too.
const raceDetector = true
