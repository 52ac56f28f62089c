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
	p        int
	pages    int
	needSort bool
	free     []int32
	rel      []int32 // need_sort release list
	used     map[int32]bool
}

func newRef(pages, p int, needSort bool) *refAlloc {
	r := &refAlloc{p: p, pages: pages, needSort: needSort, used: map[int32]bool{}}
	for pg := 1; pg <= pages; pg++ {
		r.free = append(r.free, int32(pg))
	}
	return r
}

func (r *refAlloc) available() int { return (len(r.free) + len(r.rel)) * r.p }

// merge is merge_and_sort_free, run when need_sort is on and demand > free.
func (r *refAlloc) merge(demand int) {
	if r.needSort && demand > len(r.free) {
		r.free = append(r.free, r.rel...)
		slices.Sort(r.free)
		r.rel = nil
	}
}

// resize keeps live pages: it refuses when one lies beyond the new size.
func (r *refAlloc) resize(np int) bool {
	for pg := range r.used {
		if int(pg) > np {
			return false
		}
	}
	keep := func(s []int32) []int32 {
		return slices.DeleteFunc(s, func(pg int32) bool { return int(pg) > np })
	}
	r.free, r.rel = keep(r.free), keep(r.rel)
	for pg := r.pages + 1; pg <= np; pg++ {
		r.free = append(r.free, int32(pg))
	}
	r.pages = np
	return true
}

func (r *refAlloc) all() []int32 { return append(append([]int32{}, r.free...), r.rel...) }

func (r *refAlloc) take() int32 {
	pg := r.free[0]
	r.free = r.free[1:]
	r.used[pg] = true
	return pg
}

// extend returns the slots, or ok=false when the pages do not suffice.
func (r *refAlloc) extend(reqs []pool.Extend) ([]int32, bool) {
	need, tokens := 0, 0
	for _, q := range reqs {
		need += (q.SeqLen+r.p-1)/r.p - (q.PrefixLen+r.p-1)/r.p
		tokens += q.SeqLen - q.PrefixLen
	}
	if r.p == 1 {
		r.merge(tokens)
	} else {
		r.merge(tokens/r.p + len(reqs) + 1)
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
	if r.p > 1 {
		slices.Sort(pages)
	}
	switch {
	case r.needSort:
		r.rel = append(r.rel, pages...)
	case r.p == 1:
		r.free = append(r.free, pages...)
	default:
		r.free = append(pages, r.free...)
	}
}

// FuzzAllocator decodes bytes into operation sequences and checks the paged
// and token allocators slot for slot against refAlloc, and the SWA
// allocator's accounting against the live set.
func FuzzAllocator(f *testing.F) {
	f.Add([]byte{0, 10, 3, 20, 1, 1, 2, 0, 3, 1, 1, 2})
	f.Add([]byte{1, 40, 0, 5, 0, 9, 1, 0, 2, 1, 3, 0, 4, 7})
	f.Add([]byte{2, 0, 200, 1, 0, 2, 0, 3, 1, 5, 2, 6})
	f.Add([]byte{5, 7, 60, 0, 70, 2, 1, 6, 0, 3, 0})
	f.Add([]byte{9, 3, 0, 30, 0, 41, 2, 0, 3, 3, 5, 1, 0, 9, 3, 0, 1, 5}) // need_sort, group free, resize
	f.Add([]byte{8, 12, 0, 2, 0, 3, 3, 1, 0, 4, 2, 0, 5, 17, 0, 3, 2, 1}) // need_sort tokens
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		pageSizes := []int{1, 2, 4, 16}
		mode := int(data[0])
		p := pageSizes[mode%len(pageSizes)]
		swaMode := mode/len(pageSizes)%2 == 1
		needSort := mode/(2*len(pageSizes))%2 == 1
		pages := 8 + int(data[1])%32
		data = data[2:]
		var a pool.Allocator
		var pa *pool.PagedAllocator
		var ref *refAlloc
		if swaMode {
			a = mustSWA(t, pages*p, p)
		} else {
			pa, _ = pool.NewAllocator(pool.AllocatorConfig{Size: pages * p, PageSize: p, NeedSort: needSort})
			a = pa
			ref = newRef(pages, p, needSort)
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
					ref.merge(len(ds))
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
				// Odd args free this request and the next live one as a group
				// (one release of the concatenation).
				var other *seq
				oid := -1
				if arg%2 == 1 {
					for j := 1; j < 8; j++ {
						if s := reqs[(id+j)%8]; s != nil {
							other, oid = s, (id+j)%8
							break
						}
					}
				}
				locs := r.locs
				if other != nil {
					a.FreeGroupBegin()
					if err := errors.Join(a.Free(r.locs), a.Free(other.locs)); err != nil {
						t.Fatalf("group free: %v", err)
					}
					if a.Available() != c.a.Size()-len(c.pages)*p && !swaMode {
						t.Fatalf("group free released pages before FreeGroupEnd")
					}
					if err := a.FreeGroupEnd(); err != nil {
						t.Fatalf("free group end: %v", err)
					}
					locs = append(append([]int32{}, r.locs...), other.locs...)
					delete(reqs, oid)
				} else if err := a.Free(r.locs); err != nil {
					t.Fatalf("free: %v", err)
				}
				if ref != nil {
					ref.release(locs)
				}
				c.freed(locs)
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
				switch arg % 4 {
				case 0:
					a.Clear()
					clear(reqs)
					c = newChecker(t, a)
					if ref != nil {
						ref = newRef(ref.pages, p, needSort)
					}
				case 1:
					if ref == nil {
						break
					}
					np := 1 + arg%pages
					err := pa.Resize(np * p)
					if ok := ref.resize(np); ok != (err == nil) || (!ok && !errors.Is(err, pool.ErrLiveOutside)) {
						t.Fatalf("resize to %d pages: err = %v, reference ok = %v", np, err, ok)
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
				if ref != nil && (pa.Available() != ref.available() || !slices.Equal(pa.FreePages(), ref.all())) {
					t.Fatalf("free list %v, reference %v", pa.FreePages(), ref.all())
				}
			}
		}
	})
}
