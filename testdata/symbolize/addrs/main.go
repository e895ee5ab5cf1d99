// Command addrs prints N pseudo-random addresses inside the function symbols
// of an ELF file, one hex address a line, for the symbolization benchmark.
//
//	go run ./testdata/symbolize/addrs [-n 100000] [-seed 1] [-0x] FILE
package main

import (
	"bufio"
	"debug/elf"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
)

func main() {
	n := flag.Int("n", 100000, "how many addresses")
	seed := flag.Uint64("seed", 1, "random seed")
	prefix := flag.Bool("0x", false, "prefix addresses with 0x (llvm-symbolizer needs it)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: addrs [-n N] [-seed S] [-0x] FILE")
		os.Exit(2)
	}
	f, err := elf.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "addrs:", err)
		os.Exit(1)
	}
	syms, err := f.Symbols()
	if err != nil {
		fmt.Fprintln(os.Stderr, "addrs:", err)
		os.Exit(1)
	}
	var fns []elf.Symbol
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Size > 0 && s.Value != 0 {
			fns = append(fns, s)
		}
	}
	if len(fns) == 0 {
		fmt.Fprintln(os.Stderr, "addrs: no sized function symbols in", flag.Arg(0))
		os.Exit(1)
	}
	r := rand.New(rand.NewPCG(*seed, 1))
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	p := ""
	if *prefix {
		p = "0x"
	}
	for range *n {
		s := fns[r.IntN(len(fns))]
		fmt.Fprintf(w, "%s%x\n", p, s.Value+r.Uint64N(s.Size))
	}
}
