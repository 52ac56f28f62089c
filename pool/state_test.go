package pool_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcfg/kvcfg/dtype"
	"github.com/kvcfg/kvcfg/pool"
)

func TestReqToTokenPool(t *testing.T) {
	r, err := pool.NewReqToTokenPool(3, 10)
	if err != nil {
		t.Fatal(err)
	}
	if r.Bytes() != 4*10*4 || r.Size() != 3 || r.Width() != 10 {
		t.Errorf("bytes %d size %d width %d, want 160 3 10", r.Bytes(), r.Size(), r.Width())
	}
	s, err := r.Alloc(nil, 2)
	if err != nil || !cmp.Equal(s, []int32{1, 2}) {
		t.Fatalf("alloc = %v, %v; want [1 2] (slot 0 reserved)", s, err)
	}
	if _, err := r.Alloc(nil, 2); !errors.Is(err, pool.ErrOutOfMemory) {
		t.Errorf("alloc beyond slots: err = %v", err)
	}
	if err := r.Write(s[1], 2, []int32{40, 41, 42}); err != nil {
		t.Fatal(err)
	}
	if l, _ := r.LastLoc(s[1], 5); l != 42 {
		t.Errorf("last loc = %d, want 42", l)
	}
	if l, _ := r.LastLoc(s[1], 0); l != -1 {
		t.Errorf("last loc of empty prefix = %d, want -1", l)
	}
	if err := r.Write(s[1], 8, []int32{1, 2, 3}); !errors.Is(err, pool.ErrInvalid) {
		t.Errorf("write past the row: err = %v", err)
	}
	if err := r.Write(3, 0, nil); !errors.Is(err, pool.ErrBadLocation) {
		t.Errorf("write to a free slot: err = %v", err)
	}
	if err := r.Free(s[0]); err != nil {
		t.Fatal(err)
	}
	if err := r.Free(s[0]); !errors.Is(err, pool.ErrBadLocation) {
		t.Errorf("double free: err = %v", err)
	}
	s2, _ := r.Alloc(nil, 2)
	if !cmp.Equal(s2, []int32{3, 1}) {
		t.Errorf("FIFO reuse = %v, want [3 1]", s2)
	}
}

func TestStatePool(t *testing.T) {
	// Qwen3-Next TP4 per-slot shapes (docs/sglang.md#ex5, G12): conv (2048, 3)
	// bf16, SSM (8, 128, 128) fp32; 36 layers → 19,316,736 B per slot.
	// Two slots plus padding keep the test small.
	cfg := pool.StateConfig{Size: 2, Layers: 36, Conv: [][]int{{2048, 3}}, Temporal: []int{8, 128, 128},
		ConvDType: dtype.BFloat16, SSMDType: dtype.Float32, SlotRatio: 3}
	sp, err := pool.NewStatePool(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := sp.Bytes()
	if per := (b.Conv + b.SSM) / 3; per != 19316736 {
		t.Errorf("state bytes per slot = %d, want 19,316,736 (G12)", per)
	}
	if sp.MaxRequests() != 0 {
		t.Errorf("max requests = %d, want 2/3 = 0", sp.MaxRequests())
	}
	s, err := sp.Alloc(nil, 2)
	if err != nil || !cmp.Equal(s, []int32{1, 2}) {
		t.Fatalf("alloc = %v, %v", s, err)
	}
	if _, err := sp.Alloc(nil, 1); !errors.Is(err, pool.ErrOutOfMemory) {
		t.Errorf("exhausted: err = %v", err)
	}
	ssm, err := sp.SSM(35, 2)
	if err != nil || len(ssm) != 8*128*128*4 {
		t.Fatalf("ssm view: %d bytes, %v", len(ssm), err)
	}
	ssm[0] = 7
	again, _ := sp.SSM(35, 2)
	if again[0] != 7 {
		t.Errorf("SSM view does not alias the pool")
	}
	conv, err := sp.Conv(0, 0, 1)
	if err != nil || len(conv) != 2048*3*2 {
		t.Fatalf("conv view: %d bytes, %v", len(conv), err)
	}
	if _, err := sp.SSM(36, 1); !errors.Is(err, pool.ErrInvalid) {
		t.Errorf("layer out of range: err = %v", err)
	}
	if _, err := sp.Conv(1, 0, 1); !errors.Is(err, pool.ErrInvalid) {
		t.Errorf("conv tensor out of range: err = %v", err)
	}
	spec := cfg
	spec.Size, spec.SpecStateSize, spec.DraftTokens, spec.Layers = 1, 1, 4, 1
	sp2, err := pool.NewStatePool(spec)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sp2.Bytes().SpecState, int64(2*4*(2048*3*2+8*128*128*4)); got != want {
		t.Errorf("spec state bytes %d, want %d", got, want)
	}
	a, err1 := sp2.SpecSSM(0, 1, 3)
	c, err2 := sp2.SpecConv(0, 0, 1, 3)
	if err := errors.Join(err1, err2); err != nil || len(a) != 8*128*128*4 || len(c) != 2048*3*2 {
		t.Fatalf("spec views %d/%d bytes, %v", len(a), len(c), err)
	}
	a[0] = 9
	if b, _ := sp2.SpecSSM(0, 1, 2); b[0] == 9 {
		t.Errorf("draft tokens share a view")
	}
	if _, err := sp2.SpecSSM(0, 2, 0); !errors.Is(err, pool.ErrInvalid) {
		t.Errorf("spec slot out of range: err = %v", err)
	}
	if _, err := sp.SpecSSM(0, 0, 0); !errors.Is(err, pool.ErrInvalid) {
		t.Errorf("no spec state: err = %v", err)
	}
	if err := (pool.StateConfig{Size: 1, Layers: 1, Temporal: []int{0}}).Validate(); !errors.Is(err, pool.ErrConfig) {
		t.Errorf("bad temporal shape: err = %v", err)
	}
}

// Page size 1 frees through a fast path: a bad slot anywhere in the call
// (a duplicate, an unallocated slot, one beyond the pool) fails the whole
// call with the slow path's error and frees nothing.
func TestTokenFreeFastPathIsAllOrNothing(t *testing.T) {
	a, err := pool.NewTokenAllocator(16)
	if err != nil {
		t.Fatal(err)
	}
	locs, err := a.Alloc(nil, 6)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]int32{
		{locs[0], locs[1], locs[0]},
		{locs[0], locs[1], 15},
		{locs[2], 17},
		{locs[3], 0},
	} {
		if err := a.Free(bad); !errors.Is(err, pool.ErrBadLocation) {
			t.Errorf("Free(%v): %v, want ErrBadLocation", bad, err)
		}
		if a.Available() != 10 {
			t.Fatalf("Free(%v) changed the pool: %d available, want 10", bad, a.Available())
		}
	}
	if err := a.Free(locs); err != nil || a.Available() != 16 {
		t.Fatalf("Free(all): %v, %d available", err, a.Available())
	}
	// FIFO: the freed slots come back after the never-used ones, in order.
	got, _ := a.Alloc(nil, 16)
	want := append([]int32{7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, locs...)
	if !slices.Equal(got, want) {
		t.Errorf("free order %v, want %v", got, want)
	}
}
