package main

import (
	"context"
	"errors"
)

// runSymbolize is not written yet.
func runSymbolize(ctx context.Context, args []string, s stdio) error {
	return errors.New("symbolize: not implemented yet")
}
