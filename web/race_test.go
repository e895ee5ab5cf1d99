//go:build race

package web

// raceDetector is true in a -race build: the hostile table's heaviest rows
// then take minutes, so they run in make test's plain run instead.
const raceDetector = true
