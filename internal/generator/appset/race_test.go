//go:build race

package appset_test

// raceEnabled: the race detector maps shadow memory, so a child process
// cannot run under an address-space limit; its peak RSS is checked instead.
const raceEnabled = true
