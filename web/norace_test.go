//go:build !race

package web

// raceDetector is true in a -race build (race_test.go).
const raceDetector = false
