package document

import (
	"fmt"
	"io"
	"os"
)

// ReadFile reads a whole file of at most max bytes. A larger file is a
// *LoadError wrapping ErrTooLarge that names the file and the limit; nothing
// beyond max+1 bytes is read. A max below 1 means no limit.
func ReadFile(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(f, max, path, "file")
}

// ReadAll reads r to its end, at most max bytes; name says what r is (a file
// name, "<stdin>", "the response of https://...") in the error for a larger
// input, a *LoadError wrapping ErrTooLarge. A max below 1 means no limit.
func ReadAll(r io.Reader, max int64, name string) ([]byte, error) {
	return readAll(r, max, name, "input")
}

func readAll(r io.Reader, max int64, name, noun string) ([]byte, error) {
	if max < 1 {
		data, err := io.ReadAll(r)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", name, err)
		}
		return data, nil
	}
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if int64(len(data)) > max {
		return nil, &LoadError{Source: name, Msg: fmt.Sprintf("%s is larger than the limit of %d bytes", noun, max), Err: ErrTooLarge}
	}
	return data, nil
}
