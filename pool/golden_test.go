package pool_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcfg/kvcfg/pool"
)

// mustPaged returns a paged allocator whose pages [1..n] are all free.
func mustPaged(t testing.TB, size, page int) *pool.PagedAllocator {
	t.Helper()
	a, err := pool.NewPagedAllocator(size, page)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestG19AllocExtend is docs/sglang.md#golden-vectors G19: P=4, prefix 5, seq 14, last_loc 28.
// n1 = 3 slots at 29..31, n2 = one whole new page, n3 = 2 slots on one more
// page; 2 new pages.
func TestG19AllocExtend(t *testing.T) {
	a := mustPaged(t, 64, 4) // pages 1..16
	// Give the request pages 6 and 7 (prefix tokens 0..3 on page 6, token 4
	// at slot 28 = page 7 offset 0): allocate pages 1..7, free 1..5.
	locs, err := a.Alloc(nil, 28)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Free(locs[:20]); err != nil {
		t.Fatal(err)
	}
	// Free list front is now 1,2,3,4,5 (LIFO prepend, lowest first), then 8...
	if diff := cmp.Diff([]int32{1, 2, 3, 4, 5, 8, 9}, a.FreePages()[:7]); diff != "" {
		t.Fatalf("free list (-want +got):\n%s", diff)
	}
	if got := pool.NumNewPages([]pool.Extend{{PrefixLen: 5, SeqLen: 14, LastLoc: 28}}, 4); got != 2 {
		t.Errorf("NumNewPages = %d, want 2", got)
	}
	before := a.Available()
	got, err := a.AllocExtend(nil, []pool.Extend{{PrefixLen: 5, SeqLen: 14, LastLoc: 28}})
	if err != nil {
		t.Fatal(err)
	}
	// page A = 1 (slots 4..7), page B = 2 (slots 8, 9).
	want := []int32{29, 30, 31, 4, 5, 6, 7, 8, 9}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("alloc_extend (-want +got):\n%s", diff)
	}
	if used := before - a.Available(); used != 2*4 {
		t.Errorf("pages consumed = %d tokens, want 8", used)
	}
	// The debug invariant (last_loc+1) % P == p % P is enforced.
	if _, err := a.AllocExtend(nil, []pool.Extend{{PrefixLen: 5, SeqLen: 9, LastLoc: 29}}); !errors.Is(err, pool.ErrInvalid) {
		t.Errorf("misaligned last_loc: err = %v, want ErrInvalid", err)
	}
}

// TestG20AllocDecode is docs/sglang.md#golden-vectors G20: P=16, seq_len 17 / 18 / 16 →
// new page / last_loc+1 / last_loc+1.
func TestG20AllocDecode(t *testing.T) {
	a := mustPaged(t, 16*8, 16)
	r1, _ := a.Alloc(nil, 16) // page 1: request with 16 tokens (slots 16..31)
	r2, _ := a.Alloc(nil, 32) // pages 2,3: request with 17 tokens, last at slot 48
	r3, _ := a.Alloc(nil, 16) // page 4: request with 15 tokens, last at slot 64+14
	_ = r2
	reqs := []pool.Decode{
		{SeqLen: 17, LastLoc: r1[15]}, // 17 % 16 == 1 → new page
		{SeqLen: 18, LastLoc: 48},     // last_loc + 1
		{SeqLen: 16, LastLoc: r3[14]}, // last_loc + 1
	}
	got, err := a.AllocDecode(nil, reqs)
	if err != nil {
		t.Fatal(err)
	}
	want := []int32{5 * 16, 49, 64 + 15}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("alloc_decode (-want +got):\n%s", diff)
	}
	if got := a.Available(); got != 16*8-5*16 {
		t.Errorf("available = %d, want %d", got, 16*8-5*16)
	}
}

