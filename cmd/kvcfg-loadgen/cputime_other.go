//go:build !unix

package main

import "time"

// processCPU is 0 where the process's CPU time is not read: loadgen then
// leaves the CPU columns out.
func processCPU() time.Duration { return 0 }
