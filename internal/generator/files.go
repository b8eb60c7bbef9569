package generator

import (
	"fmt"
	"os"
	"strings"
)

// fileStamp sums up what identifies the contents of files without reading
// them: size, modification time and, where the system tells, change time
// and inode, following symbolic links (Kubernetes swaps a mounted
// ConfigMap's or Secret's files by re-pointing a link). A missing file has
// a stamp of its own.
func fileStamp(paths []string) string {
	var b strings.Builder
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			fmt.Fprintf(&b, "%s:missing;", p)
			continue
		}
		fmt.Fprintf(&b, "%s:%d:%d%s;", p, fi.Size(), fi.ModTime().UnixNano(), sysStamp(fi))
	}
	return b.String()
}
