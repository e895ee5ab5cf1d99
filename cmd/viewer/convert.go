package main

import (
	"context"
	"errors"
)

// runConvert is not written yet.
func runConvert(ctx context.Context, args []string, s stdio) error {
	return errors.New("convert: not implemented yet")
}
