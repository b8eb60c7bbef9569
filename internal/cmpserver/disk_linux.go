package cmpserver

import "syscall"

// volumeUsed returns the bytes the file system of dir has in use, each
// inode in use counted as a block: what grows as commands write there.
func volumeUsed(dir string) (int64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	used := int64(st.Blocks-st.Bfree) * st.Bsize
	if st.Files >= st.Ffree {
		used += int64(st.Files-st.Ffree) * 4096
	}
	return used, true
}
