package pool_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/kvcfg/kvcfg/pool"
)

// refAlloc is the reference model: a plain slice free list (front = index
// 0), FIFO for page size 1 and sorted-prepend for larger pages, and the
// per-token layout rule of alloc_extend written out directly.
type refAlloc struct {
	p    int
	free []int32
	used map[int32]bool
}

func newRef(pages, p int) *refAlloc {
	r := &refAlloc{p: p, used: map[int32]bool{}}
	for pg := 1; pg <= pages; pg++ {
		r.free = append(r.free, int32(pg))
	}
	return r
}

func (r *refAlloc) available() int { return len(r.free) * r.p }

func (r *refAlloc) take() int32 {
	pg := r.free[0]
	r.free = r.free[1:]
	r.used[pg] = true
	return pg
}

// extend returns the slots, or ok=false when the pages do not suffice.
func (r *refAlloc) extend(reqs []pool.Extend) ([]int32, bool) {
	need := 0
	for _, q := range reqs {
		need += (q.SeqLen+r.p-1)/r.p - (q.PrefixLen+r.p-1)/r.p
	}
	if need > len(r.free) {
		return nil, false
	}
	var out []int32
	for _, q := range reqs {
		var pg int32
		for pos := q.PrefixLen; pos < q.SeqLen; pos++ {
			switch {
			case pos < (q.PrefixLen+r.p-1)/r.p*r.p:
				out = append(out, q.LastLoc+1+int32(pos-q.PrefixLen))
			default:
				if pos%r.p == 0 {
					pg = r.take()
				}
				out = append(out, pg*int32(r.p)+int32(pos%r.p))
			}
		}
	}
	return out, true
}

func (r *refAlloc) release(locs []int32) {
	var pages []int32
	for _, l := range locs {
		pg := l / int32(r.p)
		if r.used[pg] {
			delete(r.used, pg)
			pages = append(pages, pg)
		}
	}
	if r.p == 1 {
		r.free = append(r.free, pages...)
		return
	}
	slices.Sort(pages)
	r.free = append(pages, r.free...)
}

