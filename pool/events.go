package pool

import (
	"fmt"

	"github.com/kvcfg/kvcfg/prefix"
)

// EventSink receives the KV cache events of an allocator built with
// AllocatorConfig.Events. Emit is called synchronously from the allocator's
// goroutine; the event's slices are freshly allocated and owned by the sink.
type EventSink interface {
	Emit(prefix.Event)
}

// EventFunc adapts a function to an EventSink.
type EventFunc func(prefix.Event)

// Emit implements EventSink.
func (f EventFunc) Emit(e prefix.Event) { f(e) }

// EventMeta fills the locality fields of an allocator's events.
type EventMeta struct {
	// Medium is where the blocks live; "" means "GPU".
	Medium string `json:"medium,omitempty"`
	// GroupIdx is the KV cache group index.
	GroupIdx int `json:"group_idx,omitempty"`
	// SpecKind is the group's kv_cache_spec_kind; "" means full_attention.
	SpecKind prefix.SpecKind `json:"kv_cache_spec_kind,omitempty"`
	// SlidingWindow is the window of a sliding_window group.
	SlidingWindow int `json:"sliding_window,omitempty"`
}

type eventState struct {
	sink   EventSink
	meta   EventMeta
	p      int
	hashed []bool
	hash   []prefix.Hash
}

func newEventState(sink EventSink, meta EventMeta, pages, p int) *eventState {
	if meta.Medium == "" {
		meta.Medium = prefix.MediumGPU
	}
	if meta.SpecKind == "" {
		meta.SpecKind = prefix.FullAttention
	}
	return &eventState{sink: sink, meta: meta, p: p, hashed: make([]bool, pages+1), hash: make([]prefix.Hash, pages+1)}
}

func (e *eventState) removed(pages []int32) {
	var hs []prefix.Hash
	for _, pg := range pages {
		if e.hashed[pg] {
			hs = append(hs, e.hash[pg])
			e.hashed[pg] = false
		}
	}
	if len(hs) > 0 {
		e.sink.Emit(prefix.BlockRemoved{BlockHashes: hs, Medium: e.meta.Medium, GroupIdx: e.meta.GroupIdx})
	}
}

func (e *eventState) clear() {
	clear(e.hashed)
	e.sink.Emit(prefix.AllBlocksCleared{})
}

// Stored describes full blocks an engine has written and hashed, for Store.
type Stored struct {
	// Locs holds one slot of each block's page (any slot of the page).
	Locs []int32
	// Hashes are the blocks' hashes, one per entry of Locs.
	Hashes []prefix.Hash
	// Parent is the hash of the block before the first (nil: none).
	Parent *prefix.Hash
	// Tokens are the blocks' tokens: PageSize per block.
	Tokens []uint32
	// LoraName is the LoRA adapter name, "" for none.
	LoraName string
	// ExtraKeys are the per-block extra keys, nil for none.
	ExtraKeys [][]any
}

// Store registers hashes for full, allocated pages and emits a BlockStored
// event; freeing a registered page later emits BlockRemoved with its hash.
// It fails with ErrInvalid when the allocator was built without Events or
// the lengths disagree, and with ErrBadLocation for a page that is not
// allocated.
func (a *PagedAllocator) Store(s Stored) error {
	if a.ev == nil {
		return fmt.Errorf("%w: store on an allocator built without events", ErrInvalid)
	}
	if len(s.Locs) != len(s.Hashes) || len(s.Tokens) != len(s.Locs)*a.p {
		return fmt.Errorf("%w: store of %d locs, %d hashes, %d tokens (page size %d)", ErrInvalid, len(s.Locs), len(s.Hashes), len(s.Tokens), a.p)
	}
	if s.ExtraKeys != nil && len(s.ExtraKeys) != len(s.Locs) {
		return fmt.Errorf("%w: %d extra key sets for %d blocks", ErrInvalid, len(s.ExtraKeys), len(s.Locs))
	}
	for _, l := range s.Locs {
		if !a.usedLoc(l) {
			return fmt.Errorf("%w: store on slot %d, which is not allocated", ErrBadLocation, l)
		}
	}
	for i, l := range s.Locs {
		pg := int(l) / a.p
		a.ev.hashed[pg] = true
		a.ev.hash[pg] = s.Hashes[i]
	}
	m := a.ev.meta
	ev := prefix.BlockStored{
		BlockHashes:              append([]prefix.Hash(nil), s.Hashes...),
		TokenIDs:                 append([]uint32(nil), s.Tokens...),
		BlockSize:                a.p,
		Medium:                   m.Medium,
		LoraName:                 s.LoraName,
		ExtraKeys:                s.ExtraKeys,
		GroupIdx:                 m.GroupIdx,
		KVCacheSpecKind:          m.SpecKind,
		KVCacheSpecSlidingWindow: m.SlidingWindow,
	}
	if s.Parent != nil {
		p := *s.Parent
		ev.ParentBlockHash = &p
	}
	a.ev.sink.Emit(ev)
	return nil
}
