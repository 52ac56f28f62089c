package pool_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/kvcfg/kvcfg/pool"
)

const (
	benchReqs   = 256
	benchPrompt = 4096
)

// BenchmarkAllocExtend: one prefill batch of 256 requests × 4k-token
// prompts, then freeing it (realistic batch shape).
func BenchmarkAllocExtend(b *testing.B) {
	for _, page := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("page%d", page), func(b *testing.B) {
			a := mustPaged(b, benchReqs*benchPrompt+page, page)
			reqs := make([]pool.Extend, benchReqs)
			for i := range reqs {
				reqs[i] = pool.Extend{SeqLen: benchPrompt, LastLoc: -1}
			}
			dst := make([]int32, 0, benchReqs*benchPrompt)
			dst, _ = a.AllocExtend(dst, reqs) // warm the free path's scratch
			_ = a.Free(dst)
			b.ReportAllocs()
			for b.Loop() {
				var err error
				dst, err = a.AllocExtend(dst[:0], reqs)
				if err != nil {
					b.Fatal(err)
				}
				if err := a.Free(dst); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(benchReqs*benchPrompt), "ns/token")
		})
	}
}

// BenchmarkAllocDecode: one decode step for 256 running requests whose
// lengths are spread over the page (so 1/P of them need a new page), on a
// pool that never runs dry (requests are reset every page's worth of steps).
func BenchmarkAllocDecode(b *testing.B) {
	for _, page := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("page%d", page), func(b *testing.B) {
			a := mustPaged(b, benchReqs*benchPrompt*2, page)
			rng := rand.New(rand.NewPCG(1, 2))
			reqs := make([]pool.Decode, benchReqs)
			owned := make([][]int32, benchReqs)
			for i := range reqs {
				n := benchPrompt + rng.IntN(page)
				l, err := a.AllocExtend(make([]int32, 0, benchPrompt+2048+2*page), []pool.Extend{{SeqLen: n, LastLoc: -1}})
				if err != nil {
					b.Fatal(err)
				}
				owned[i] = l
				reqs[i] = pool.Decode{SeqLen: n + 1, LastLoc: l[len(l)-1]}
			}
			dst := make([]int32, 0, benchReqs)
			b.ReportAllocs()
			for b.Loop() {
				var err error
				dst, err = a.AllocDecode(dst[:0], reqs)
				if err != nil {
					b.Fatal(err)
				}
				for i := range reqs {
					reqs[i].LastLoc = dst[i]
					reqs[i].SeqLen++
					owned[i] = append(owned[i], dst[i]) // capacity reserved: no allocation
					// Keep each request within its prompt + 2k tokens: free
					// the page just finished once it is 8 pages behind.
					if (reqs[i].SeqLen-1)%page == 0 && reqs[i].SeqLen > benchPrompt+2048 {
						b.StopTimer()
						_ = a.Free(owned[i])
						l, _ := a.AllocExtend(owned[i][:0], []pool.Extend{{SeqLen: benchPrompt, LastLoc: -1}})
						owned[i] = l
						reqs[i] = pool.Decode{SeqLen: benchPrompt + 1, LastLoc: l[len(l)-1]}
						b.StartTimer()
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchReqs, "ns/token")
		})
	}
}

// BenchmarkAllocFreePages: alloc + free of whole pages, 4k tokens at a time
// (the ≥ 50M tokens/s target).
func BenchmarkAllocFreePages(b *testing.B) {
	for _, page := range []int{16, 64} {
		b.Run(fmt.Sprintf("page%d", page), func(b *testing.B) {
			a := mustPaged(b, 1<<20, page)
			dst := make([]int32, 0, benchPrompt)
			b.ReportAllocs()
			for b.Loop() {
				dst, _ = a.Alloc(dst[:0], benchPrompt)
				if err := a.Free(dst); err != nil {
					b.Fatal(err)
				}
			}
			sec := b.Elapsed().Seconds()
			b.ReportMetric(float64(b.N)*benchPrompt/sec/1e6, "Mtokens/s")
		})
	}
}

// BenchmarkSetKV and BenchmarkGetKey: quantize-on-write and
// dequantize-on-read of a decode batch (256 scattered rows, 8 KV heads ×
// 128) for one layer. MB/s counts the float32 values moved (K and V for
// SetKV, K for GetKey); the "copy" case is copy() of the same float32 rows
// to the same scattered rows, the memory-bound baseline.
func BenchmarkSetKV(b *testing.B) {
	benchKV(b, true)
}

func BenchmarkGetKey(b *testing.B) {
	benchKV(b, false)
}

func benchKV(b *testing.B, write bool) {
	const heads, dim, rows = 8, 128, 256
	rng := rand.New(rand.NewPCG(3, 4))
	locs := make([]int32, rows)
	perm := rng.Perm(4096)
	for i := range locs {
		locs[i] = int32(16 + perm[i])
	}
	src := randRows(rng, rows*heads*dim)
	for _, f := range append([]string{"copy"}, kvFormats...) {
		b.Run(f, func(b *testing.B) {
			name := f
			if f == "copy" {
				name = "bf16"
			}
			kv := mustKV(b, pool.KVConfig{Attention: pool.MHA, Format: name, Size: 4096 + 16, PageSize: 16, Layers: 1, Heads: heads, HeadDim: dim, VHeadDim: dim})
			if err := kv.SetKV(0, locs, src, src); err != nil {
				b.Fatal(err)
			}
			dst := make([]float32, len(src))
			stored := kv.Format().Bytes(int64(heads * dim))
			if f == "copy" {
				// copy() of the bytes one SetKV/GetKey moves per row: the
				// f32 row in, the stored row out (the memory-bound baseline).
				// SetKV moves K and V (two planes), GetKey one.
				planes := 1
				if write {
					planes = 2
				}
				in := make([]byte, rows*heads*dim*4)
				out := make([]byte, 4112*heads*dim*4)
				b.SetBytes(int64(planes * len(in)))
				b.ReportAllocs()
				for b.Loop() {
					for range planes {
						for i, l := range locs {
							rb := heads * dim * 4
							copy(out[int(l)*rb:(int(l)+1)*rb], in[i*rb:(i+1)*rb])
						}
					}
				}
				return
			}
			planes := 1
			if write {
				planes = 2
			}
			b.SetBytes(int64(planes * rows * heads * dim * 4))
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if write {
					err = kv.SetKV(0, locs, src, src)
				} else {
					err = kv.GetKey(dst, 0, locs)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(stored), "stored_B/row")
		})
	}
}
