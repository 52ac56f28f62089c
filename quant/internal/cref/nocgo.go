//go:build !cgo

package cref

// Available reports whether the C reference is compiled in (it needs cgo).
const Available = false