// TestReuseOrder pins the free-list orders of docs/sglang.md#pools-token-allocator and #pools-paged-allocator: FIFO for page 1,
// LIFO (sorted prepend) for P > 1, and need_sort's merge.
func TestReuseOrder(t *testing.T) {
	t.Run("token FIFO", func(t *testing.T) {
		a, _ := pool.NewTokenAllocator(6)
		l, _ := a.Alloc(nil, 4) // 1 2 3 4
		if err := a.Free([]int32{l[2], l[0]}); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]int32{5, 6, 3, 1}, a.FreePages()); diff != "" {
			t.Errorf("free list (-want +got):\n%s", diff)
		}
		got, _ := a.Alloc(nil, 3)
		if diff := cmp.Diff([]int32{5, 6, 3}, got); diff != "" {
			t.Errorf("alloc (-want +got):\n%s", diff)
		}
	})
	t.Run("paged LIFO", func(t *testing.T) {
		a := mustPaged(t, 12, 2)                                        // pages 1..6
		l, _ := a.Alloc(nil, 8)                                         // pages 1..4
		if err := a.Free([]int32{l[7], l[6], l[1], l[2]}); err != nil { // pages 4, 1, 2
			t.Fatal(err)
		}
		if diff := cmp.Diff([]int32{1, 2, 4, 5, 6}, a.FreePages()); diff != "" {
			t.Errorf("free list (-want +got):\n%s", diff)
		}
		if err := a.Free([]int32{l[4]}); err != nil { // page 3
			t.Fatal(err)
		}
		got, _ := a.Alloc(nil, 4)
		if diff := cmp.Diff([]int32{6, 7, 2, 3}, got); diff != "" {
			t.Errorf("alloc after free (-want +got):\n%s", diff)
		}
	})
	t.Run("need sort", func(t *testing.T) {
		a, _ := pool.NewAllocator(pool.AllocatorConfig{Size: 8, PageSize: 2, NeedSort: true}) // pages 1..4
		l, _ := a.Alloc(nil, 6)                                                               // pages 1..3
		_ = a.Free(l[4:6])                                                                    // page 3 → release
		_ = a.Free(l[0:2])                                                                    // page 1 → release
		if got := a.Available(); got != 6 {
			t.Errorf("available = %d, want 6", got)
		}
		got, err := a.Alloc(nil, 4) // 2 pages > 1 free → merge: sort(4 ∪ 3,1) = 1,3,4
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]int32{2, 3, 6, 7}, got); diff != "" {
			t.Errorf("alloc after merge (-want +got):\n%s", diff)
		}
	})
}

