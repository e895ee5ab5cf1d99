package main

import (
	"context"
	"errors"
)

// runUpload is not written yet.
func runUpload(ctx context.Context, args []string, s stdio) error {
	return errors.New("upload: not implemented yet")
}
