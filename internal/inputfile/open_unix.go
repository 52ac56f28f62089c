//go:build unix

package inputfile

import "syscall"

// openFlags opens without blocking: a FIFO's open would otherwise wait for
// a writer. Reads from a regular file ignore the flag.
const openFlags = syscall.O_NONBLOCK
