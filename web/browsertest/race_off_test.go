//go:build !race

package browsertest_test

// raceDetector is true when the tests run under the race detector, which
// makes the server several times slower: the biggest inputs are scaled
// down then.
const raceDetector = false
