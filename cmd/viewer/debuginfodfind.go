package main

import (
	"context"
	"errors"
)

// runDebuginfodFind is not written yet.
func runDebuginfodFind(ctx context.Context, args []string, s stdio) error {
	return errors.New("debuginfod-find: not implemented yet")
}