// FuzzAllocator decodes bytes into operation sequences and checks the paged
// and token allocators slot for slot against refAlloc, and the SWA
// allocator's accounting against the live set.
func FuzzAllocator(f *testing.F) {
	f.Add([]byte{0, 10, 3, 20, 1, 1, 2, 0, 3, 1, 1, 2})
	f.Add([]byte{1, 40, 0, 5, 0, 9, 1, 0, 2, 1, 3, 0, 4, 7})
	f.Add([]byte{2, 0, 200, 1, 0, 2, 0, 3, 1, 5, 2, 6})
	f.Add([]byte{5, 7, 60, 0, 70, 2, 1, 6, 0, 3, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		pageSizes := []int{1, 2, 4, 16}
		mode := int(data[0])
		p := pageSizes[mode%len(pageSizes)]
		swaMode := mode/len(pageSizes)%2 == 1
		pages := 8 + int(data[1])%32
		data = data[2:]
		var a pool.Allocator
		var pa *pool.PagedAllocator
		var ref *refAlloc
		if swaMode {
			a = mustSWA(t, pages*p, p)
		} else {
			pa = mustPaged(t, pages*p, p)
			a = pa
			ref = newRef(pages, p)
		}
		c := newChecker(t, a)
		reqs := map[int]*seq{}
		next := func() int {
			if len(data) == 0 {
				return 0
			}
			v := int(data[0])
			data = data[1:]
			return v
		}
		for len(data) > 0 {
			op, arg := next()%6, next()
			id := arg % 8
			r := reqs[id]
			switch op {
			case 0, 1: // extend (new request or chunk of an existing one)
				q := pool.Extend{LastLoc: -1}
				if r != nil {
					q = pool.Extend{PrefixLen: len(r.locs), LastLoc: r.last()}
				}
				q.SeqLen = q.PrefixLen + arg%(3*p+2)
				got, err := a.AllocExtend(nil, []pool.Extend{q})
				if ref != nil {
					want, ok := ref.extend([]pool.Extend{q})
					if ok != (err == nil) || !slices.Equal(want, got) {
						t.Fatalf("extend %+v: got %v, %v; reference %v, ok %v", q, got, err, want, ok)
					}
				}
				if err != nil {
					if !errors.Is(err, pool.ErrOutOfMemory) {
						t.Fatalf("extend %+v: %v", q, err)
					}
					break
				}
				c.took(id, got, r == nil)
				if r == nil {
					r = &seq{}
					reqs[id] = r
				}
				r.locs = append(r.locs, got...)
			case 2: // decode a batch of all live requests
				var ds []pool.Decode
				var ids []int
				for i := range 8 {
					if s := reqs[i]; s != nil && len(s.locs) > 0 {
						ds = append(ds, pool.Decode{SeqLen: len(s.locs) + 1, LastLoc: s.last()})
						ids = append(ids, i)
					}
				}
				got, err := a.AllocDecode(nil, ds)
				if ref != nil {
					var want []int32
					need := 0
					for _, d := range ds {
						if (d.SeqLen-1)%p == 0 {
							need++
						}
					}
					ok := need <= len(ref.free)
					if ok {
						for _, d := range ds {
							if (d.SeqLen-1)%p == 0 {
								want = append(want, ref.take()*int32(p))
							} else {
								want = append(want, d.LastLoc+1)
							}
						}
					}
					if ok != (err == nil) || !slices.Equal(want, got) {
						t.Fatalf("decode %+v: got %v, %v; reference %v", ds, got, err, want)
					}
				}
				if err != nil {
					if !errors.Is(err, pool.ErrOutOfMemory) {
						t.Fatalf("decode: %v", err)
					}
					break
				}
				for i, id := range ids {
					c.took(id, got[i:i+1], false)
					reqs[id].locs = append(reqs[id].locs, got[i])
				}
			case 3: // free a request
				if r == nil {
					// A slot on a page without live slots must be refused.
					slot := int32(arg * p)
					if _, live := c.pages[slot/int32(p)]; !live {
						if err := a.Free([]int32{slot}); !errors.Is(err, pool.ErrBadLocation) {
							t.Fatalf("free of dead slot %d: err = %v", slot, err)
						}
					}
					break
				}
				if err := a.Free(r.locs); err != nil {
					t.Fatalf("free: %v", err)
				}
				if ref != nil {
					ref.release(r.locs)
				}
				c.freed(r.locs)
				delete(reqs, id)
			case 4: // double free must fail and change nothing
				if r == nil || len(r.locs) == 0 {
					break
				}
				if err := a.Free(r.locs); err != nil {
					t.Fatal(err)
				}
				if ref != nil {
					ref.release(r.locs)
				}
				if err := a.Free(r.locs[:1]); !errors.Is(err, pool.ErrBadLocation) {
					t.Fatalf("double free: err = %v", err)
				}
				c.freed(r.locs)
				delete(reqs, id)
			case 5: // sliding-window eviction, or clear
				if sw, ok := a.(*pool.SWAAllocator); ok && r != nil && len(r.locs) > p {
					n := len(r.locs) / p * p / 2
					if err := sw.FreeSWA(r.locs[:n]); err != nil {
						t.Fatal(err)
					}
					if sw.FullAvailable() < sw.Available() {
						t.Fatal("combined availability exceeds the full pool's")
					}
					break
				}
				if arg%4 == 0 {
					a.Clear()
					clear(reqs)
					c = newChecker(t, a)
					if ref != nil {
						ref = newRef(pages, p)
					}
				}
			}
			if sw, ok := a.(*pool.SWAAllocator); ok {
				if got, want := sw.FullAvailable(), sw.Full().Size()-len(c.pages)*p; got != want {
					t.Fatalf("full available %d, want %d", got, want)
				}
				if sw.SWAAvailable() < sw.FullAvailable() {
					t.Fatalf("swa available %d < full %d without eviction bookkeeping", sw.SWAAvailable(), sw.FullAvailable())
				}
			} else {
				c.check()
				if ref != nil && (pa.Available() != ref.available() || !slices.Equal(pa.FreePages(), ref.free)) {
					t.Fatalf("free list %v, reference %v", pa.FreePages(), ref.free)
				}
			}
		}
	})
}
