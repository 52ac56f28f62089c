package pool

import (
	"errors"
	"slices"
	"testing"

	"github.com/kvcfg/kvcfg/prefix"
)

func TestBlockPoolLRUQueue(t *testing.T) {
	b, err := NewBlockPool(7)
	if err != nil {
		t.Fatal(err)
	}
	if b.NumFree() != 6 || !slices.Equal(b.FreeQueue(), []int32{1, 2, 3, 4, 5, 6}) {
		t.Fatalf("initial queue %v", b.FreeQueue())
	}
	h := func(i byte) prefix.Hash { return prefix.Hash{i} }
	x, _ := b.GetNew(nil, 4)
	for i, id := range x {
		if err := b.Cache(id, h(byte(i+1))); err != nil {
			t.Fatal(err)
		}
	}
	// Freed tail first: [5 6 4 3 2 1].
	if err := b.Free([]int32{4, 3, 2, 1}); err != nil {
		t.Fatal(err)
	}
	if q := b.FreeQueue(); !slices.Equal(q, []int32{5, 6, 4, 3, 2, 1}) || b.NumFreeCached() != 4 {
		t.Fatalf("queue %v cached free %d", q, b.NumFreeCached())
	}
	// Popping 3 evicts block 4's hash.
	y, _ := b.GetNew(nil, 3)
	if !slices.Equal(y, []int32{5, 6, 4}) || b.Evictions() != 1 {
		t.Fatalf("got %v evictions %d", y, b.Evictions())
	}
	if _, ok := b.Lookup(h(4)); ok {
		t.Error("evicted hash still cached")
	}
	// A hit takes a cached block out of the queue.
	id, ok := b.Lookup(h(2))
	if !ok || id != 2 {
		t.Fatalf("lookup %d %v", id, ok)
	}
	if err := b.Touch([]int32{id}); err != nil || b.RefCount(2) != 1 || slices.Contains(b.FreeQueue(), 2) {
		t.Fatalf("touch: %v ref %d queue %v", err, b.RefCount(2), b.FreeQueue())
	}
	if _, err := b.GetNew(nil, 3); !errors.Is(err, ErrOutOfMemory) {
		t.Errorf("over-allocation: %v", err)
	}
	for _, bad := range [][]int32{{0}, {7}, {1}} {
		if err := b.Free(bad); !errors.Is(err, ErrBadLocation) {
			t.Errorf("free %v: %v", bad, err)
		}
	}
	if _, err := NewBlockPool(1); !errors.Is(err, ErrConfig) {
		t.Errorf("one block: %v", err)
	}
}
