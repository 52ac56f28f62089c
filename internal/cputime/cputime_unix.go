//go:build unix

// Package cputime reads the CPU time this process has used, so that a
// benchmark or a load generator on a shared machine can report its own CPU
// cost beside wall time.
package cputime

import (
	"syscall"
	"time"
)

// Process is the user + system CPU time the process has used; 0 when it
// cannot be read.
func Process() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
