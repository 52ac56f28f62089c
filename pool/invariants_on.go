//go:build kvcfg_invariants

package pool

// invariants enables the costly internal consistency checks
// (go test -tags kvcfg_invariants ./pool/...).
const invariants = true
