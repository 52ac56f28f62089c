package pool_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kvcfg/kvcfg/pool"
)

// allocators lists every Allocator implementation under the shared
// conformance suite. Each constructor builds an allocator of size tokens
// with the given page size.
var allocators = []struct {
	name string
	page int
	new  func(t testing.TB, size, page int) pool.Allocator
}{
	{"token", 1, func(t testing.TB, size, page int) pool.Allocator { a, _ := pool.NewTokenAllocator(size); return a }},
	{"paged4", 4, func(t testing.TB, size, page int) pool.Allocator { return mustPaged(t, size, page) }},
	{"paged16", 16, func(t testing.TB, size, page int) pool.Allocator { return mustPaged(t, size, page) }},
	{"paged4_need_sort", 4, func(t testing.TB, size, page int) pool.Allocator {
		a, _ := pool.NewAllocator(pool.AllocatorConfig{Size: size, PageSize: page, NeedSort: true})
		return a
	}},
	{"token_need_sort", 1, func(t testing.TB, size, page int) pool.Allocator {
		a, _ := pool.NewAllocator(pool.AllocatorConfig{Size: size, PageSize: page, NeedSort: true})
		return a
	}},
	{"swa_token", 1, func(t testing.TB, size, page int) pool.Allocator { return mustSWA(t, size, page) }},
	{"swa_paged4", 4, func(t testing.TB, size, page int) pool.Allocator { return mustSWA(t, size, page) }},
	{"locked_paged8", 8, func(t testing.TB, size, page int) pool.Allocator { return pool.NewLocked(mustPaged(t, size, page)) }},
}

func mustSWA(t testing.TB, size, page int) *pool.SWAAllocator {
	s, err := pool.NewSWAAllocator(pool.SWAConfig{FullSize: size, SWASize: size, PageSize: page})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	for _, tc := range allocators {
		t.Run(tc.name, func(t *testing.T) {
			testAllocator(t, tc.page, func(size int) pool.Allocator { return tc.new(t, size, tc.page) })
		})
	}
}

// seq is a request the harness drives: its slots in token order.
type seq struct{ locs []int32 }

func (s *seq) last() int32 {
	if len(s.locs) == 0 {
		return -1
	}
	return s.locs[len(s.locs)-1]
}

// checker tracks every live slot and checks accounting after each step.
type checker struct {
	t     testing.TB
	a     pool.Allocator
	p     int
	owner map[int32]int // slot -> request id
	pages map[int32]int // page -> live slots of it
}

func newChecker(t testing.TB, a pool.Allocator) *checker {
	return &checker{t: t, a: a, p: a.PageSize(), owner: map[int32]int{}, pages: map[int32]int{}}
}

func (c *checker) took(id int, locs []int32, fresh bool) {
	c.t.Helper()
	for _, l := range locs {
		if l < int32(c.p) {
			c.t.Fatalf("slot %d on the reserved page 0", l)
		}
		if o, ok := c.owner[l]; ok {
			c.t.Fatalf("slot %d handed out twice (requests %d and %d)", l, o, id)
		}
		c.owner[l] = id
		c.pages[l/int32(c.p)]++
	}
	_ = fresh
}

func (c *checker) freed(locs []int32) {
	for _, l := range locs {
		delete(c.owner, l)
		pg := l / int32(c.p)
		if c.pages[pg]--; c.pages[pg] == 0 {
			delete(c.pages, pg)
		}
	}
}

// check asserts the exact available size: every page with a live slot is
// used, every other page is free.
func (c *checker) check() {
	c.t.Helper()
	want := c.a.Size() - len(c.pages)*c.p
	if got := c.a.Available(); got != want {
		c.t.Fatalf("available = %d, want %d (size %d, %d live pages)", got, want, c.a.Size(), len(c.pages))
	}
	st := c.a.Stats()
	if st.AvailableTokens != want || st.UsedTokens != len(c.pages)*c.p || st.PageSize != c.p {
		c.t.Fatalf("stats %+v disagree with available %d", st, want)
	}
}

