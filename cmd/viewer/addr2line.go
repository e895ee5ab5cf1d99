package main

import (
	"context"
	"errors"
)

// runAddr2line is not written yet.
func runAddr2line(ctx context.Context, args []string, s stdio) error {
	return errors.New("addr2line: not implemented yet")
}
