package generator

import (
	"fmt"
	"io/fs"
	"syscall"
)

func sysStamp(fi fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf(":%d:%d:%d", st.Dev, st.Ino, st.Ctim.Nano())
}
