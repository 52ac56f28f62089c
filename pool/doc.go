// Package pool holds the KV cache memory pools of an inference engine, with
// SGLang's semantics (docs/sglang.md#pools-overview): the request-to-token table
// (ReqToTokenPool), the token and paged slot allocators (PagedAllocator),
// the hybrid sliding-window allocator (SWAAllocator), the Mamba /
// linear-attention state slot pool (StatePool), quantized KV buffers (KV)
// and the builder that turns configured sizes into ready pools (New).
//
// Two calls take an engine from a model and measured free memory to ready
// pools: sglang.Configure decides the sizes, NewFromConfigurator
// builds them (ConfigFromConfigurator gives the plain Config in between).
// ResizeTo applies the post-capture shrink without losing live slots.
//
// Locations are int32 rows of the KV buffers. Row block 0 (the first
// page_size rows) is the padding page: it is never handed out, exactly as in
// the engine, so buffers have size + page_size rows. Reuse order follows the
// engine (FIFO for page size 1, lowest-first LIFO for pages), so allocation
// traces compare with SGLang's.
//
// KV buffers quantize on write and dequantize on read through the quant
// codecs; Bytes reports memory by purpose (K, V, scales, workspace, state,
// request table) and equals what engine/sglang/sizing budgets for the same
// configuration, the grouped-int formats (int8_g64, int4_g32) included:
// both count their real layout, data plus one fp16 scale per group.
//
// With AllocatorConfig.Events, the paged allocator reports blocks an engine
// registers with Store as BlockStored and their release as BlockRemoved, in
// vLLM's KV event vocabulary (package prefix computes the block hashes).
//
// Allocation failure is an error value (an *OutOfMemoryError wrapping
// ErrOutOfMemory with what was needed and what was free), never a panic,
// and a failed call leaves the pool unchanged. The kvcfg_invariants build
// tag adds full consistency checks after every allocator mutation.
//
// # Concurrency
//
// The allocators (PagedAllocator, SWAAllocator), ReqToTokenPool, StatePool
// and Pools' SetKV/GetKey/GetValue are single-goroutine types, like SGLang's
// scheduler-owned allocators: a scheduler owns them and calls them from one
// goroutine. Independent instances may be used from different goroutines.
// Locked wraps any Allocator with a mutex for shared use.
//
// KV buffers may be written and read concurrently as long as concurrent
// calls touch disjoint rows (the way attention kernels of different requests
// write their own slots); SetCodecs and Resize must not race with anything.
//
// Not covered: DeepSeek sparse attention's indexer cache and fp8 656-byte
// row, DeepSeek-V4 compressed pools, MiniMax sparse pools, HiSparse, the
// unified memory pool and pipeline-parallel stage splitting in
// ConfigFromConfigurator.
package pool
