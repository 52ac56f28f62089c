//go:build !kvcfg_invariants

package pool

const invariants = false
