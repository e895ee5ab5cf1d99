//go:build race

package datatype

// raceDetector is true under the race detector, which runs a program
// several times slower: the comparisons with debug/dwarf, which run on one
// goroutine, compare a sample of libc's types and DIEs under it.
const raceDetector = true
