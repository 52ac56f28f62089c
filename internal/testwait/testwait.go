// Package testwait runs a call under test with a deadline: the calls that
// would block for ever if the code regressed (an open of a named pipe that
// waits for a writer, a read of /dev/zero that never ends) fail the test
// instead of hanging it. It is for tests only.
package testwait

import (
	"testing"
	"time"
)

// Within returns fn's result, or fails t at once (FailNow) when fn has not
// returned after d; what names the call in the failure.
func Within[T any](t testing.TB, d time.Duration, what string, fn func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- fn() }()
	select {
	case v := <-done:
		return v
	case <-time.After(d):
		t.Fatalf("%s still running after %s", what, d)
		var zero T
		return zero
	}
}
