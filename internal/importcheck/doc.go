// Package importcheck holds the tests that keep kvcfg's layering: the
// import rules of docs/ARCHITECTURE.md (no package imports upward) and the
// public edges (no exported identifier of a library package uses a type
// from an internal package). The package has no code of its own.
package importcheck
