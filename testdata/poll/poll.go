// Package poll is the tests' wait for a condition that another goroutine,
// a server or a child process makes true. It is under testdata so that
// only tests import it (go build ./... and go vet ./... leave it out; its
// importers' builds compile it).
package poll

import (
	"testing"
	"time"
)

// Every is how often Wait and Until check their condition.
const Every = 5 * time.Millisecond

// Wait checks cond every few milliseconds until it is true, for at most
// within, and reports whether it became true: the caller says what went
// wrong, with what it saw last. Inside a synctest bubble the wait is on
// the bubble's fake clock.
func Wait(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(Every)
	}
	return true
}

// Until is Wait that fails the test (call it from the test's goroutine)
// when cond is still false after within.
func Until(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Wait(within, cond) {
		t.Fatalf("timed out after %v waiting for %s", within, what)
	}
}
