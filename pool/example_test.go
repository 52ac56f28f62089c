package pool_test

import (
	"fmt"

	"github.com/kvcfg/kvcfg/pool"
	"github.com/kvcfg/kvcfg/prefix"
)

// A prefill batch continues a request's partially filled page, then takes
// whole pages from the free list (docs/sglang.md#golden-vectors G19 layout).
func ExamplePagedAllocator_AllocExtend() {
	a, _ := pool.NewPagedAllocator(64, 4) // pages 1..16; page 0 is padding
	prompt, _ := a.AllocExtend(nil, []pool.Extend{{PrefixLen: 0, SeqLen: 5, LastLoc: -1}})
	fmt.Println("prompt:", prompt)
	more, _ := a.AllocExtend(nil, []pool.Extend{{PrefixLen: 5, SeqLen: 14, LastLoc: prompt[4]}})
	fmt.Println("chunk: ", more)
	next, _ := a.AllocDecode(nil, []pool.Decode{{SeqLen: 15, LastLoc: more[len(more)-1]}})
	fmt.Println("decode:", next, "available:", a.Available())
	// Output:
	// prompt: [4 5 6 7 8]
	// chunk:  [9 10 11 12 13 14 15 16 17]
	// decode: [18] available: 48
}

// From sizes to ready pools: request table, allocator and KV buffers.
func ExampleNew() {
	p, err := pool.New(pool.Config{
		PageSize: 16, MaxTotalTokens: 1024, MaxRunningRequests: 4, ReqToTokenWidth: 512 + 4,
		Format: "fp8_e4m3", Attention: pool.MHA, LayerIDs: []int{0, 1}, Heads: 2, HeadDim: 64, VHeadDim: 64,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	b := p.Bytes()
	fmt.Println("tokens:", p.Allocator.Size(), "K:", b.K, "V:", b.V, "request table:", b.ReqToToken)
	// Output:
	// tokens: 1024 K: 266240 V: 266240 request table: 10320
}

// Hash a request's full blocks the way vLLM's sha256_cbor does and report
// them as BlockStored from the allocator, for an llm-d style index.
func ExamplePagedAllocator_Store() {
	sink := pool.EventFunc(func(e prefix.Event) {
		if s, ok := e.(prefix.BlockStored); ok {
			fmt.Println(e.Tag(), len(s.BlockHashes), "blocks, first key", s.BlockHashes[0].Uint64())
		} else {
			fmt.Println(e.Tag())
		}
	})
	a, _ := pool.NewAllocator(pool.AllocatorConfig{Size: 256, PageSize: 16, Events: sink})
	tokens := []uint32{101, 202, 303, 404, 505, 606, 707, 808, 909, 1010, 1111, 1212, 1313, 1414, 1515, 1616}
	locs, _ := a.AllocExtend(nil, []pool.Extend{{SeqLen: 16, LastLoc: -1}})
	hashes, _ := prefix.Hasher{BlockSize: 16, Seed: prefix.NoneHash("0")}.Hashes(nil, nil, tokens, nil)
	_ = a.Store(pool.Stored{Locs: locs[:1], Hashes: hashes, Tokens: tokens})
	_ = a.Free(locs)
	// Output:
	// BlockStored 1 blocks, first key 7876691182959014722
	// BlockRemoved
}