func TestSWAAllocator(t *testing.T) {
	s, err := pool.NewSWAAllocator(pool.SWAConfig{FullSize: 32, SWASize: 16, PageSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	if s.Size() != 16 || s.Available() != 16 {
		t.Fatalf("size %d available %d, want 16 16", s.Size(), s.Available())
	}
	locs, err := s.AllocExtend(nil, []pool.Extend{{PrefixLen: 0, SeqLen: 10, LastLoc: -1}})
	if err != nil {
		t.Fatal(err)
	}
	swa := s.FullToSWA(nil, locs)
	if diff := cmp.Diff([]int32{4, 5, 6, 7, 8, 9, 10, 11, 12, 13}, swa); diff != "" {
		t.Errorf("swa slots (-want +got):\n%s", diff)
	}
	if got := s.FullToSWA(nil, []int32{-1}); got[0] != -1 {
		t.Errorf("translate(-1) = %d, want -1", got[0])
	}
	// Decode continues in both pools.
	d, err := s.AllocDecode(nil, []pool.Decode{{SeqLen: 11, LastLoc: locs[9]}})
	if err != nil {
		t.Fatal(err)
	}
	if d[0] != locs[9]+1 || s.FullToSWA(nil, d)[0] != 14 {
		t.Errorf("decode slot %d (swa %d), want %d (14)", d[0], s.FullToSWA(nil, d)[0], locs[9]+1)
	}
	// Tokens 0..3 left the window: free their SWA page only.
	if err := s.FreeSWA(locs[:4]); err != nil {
		t.Fatal(err)
	}
	if s.FullAvailable() != 32-12 || s.SWAAvailable() != 16-8 {
		t.Errorf("after free_swa: full %d swa %d, want 20 8", s.FullAvailable(), s.SWAAvailable())
	}
	if got := s.FullToSWA(nil, locs[:1]); got[0] != 0 {
		t.Errorf("evicted slot maps to %d, want 0", got[0])
	}
	if err := s.FreeSWA(locs[:4]); err != nil { // idempotent
		t.Errorf("second free_swa: %v", err)
	}
	// The SWA pool bounds allocation: 8 free swa tokens.
	if _, err := s.Alloc(nil, 12); !errors.Is(err, pool.ErrOutOfMemory) {
		t.Errorf("alloc beyond swa: err = %v, want ErrOutOfMemory", err)
	} else {
		var oe *pool.OutOfMemoryError
		if errors.As(err, &oe); oe.What != "swa pool" || oe.Need != 12 || oe.Have != 8 {
			t.Errorf("oom = %+v, want swa pool need 12 have 8", oe)
		}
	}
	all := append(append([]int32{}, locs...), d...)
	if err := s.Free(all); err != nil {
		t.Fatal(err)
	}
	if s.FullAvailable() != 32 || s.SWAAvailable() != 16 {
		t.Errorf("after free: full %d swa %d, want 32 16", s.FullAvailable(), s.SWAAvailable())
	}
}

func TestResizeKeepsLive(t *testing.T) {
	a := mustPaged(t, 40, 4)  // pages 1..10
	l, _ := a.Alloc(nil, 12)  // pages 1..3
	_ = a.Free(l[4:8])        // page 2 free again
	hi, _ := a.Alloc(nil, 32) // pages 2,4..10
	if err := a.Resize(16); !errors.Is(err, pool.ErrLiveOutside) {
		t.Fatalf("resize below live pages: err = %v, want ErrLiveOutside", err)
	}
	if a.Size() != 40 {
		t.Errorf("size after refused resize = %d, want 40", a.Size())
	}
	_ = a.Free(hi)
	if err := a.Resize(18); err != nil { // 4 pages
		t.Fatal(err)
	}
	if a.Size() != 16 || a.Available() != 16-8 {
		t.Errorf("size %d available %d, want 16 8", a.Size(), a.Available())
	}
	if diff := cmp.Diff([]int32{2, 4}, a.FreePages()); diff != "" {
		t.Errorf("free list after resize (-want +got):\n%s", diff)
	}
	if err := a.Resize(41 * 4); !errors.Is(err, pool.ErrConfig) {
		t.Errorf("grow beyond build size: err = %v, want ErrConfig", err)
	}
	if err := a.Resize(40); err != nil {
		t.Fatal(err)
	}
	if a.Available() != 40-8 {
		t.Errorf("available after growing back = %d, want 32", a.Available())
	}
}

func TestBackupRestore(t *testing.T) {
	a := mustPaged(t, 64, 4)
	keep, _ := a.Alloc(nil, 8)
	snap := a.Backup()
	before := a.FreePages()
	tentative, _ := a.AllocExtend(nil, []pool.Extend{{SeqLen: 9, LastLoc: -1}})
	_ = a.Free(keep)
	if err := a.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, a.FreePages()); diff != "" {
		t.Errorf("free list after restore (-want +got):\n%s", diff)
	}
	if err := a.Free(keep); err != nil {
		t.Errorf("slots freed after the backup are live again: %v", err)
	}
	if err := a.Free(tentative[:1]); !errors.Is(err, pool.ErrBadLocation) {
		t.Errorf("slots allocated after the backup are free again: err = %v", err)
	}
	if err := a.Restore(mustPaged(t, 8, 4).Backup()); !errors.Is(err, pool.ErrInvalid) {
		t.Errorf("foreign snapshot: err = %v", err)
	}
}
