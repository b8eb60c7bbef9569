//go:build !linux

package helmplugin

import (
	"errors"
	"io"
	"os"
)

// readExactly reads the file at path, which must hold size bytes.
func readExactly(path string, size int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data := make([]byte, size+1)
	n, err := io.ReadFull(f, data)
	if (!errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF)) || int64(n) != size {
		return nil, errChangedSize
	}
	return data[:n], nil
}
