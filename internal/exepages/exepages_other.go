//go:build !linux

package exepages

// Release does nothing outside Linux.
func Release() (Released, error) { return Released{}, nil }
