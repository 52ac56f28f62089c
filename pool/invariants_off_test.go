//go:build !kvcfg_invariants

package pool_test

const invariantsOn = false
