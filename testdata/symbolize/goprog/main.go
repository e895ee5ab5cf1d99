// Command goprog is a small Go program for symbolization tests: tests build it
// with the Go toolchain at hand (a Go binary is too large to check in) and
// look up addresses in it, including the inlined call to add.
package main

import (
	"fmt"
	"os"
)

func add(a, b int) int { return a + b }

//go:noinline
func work(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s = add(s, i)
	}
	return s
}

func main() { fmt.Println(work(len(os.Args) * 10)) }
