//go:build race

package symbolize

// raceDetector is true under the race detector, which changes how much a
// program allocates and runs it several times slower: the memory test,
// which measures the heap, runs without it (make test runs it so).
const raceDetector = true
