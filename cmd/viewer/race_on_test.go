//go:build race

package main

// raceDetector is true in a -race build: TestStackFidelity, which spends its
// time in perf script and the viewer binary it builds, then runs in make
// test's plain run instead.
const raceDetector = true
