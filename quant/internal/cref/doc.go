// Package cref is a small scalar C reference of the kvcfg KV codecs (the
// spec's integer RNE narrowing and the SGLang / OCP / flashinfer block
// recipes), compiled through cgo with -O3 -march=native and, with gcc, without
// auto-vectorisation (#pragma GCC optimize("no-tree-vectorize")), so it is
// genuinely scalar. It exists for benchmarks and
// cross-checks only; without cgo it is empty (Available is false).
package cref
