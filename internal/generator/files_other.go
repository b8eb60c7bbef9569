//go:build !linux

package generator

import "io/fs"

func sysStamp(fs.FileInfo) string { return "" }
