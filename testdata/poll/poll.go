// Package poll is the tests' wait for a condition that another goroutine,
// a server or a child process makes true. It is under testdata so that
// only tests import it (go build ./... and go vet ./... leave it out; its
// importers' builds compile it).
package poll

import (
	"testing"
	"time"
)

// Every is how often Until checks its condition.
const Every = 5 * time.Millisecond

// Until checks cond every few milliseconds until it is true, and fails the
// test (from the test's goroutine only) if it is still false after within.
// Inside a synctest bubble the wait is on the bubble's fake clock.
func Until(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(Every)
	}
}
