//go:build linux

package store

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// syncFilesystem makes everything written to the file system holding root
// durable with one syncfs(2), and reports that it could. A checkpoint
// syncs its files and folders this way: one device cache flush for all of
// them, where an fsync of each was a flush each and a folder's fsync held
// that folder's lock through its write, stalling the writers creating new
// folders in it. It flushes what other programs wrote to that file system
// too. syncfs reports write errors since Linux 5.8.
func syncFilesystem(root string) (bool, error) {
	f, err := os.Open(root)
	if err != nil {
		return true, fmt.Errorf("store: %w", err)
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return true, fmt.Errorf("store: syncfs of %s: %w", root, err)
	}
	return true, nil
}
