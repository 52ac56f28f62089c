//go:build unix

package plan_test

import (
	"syscall"
	"time"
)

// cpuTime is the user + system CPU time this process has used, so that a
// benchmark on a shared machine can report its own CPU cost.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
