package pool_test

import (
	"testing"

	"github.com/kvcfg/kvcfg/pool"
)

// TestDecodePathAllocatesNothing asserts the zero-allocation decode path:
// AllocDecode (paged, token and SWA), Free of whole pages, and KV reads and
// writes, once their scratch buffers are warm.
func TestDecodePathAllocatesNothing(t *testing.T) {
	if testing.Short() || invariantsOn {
		t.Skip("allocation counts (the invariant checks allocate)")
	}
	for _, tc := range []struct {
		name string
		a    pool.Allocator
	}{
		{"paged16", mustPaged(t, 1<<16, 16)},
		{"token", func() pool.Allocator { a, _ := pool.NewTokenAllocator(1 << 16); return a }()},
		{"swa16", mustSWA(t, 1<<16, 16)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.a
			p := a.PageSize()
			reqs := make([]pool.Decode, 64)
			owned := make([][]int32, len(reqs))
			for i := range reqs {
				l, err := a.AllocExtend(nil, []pool.Extend{{SeqLen: 100 + i, LastLoc: -1}})
				if err != nil {
					t.Fatal(err)
				}
				owned[i] = l
				reqs[i] = pool.Decode{SeqLen: 101 + i, LastLoc: l[len(l)-1]}
			}
			dst := make([]int32, 0, len(reqs))
			step := func() {
				var err error
				dst, err = a.AllocDecode(dst[:0], reqs)
				if err != nil {
					t.Fatal(err)
				}
				for i := range reqs {
					reqs[i].LastLoc = dst[i]
					reqs[i].SeqLen++
				}
			}
			step() // warm scratch buffers
			if n := testing.AllocsPerRun(3*p, step); n != 0 {
				t.Errorf("AllocDecode: %v allocations per call, want 0", n)
			}
			whole, _ := a.Alloc(nil, 8*p)
			freeAlloc := func() {
				if err := a.Free(whole); err != nil {
					t.Fatal(err)
				}
				var err error
				if whole, err = a.Alloc(whole[:0], 8*p); err != nil {
					t.Fatal(err)
				}
			}
			freeAlloc()
			if n := testing.AllocsPerRun(20, freeAlloc); n != 0 {
				t.Errorf("Free+Alloc: %v allocations per call, want 0", n)
			}
		})
	}
	kv := mustKV(t, pool.KVConfig{Attention: pool.MHA, Format: "fp4_mx_block16", Size: 256, PageSize: 16, Layers: 1, Heads: 2, HeadDim: 64, VHeadDim: 64})
	locs := []int32{16, 17, 18, 40, 90}
	k := make([]float32, len(locs)*128)
	if n := testing.AllocsPerRun(20, func() {
		if err := kv.SetKV(0, locs, k, k); err != nil {
			t.Fatal(err)
		}
		if err := kv.GetKey(k, 0, locs); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("SetKV+GetKey: %v allocations per call, want 0", n)
	}
}
