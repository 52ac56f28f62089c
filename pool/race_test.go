package pool_test

import (
	"errors"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/kvcfg/kvcfg/pool"
)

// TestConcurrentUse runs what the package documents as safe concurrently;
// `go test -race ./pool` checks it.
func TestConcurrentUse(t *testing.T) {
	t.Run("independent allocators", func(t *testing.T) {
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				a := mustPaged(t, 1024, 1<<(g%3*2)) // pages 1, 4, 16
				c := newChecker(t, a)
				rng := rand.New(rand.NewPCG(uint64(g), 1))
				var live [][]int32
				for range 500 {
					if len(live) > 0 && rng.IntN(2) == 0 {
						i := rng.IntN(len(live))
						if err := a.Free(live[i]); err != nil {
							t.Error(err)
							return
						}
						c.freed(live[i])
						live = append(live[:i], live[i+1:]...)
						continue
					}
					l, err := a.AllocExtend(nil, []pool.Extend{{SeqLen: rng.IntN(40) + 1, LastLoc: -1}})
					if err != nil {
						continue
					}
					c.took(len(live), l, true)
					live = append(live, l)
				}
			})
		}
		wg.Wait()
	})
	t.Run("locked allocator", func(t *testing.T) {
		l := pool.NewLocked(mustPaged(t, 4096, 16))
		var wg sync.WaitGroup
		var mu sync.Mutex
		seen := map[int32]bool{}
		for g := range 4 {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(g), 2))
				for range 300 {
					locs, err := l.AllocExtend(nil, []pool.Extend{{SeqLen: rng.IntN(64) + 1, LastLoc: -1}})
					if err != nil {
						if !errors.Is(err, pool.ErrOutOfMemory) {
							t.Error(err)
						}
						continue
					}
					mu.Lock()
					for _, x := range locs {
						if seen[x] {
							t.Errorf("slot %d handed out twice", x)
						}
						seen[x] = true
					}
					mu.Unlock()
					_ = l.Available()
					mu.Lock()
					for _, x := range locs {
						delete(seen, x)
					}
					mu.Unlock()
					if err := l.Free(locs); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		if l.Available() != l.Size() {
			t.Errorf("leak: available %d of %d", l.Available(), l.Size())
		}
	})
	t.Run("kv disjoint rows", func(t *testing.T) {
		kv := mustKV(t, pool.KVConfig{Attention: pool.MHA, Format: "fp8_e4m3", Size: 256, PageSize: 16, Layers: 2, Heads: 2, HeadDim: 64, VHeadDim: 64})
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				locs := make([]int32, 32)
				for i := range locs {
					locs[i] = int32(16 + g*64 + i*2) // disjoint per goroutine
				}
				k := make([]float32, len(locs)*128)
				for i := range k {
					k[i] = float32(g + 1)
				}
				for layer := range 2 {
					if err := kv.SetKV(layer, locs, k, k); err != nil {
						t.Error(err)
					}
				}
				got := make([]float32, len(k))
				if err := kv.GetValue(got, 1, locs); err != nil {
					t.Error(err)
				}
				for _, x := range got {
					if x != float32(g+1) {
						t.Errorf("goroutine %d read %v", g, x)
						return
					}
				}
			})
		}
		wg.Wait()
	})
}
