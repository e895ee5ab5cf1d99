//go:build !race

package datatype

const raceDetector = false
