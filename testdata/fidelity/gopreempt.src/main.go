// Command gopreempt is a Go workload for the stack fidelity test whose
// goroutines are preempted asynchronously, by signal, over and over:
// spinners loop without calls (no synchronous preemption point) while main
// stops the world again and again (runtime.ReadMemStats; a collection now
// and then), and each stop preempts every spinner that runs (SIGURG:
// runtime.asyncPreempt, asyncPreempt2, then mcall to the scheduler).
// Usage: gopreempt DURATION (1s); SPINNERS=n (3) runs n spinners on n+1 Ps.
// See testdata/fidelity/record.sh.
package main

import (
	"os"
	"runtime"
	"strconv"
	"time"
)

//go:noinline
func seed() int { return 1 }

// mix and fold are inlined into spin's loop, a few instructions each: a
// preemption at the first instruction of one is in it, the instruction
// before it in the other (or in spin).
func mix(x, i int) int { return x*31 + i }

func fold(x int) int { return x ^ x>>7 }

// spin calls seed before its loop (so it has a frame, and a frame-pointer
// chain through it), then loops without calls.
//
//go:noinline
func spin(n int) int {
	x := seed()
	for i := 0; i < n; i++ {
		x = fold(mix(x, i))
	}
	return x
}

//go:noinline
func spinner(end time.Time, res chan<- int) {
	s := 0
	for time.Now().Before(end) {
		s += spin(5_000_000)
	}
	res <- s
}

func main() {
	d, err := time.ParseDuration(os.Args[1])
	if err != nil {
		os.Exit(2)
	}
	end := time.Now().Add(d)
	res := make(chan int)
	// A P for each spinner and one for main, whose loop stops the world
	// (runtime.ReadMemStats) again and again: each stop preempts every
	// spinner that runs, by signal; a full collection now and then
	// preempts them to scan their stacks too.
	spinners := 3
	if s := os.Getenv("SPINNERS"); s != "" {
		spinners, _ = strconv.Atoi(s)
	}
	runtime.GOMAXPROCS(spinners + 1)
	for range spinners {
		go spinner(end, res)
	}
	var keep [][]byte
	var ms runtime.MemStats
	n := 0
	for time.Now().Before(end) {
		keep = append(keep[:0], make([]byte, 4096))
		runtime.ReadMemStats(&ms)
		n++
		if n%1000 == 0 {
			runtime.GC()
		}
	}
	s := 0
	for range spinners {
		s += <-res
	}
	if s == 0 || len(keep) == 0 {
		os.Exit(1)
	}
}
