package document

import (
	"fmt"
	"io"
	"os"
)

// ReadFile reads a whole file of at most max bytes. A larger file is a
// *LoadError wrapping ErrTooLarge that names the file and the limit (see
// ReadAll); nothing beyond max+1 bytes is read. Errors opening the file
// are those of os.Open.
func ReadFile(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f, max, path)
}

// ReadAll reads r to its end, at most max bytes; name says what r is (a file
// name, "<stdin>", "the answer of https://...") in the error for a larger
// input: a *LoadError wrapping ErrTooLarge, "NAME: larger than the limit of
// MAX bytes", returned with the first max bytes (for callers that show the
// start of an answer they refuse). As everywhere in strata, 0 means the
// default (DefaultLimits().MaxBytes) and a negative max means no limit.
func ReadAll(r io.Reader, max int64, name string) ([]byte, error) {
	if max == 0 {
		max = DefaultLimits().MaxBytes
	}
	if max < 0 {
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
		return data[:max], &LoadError{Source: name, Msg: fmt.Sprintf("larger than the limit of %d bytes", max), Err: ErrTooLarge}
	}
	return data, nil
}
