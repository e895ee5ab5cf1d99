// Command gowork is a Go workload for the stack fidelity test: goroutines
// that allocate (the garbage collector runs on the system stack), pass
// values over channels (the scheduler's mcall) and spin in loops without
// calls (preempted asynchronously by signal). Usage: gowork DURATION (1s)
package main

import (
	"os"
	"time"
)

type node struct {
	next *node
	val  [6]int
}

//go:noinline
func allocate(n int) *node {
	var head *node
	for i := range n {
		head = &node{next: head, val: [6]int{i}}
	}
	return head
}

//go:noinline
func spin(n int) int {
	x := 1
	for i := 0; i < n; i++ {
		x = x*31 + i
	}
	return x
}

func main() {
	d, err := time.ParseDuration(os.Args[1])
	if err != nil {
		os.Exit(2)
	}
	end := time.Now().Add(d)
	ch := make(chan int)
	go func() {
		for v := range ch {
			_ = allocate(v)
		}
	}()
	res := make(chan int)
	go func() {
		s := 0
		for time.Now().Before(end) {
			s += spin(50_000_000)
		}
		res <- s
	}()
	for time.Now().Before(end) {
		ch <- 2000
	}
	close(ch)
	if <-res == 0 {
		os.Exit(1)
	}
}
