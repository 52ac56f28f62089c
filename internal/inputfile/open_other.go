//go:build !unix

package inputfile

// openFlags: no non-blocking open outside Unix (no FIFOs to refuse there).
const openFlags = 0
