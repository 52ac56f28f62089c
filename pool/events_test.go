package pool_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcfg/kvcfg/pool"
	"github.com/kvcfg/kvcfg/prefix"
)

func TestEvents(t *testing.T) {
	var got []prefix.Event
	sink := pool.EventFunc(func(e prefix.Event) { got = append(got, e) })
	a, err := pool.NewAllocator(pool.AllocatorConfig{Size: 64, PageSize: 4, Events: sink,
		EventMeta: pool.EventMeta{GroupIdx: 2, SpecKind: prefix.SlidingWindow, SlidingWindow: 128}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("events at construction: %v", got)
	}
	tokens := []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	locs, _ := a.AllocExtend(nil, []pool.Extend{{SeqLen: len(tokens), LastLoc: -1}})
	h := prefix.Hasher{BlockSize: 4, Seed: prefix.NoneHash("0")}
	hashes, err := h.Hashes(nil, nil, tokens, nil) // two full blocks
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Store(pool.Stored{Locs: []int32{locs[0], locs[4]}, Hashes: hashes, Tokens: tokens[:8]}); err != nil {
		t.Fatal(err)
	}
	want := []prefix.Event{prefix.BlockStored{BlockHashes: hashes, TokenIDs: tokens[:8], BlockSize: 4, Medium: "GPU",
		GroupIdx: 2, KVCacheSpecKind: "sliding_window", KVCacheSpecSlidingWindow: 128}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("stored events (-want +got):\n%s", diff)
	}
	// Freeing the request removes both hashed pages (the third page, the
	// partial block, was never stored).
	if err := a.Free(locs); err != nil {
		t.Fatal(err)
	}
	a.Clear()
	want = append(want, prefix.BlockRemoved{BlockHashes: hashes, Medium: "GPU", GroupIdx: 2}, prefix.AllBlocksCleared{})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	for _, s := range []pool.Stored{
		{Locs: []int32{4}, Hashes: hashes, Tokens: tokens[:8]},
		{Locs: []int32{4}, Hashes: hashes[:1], Tokens: tokens[:3]},
	} {
		if err := a.Store(s); !errors.Is(err, pool.ErrInvalid) {
			t.Errorf("Store(%v): err = %v, want ErrInvalid", s, err)
		}
	}
	if err := a.Store(pool.Stored{Locs: []int32{4}, Hashes: hashes[:1], Tokens: tokens[:4]}); !errors.Is(err, pool.ErrBadLocation) {
		t.Errorf("Store on a free page: err = %v, want ErrBadLocation", err)
	}
	plain := mustPaged(t, 16, 4)
	if err := plain.Store(pool.Stored{}); !errors.Is(err, pool.ErrInvalid) {
		t.Errorf("Store without events: err = %v", err)
	}
}

// TestSWAEvents: blocks stored in the SWA pool are reported removed when
// they leave the window (FreeSWA), in the sliding_window group.
func TestSWAEvents(t *testing.T) {
	var full, swa []prefix.Event
	p, err := pool.New(pool.Config{PageSize: 4, MaxTotalTokens: 64, SWATokens: 32, MaxRunningRequests: 2, ReqToTokenWidth: 64,
		Format: "bf16", Attention: pool.MHA, LayerIDs: []int{1}, SWALayerIDs: []int{0}, Heads: 1, HeadDim: 8, VHeadDim: 8, SlidingWindow: 4,
		Events:    pool.EventFunc(func(e prefix.Event) { full = append(full, e) }),
		SWAEvents: pool.EventFunc(func(e prefix.Event) { swa = append(swa, e) })})
	if err != nil {
		t.Fatal(err)
	}
	s := p.Allocator.(*pool.SWAAllocator)
	tokens := []uint32{1, 2, 3, 4, 5, 6, 7, 8}
	locs, _ := s.AllocExtend(nil, []pool.Extend{{SeqLen: 8, LastLoc: -1}})
	hashes, _ := prefix.Hasher{BlockSize: 4, Seed: prefix.NoneHash("0")}.Hashes(nil, nil, tokens, nil)
	swaLocs := s.FullToSWA(nil, locs)
	if err := errors.Join(
		s.Full().Store(pool.Stored{Locs: []int32{locs[0], locs[4]}, Hashes: hashes, Tokens: tokens}),
		s.SWA().Store(pool.Stored{Locs: []int32{swaLocs[0], swaLocs[4]}, Hashes: hashes, Tokens: tokens}),
	); err != nil {
		t.Fatal(err)
	}
	if err := s.FreeSWA(locs[:4]); err != nil { // the first block left the window
		t.Fatal(err)
	}
	want := []prefix.Event{
		prefix.BlockStored{BlockHashes: hashes, TokenIDs: tokens, BlockSize: 4, Medium: "GPU", GroupIdx: 1, KVCacheSpecKind: "sliding_window", KVCacheSpecSlidingWindow: 4},
		prefix.BlockRemoved{BlockHashes: hashes[:1], Medium: "GPU", GroupIdx: 1},
	}
	if diff := cmp.Diff(want, swa); diff != "" {
		t.Errorf("swa events (-want +got):\n%s", diff)
	}
	if len(full) != 1 || full[0].(prefix.BlockStored).KVCacheSpecKind != prefix.FullAttention {
		t.Errorf("full pool events %v, want one full_attention BlockStored", full)
	}
}
