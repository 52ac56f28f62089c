// Package pool holds the KV cache memory pools of an inference engine, with
// SGLang's semantics (spec §f): the request-to-token table
// (ReqToTokenPool), the token and paged slot allocators (PagedAllocator),
// the hybrid sliding-window allocator (SWAAllocator), the Mamba /
// linear-attention state slot pool (StatePool), quantized KV buffers (KV)
// and the builder that turns a configured size into ready pools (New).
//
// Locations are int32 rows of the KV buffers. Row block 0 (the first
// page_size rows) is the padding page: it is never handed out, exactly as in
// the engine, so buffers have size + page_size rows.
//
// Allocation failure is an error value (an *OutOfMemoryError wrapping
// ErrOutOfMemory with what was needed and what was free), never a panic,
// and a failed call leaves the pool unchanged.
//
// # Concurrency
//
// The allocators (PagedAllocator, SWAAllocator), ReqToTokenPool and
// StatePool are single-goroutine types, like SGLang's scheduler-owned
// allocators: a scheduler owns them and calls them from one goroutine.
// Independent instances may be used from different goroutines. Locked wraps
// any Allocator with a mutex for shared use.
//
// KV buffers may be written and read concurrently as long as concurrent
// calls touch disjoint rows (the way attention kernels of different requests
// write their own slots); SetScales must not race with reads or writes.
// Pools.Bytes and the Bytes methods are safe at any time.
package pool
