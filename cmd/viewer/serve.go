package main

import (
	"context"
	"errors"
)

// runServe is not written yet.
func runServe(ctx context.Context, args []string, s stdio) error {
	return errors.New("serve: not implemented yet")
}
