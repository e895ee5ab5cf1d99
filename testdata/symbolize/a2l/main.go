// Command a2l is viewer addr2line alone, without the rest of viewer, for
// bench.sh: it shows what the symbolization engine itself costs, apart from
// the start-up of the packages the viewer binary links for other commands
// (object storage clients and their generated protobufs, among others).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"viewer/symbolize/addr2line"
)

func main() {
	err := addr2line.Run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "a2l:", err)
		os.Exit(1)
	}
}
