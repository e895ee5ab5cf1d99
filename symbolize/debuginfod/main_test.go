package debuginfod_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a download, watchdog or retry goroutine
// outlives its fetch. Idle keep-alive connections of the HTTP transports
// are not leaks.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
	)
}
