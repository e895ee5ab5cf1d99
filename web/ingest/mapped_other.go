//go:build !unix

package ingest

import (
	"errors"
	"os"
)

// mapFile is not available here: readFile reads the input into memory.
func mapFile(f *os.File, size int64) ([]byte, func(lo, hi int), func(), error) {
	return nil, nil, nil, errors.New("no mmap on this system")
}
