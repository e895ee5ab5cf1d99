package main

import (
	"context"
	"errors"

	"viewer/symbolize/addr2line"
)

// runAddr2line is a drop-in for GNU addr2line (package symbolize/addr2line).
func runAddr2line(ctx context.Context, args []string, s stdio) error {
	err := addr2line.Run(ctx, args, s.in, s.out, s.err)
	var u *addr2line.UsageError
	if errors.As(err, &u) {
		return usageError{u.Msg}
	}
	return err
}
