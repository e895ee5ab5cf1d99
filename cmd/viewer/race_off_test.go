//go:build !race

package main

// raceDetector is true in a -race build (race_on_test.go).
const raceDetector = false
