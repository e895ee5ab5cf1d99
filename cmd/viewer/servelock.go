package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// dataLockName is the file in --data whose flock marks the directory as
// served: two servers on one directory would each run its jobs and clean
// its temp files under the other.
const dataLockName = ".viewer.lock"

// lockDataDir takes the exclusive flock of the data directory, writing this
// process's PID into the lock file, or says which process holds it. The
// kernel drops the lock when the process ends, even by kill -9.
func lockDataDir(dir string) (release func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	path := filepath.Join(dir, dataLockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("serve: locking the data directory: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			holder := "another process"
			if b, rerr := os.ReadFile(path); rerr == nil {
				if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil && pid > 0 {
					holder = fmt.Sprintf("another viewer (PID %d)", pid)
				}
			}
			return nil, fmt.Errorf("serve: %s already serves the data directory %s (it holds %s); stop it, or give this server another --data", holder, dir, path)
		}
		return nil, fmt.Errorf("serve: locking the data directory: %w", err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