func testAllocator(t *testing.T, p int, newAlloc func(size int) pool.Allocator) {
	const pages = 64
	size := pages * p

	t.Run("initial", func(t *testing.T) {
		a := newAlloc(size + p - 1) // a partial page is not usable
		if a.Size() != size || a.Available() != size || a.PageSize() != p {
			t.Fatalf("size %d available %d page %d, want %d %d %d", a.Size(), a.Available(), a.PageSize(), size, size, p)
		}
	})

	t.Run("fill, full, free, refill", func(t *testing.T) {
		a := newAlloc(size)
		c := newChecker(t, a)
		var all []int32
		for i := range pages {
			l, err := a.Alloc(nil, p)
			if err != nil {
				t.Fatalf("alloc %d: %v", i, err)
			}
			c.took(i, l, true)
			all = append(all, l...)
			c.check()
		}
		_, err := a.Alloc(nil, p)
		var oe *pool.OutOfMemoryError
		if !errors.As(err, &oe) || !errors.Is(err, pool.ErrOutOfMemory) || oe.Need != p || oe.Have != 0 {
			t.Fatalf("alloc when full: err = %v, want OutOfMemoryError need %d have 0", err, p)
		}
		for _, fn := range []func() ([]int32, error){
			func() ([]int32, error) { return a.AllocExtend(nil, []pool.Extend{{SeqLen: 1, LastLoc: -1}}) },
			func() ([]int32, error) { return a.AllocDecode(nil, []pool.Decode{{SeqLen: 1}}) },
		} {
			if l, err := fn(); !errors.Is(err, pool.ErrOutOfMemory) || len(l) != 0 {
				t.Fatalf("extend/decode when full: %v %v", l, err)
			}
		}
		c.check()
		if err := a.Free(all); err != nil {
			t.Fatal(err)
		}
		c.freed(all)
		c.check()
		if l, err := a.Alloc(nil, size); err != nil || len(l) != size {
			t.Fatalf("refill: %d slots, %v", len(l), err)
		}
		if st := a.Stats(); st.PeakUsedTokens != size || st.FailedAllocs < 3 {
			t.Errorf("stats %+v: want peak %d and >= 3 failed allocs", st, size)
		}
	})

	t.Run("errors leave state unchanged", func(t *testing.T) {
		a := newAlloc(size)
		c := newChecker(t, a)
		l, _ := a.Alloc(nil, 2*p)
		c.took(0, l, true)
		bad := []struct {
			name string
			err  error
			fn   func() error
		}{
			{"double free", pool.ErrBadLocation, func() error {
				if err := a.Free(l[:p]); err != nil {
					return err
				}
				c.freed(l[:p])
				return a.Free(l[:1])
			}},
			{"free page 0", pool.ErrBadLocation, func() error { return a.Free([]int32{0}) }},
			{"free beyond", pool.ErrBadLocation, func() error { return a.Free([]int32{int32(size + 5*p)}) }},
			{"free negative", pool.ErrBadLocation, func() error { return a.Free([]int32{-3}) }},
			{"mixed free", pool.ErrBadLocation, func() error { return a.Free([]int32{l[p], 0}) }},
			{"negative alloc", pool.ErrInvalid, func() error { _, err := a.Alloc(nil, -p); return err }},
			{"prefix > seq", pool.ErrInvalid, func() error {
				_, err := a.AllocExtend(nil, []pool.Extend{{PrefixLen: 3, SeqLen: 2, LastLoc: -1}})
				return err
			}},
			{"decode seq 0", pool.ErrInvalid, func() error { _, err := a.AllocDecode(nil, []pool.Decode{{SeqLen: 0}}); return err }},
			{"oversized extend", pool.ErrOutOfMemory, func() error {
				_, err := a.AllocExtend(nil, []pool.Extend{{SeqLen: size + 1, LastLoc: -1}})
				return err
			}},
			{"resize too big", pool.ErrConfig, func() error { return a.Resize(size + 10*p) }},
			{"resize over live", pool.ErrLiveOutside, func() error { return a.Resize(0) }},
		}
		for _, b := range bad {
			if err := b.fn(); !errors.Is(err, b.err) {
				t.Errorf("%s: err = %v, want %v", b.name, err, b.err)
			}
			c.check()
		}
		if p > 1 {
			if _, err := a.Alloc(nil, p+1); !errors.Is(err, pool.ErrInvalid) {
				t.Errorf("alloc of a partial page: err = %v, want ErrInvalid", err)
			}
		}
	})

	t.Run("extend and decode", func(t *testing.T) {
		a := newAlloc(size)
		c := newChecker(t, a)
		var reqs []*seq
		for i := range 4 {
			n := 3*p + i + 1
			l, err := a.AllocExtend(nil, []pool.Extend{{PrefixLen: 0, SeqLen: n, LastLoc: -1}})
			if err != nil || len(l) != n {
				t.Fatalf("extend %d: %d slots, %v", i, len(l), err)
			}
			c.took(i, l, true)
			reqs = append(reqs, &seq{locs: l})
			c.check()
		}
		for step := range 2*p + 1 {
			ds := make([]pool.Decode, len(reqs))
			for i, r := range reqs {
				ds[i] = pool.Decode{SeqLen: len(r.locs) + 1, LastLoc: r.last()}
			}
			l, err := a.AllocDecode(nil, ds)
			if err != nil {
				t.Fatalf("decode step %d: %v", step, err)
			}
			for i, r := range reqs {
				c.took(i, l[i:i+1], false)
				r.locs = append(r.locs, l[i])
			}
			c.check()
		}
		// Chunked extend of request 0 continues its last page.
		r := reqs[0]
		ext := pool.Extend{PrefixLen: len(r.locs), SeqLen: len(r.locs) + p + 1, LastLoc: r.last()}
		l, err := a.AllocExtend(nil, []pool.Extend{ext})
		if err != nil {
			t.Fatal(err)
		}
		if p > 1 && len(r.locs)%p != 0 && l[0] != r.last()+1 {
			t.Errorf("extend did not continue the partial page: first slot %d, last %d", l[0], r.last())
		}
		c.took(0, l, false)
		r.locs = append(r.locs, l...)
		c.check()
		// Free in a group: nothing is released before the end.
		a.FreeGroupBegin()
		for _, r := range reqs[:2] {
			if err := a.Free(r.locs); err != nil {
				t.Fatal(err)
			}
		}
		c.check()
		if err := a.FreeGroupEnd(); err != nil {
			t.Fatal(err)
		}
		for _, r := range reqs[:2] {
			c.freed(r.locs)
		}
		c.check()
		a.Clear()
		c = newChecker(t, a)
		c.check()
	})

	t.Run("random no leak", func(t *testing.T) {
		a := newAlloc(size)
		c := newChecker(t, a)
		rng := rand.New(rand.NewPCG(1, uint64(p)))
		live := map[int]*seq{}
		for step := range 2000 {
			id := rng.IntN(12)
			r, ok := live[id]
			switch {
			case !ok:
				n := rng.IntN(3*p) + 1
				l, err := a.AllocExtend(nil, []pool.Extend{{SeqLen: n, LastLoc: -1}})
				if err != nil {
					if !errors.Is(err, pool.ErrOutOfMemory) {
						t.Fatalf("step %d: %v", step, err)
					}
					continue
				}
				c.took(id, l, true)
				live[id] = &seq{locs: l}
			case rng.IntN(3) == 0:
				if err := a.Free(r.locs); err != nil {
					t.Fatalf("step %d free: %v", step, err)
				}
				c.freed(r.locs)
				delete(live, id)
			default:
				l, err := a.AllocDecode(nil, []pool.Decode{{SeqLen: len(r.locs) + 1, LastLoc: r.last()}})
				if err != nil {
					if !errors.Is(err, pool.ErrOutOfMemory) {
						t.Fatalf("step %d decode: %v", step, err)
					}
					continue
				}
				c.took(id, l, false)
				r.locs = append(r.locs, l...)
			}
			c.check()
		}
		for _, r := range live {
			if err := a.Free(r.locs); err != nil {
				t.Fatal(err)
			}
			c.freed(r.locs)
		}
		c.check()
		if a.Available() != a.Size() {
			t.Fatalf("leak: available %d of %d", a.Available(), a.Size())
		}
	})

	t.Run("resize keeps live", func(t *testing.T) {
		a := newAlloc(size)
		c := newChecker(t, a)
		l, _ := a.Alloc(nil, 4*p)
		c.took(0, l, true)
		hi := slices.Max(l) / int32(p)
		if err := a.Resize(int(hi-1) * p); !errors.Is(err, pool.ErrLiveOutside) {
			t.Fatalf("resize: err = %v, want ErrLiveOutside", err)
		}
		c.check()
		if err := a.Resize(int(hi) * p); err != nil {
			t.Fatal(err)
		}
		if a.Size() != int(hi)*p {
			t.Fatalf("size %d, want %d", a.Size(), int(hi)*p)
		}
		c.check()
		if err := a.Free(l); err != nil {
			t.Fatal(err)
		}
		c.freed(l)
		c.check()
		if err := a.Resize(0); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Alloc(nil, p); !errors.Is(err, pool.ErrOutOfMemory) {
			t.Fatalf("alloc on empty pool: %v", err)
		}
	})
}
