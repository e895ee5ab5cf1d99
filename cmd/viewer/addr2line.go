package main

import (
	"context"
	"errors"

	"viewer/symbolize/addr2line"
)

// runAddr2line is a drop-in for GNU addr2line (package symbolize/addr2line).
// It first drops the code and descriptors that the init of the object
// storage SDKs (GCS's gRPC and protobufs above all) left resident: a batch
// of addresses then peaks below GNU addr2line's memory (BENCHMARKS.md).
func runAddr2line(ctx context.Context, args []string, s stdio) error {
	releaseStartupPages()
	err := addr2line.Run(ctx, args, s.in, s.out, s.err)
	var u *addr2line.UsageError
	if errors.As(err, &u) {
		return usageError{u.Msg}
	}
	return err
}
