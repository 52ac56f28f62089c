package sizing

import "fmt"

// SubPool is one sub-pool of SGLang's UnifiedKVPool
// (mem_cache/unified_memory_pool.py): a slot's bytes over all its layers
// (entry_bytes), laid out envelope-major in the shared byte buffer, and
// the number of slots the configurator sized it for.
type SubPool struct {
	// Name is SGLang's sub-pool name: "full", "mamba" or "swa".
	Name string `json:"name"`
	// Kind is the spec class: "MHASubPoolSpec" or "MambaSubPoolSpec".
	Kind string `json:"kind"`
	// Layers is layer_num; Grow is "down" (full) or "up" (mamba, swa).
	Layers int    `json:"layers"`
	Grow   string `json:"grow"`
	// EntryBytes is entry_bytes(): one slot over all Layers.
	EntryBytes int64 `json:"entry_bytes"`
	// Sized is the slots the configurator sized: max_total_num_tokens (or
	// full_max_total_num_tokens) for "full", max_mamba_cache_size for
	// "mamba", swa_max_total_num_tokens for "swa".
	Sized int64 `json:"sized_slots"`
	// MaxSlots is total_bytes // entry_bytes: the slots the sub-pool could
	// take if its peer held none.
	MaxSlots int64 `json:"max_slots"`
	// MinSlotIndex is ceil(max entry_bytes / entry_bytes): slots [0, it)
	// are reserved for the slot-0 dummy writes.
	MinSlotIndex int64 `json:"min_slot_index"`
}

// Unified is the byte buffer of SGLang's unified memory pool
// (--enable-unified-memory): two sub-pools growing from opposite ends of
// one buffer of TotalBytes = Σ sized × entry_bytes
// (init_unified_mamba_pools, init_unified_swa_pools). Full is the
// full-attention KV pool; Other the Mamba state pool or the SWA KV pool.
type Unified struct {
	// Path is SGLang's log word: "Mamba hybrid" or "SWA hybrid".
	Path       string  `json:"path"`
	TotalBytes int64   `json:"total_bytes"`
	Full       SubPool `json:"full"`
	Other      SubPool `json:"other"`
}

// NewUnified builds the shared buffer from the two sub-pools' layouts and
// their sized slot counts: total_bytes = Σ sized·entry_bytes, then each
// sub-pool's max_slots = total // entry and min_slot_index =
// ceil(max entry / entry). It fails, with UnifiedKVPool's RuntimeError
// text, when a sub-pool fits no slot beyond its reserved ones.
func NewUnified(path string, full, other SubPool) (Unified, error) {
	if full.EntryBytes <= 0 || other.EntryBytes <= 0 || full.Sized < 0 || other.Sized < 0 {
		return Unified{}, fmt.Errorf("%w: unified pool: entry bytes must be positive", ErrInvalid)
	}
	u := Unified{Path: path, TotalBytes: full.Sized*full.EntryBytes + other.Sized*other.EntryBytes, Full: full, Other: other}
	entryMax := max(full.EntryBytes, other.EntryBytes)
	for _, s := range []*SubPool{&u.Full, &u.Other} {
		s.MaxSlots = u.TotalBytes / s.EntryBytes
		s.MinSlotIndex = (entryMax + s.EntryBytes - 1) / s.EntryBytes
		if s.MaxSlots <= s.MinSlotIndex {
			return u, fmt.Errorf("%w: UnifiedKVPool: sub-pool '%s' fits only %d slots in %d bytes, but min_slot_index=%d leaves no room for real data. Increase total_bytes.",
				ErrNoMemory, s.Name, s.MaxSlots, u.TotalBytes, s.MinSlotIndex)
		}
	}
	return u, nil
}

// FullTokensWith is how many full-attention token slots the buffer has
// left when n slots of the other sub-pool are in use: (total − n·other
// entry) // full entry. The two trade at other entry / full entry tokens
// per slot; at n = Other.Sized it gives Full.Sized back.
func (u Unified) FullTokensWith(n int64) int64 {
	if u.Full.EntryBytes <= 0 {
		return 0
	}
	return max(u.TotalBytes-n*u.Other.EntryBytes, 0) / u.Full.EntryBytes
}

// OtherSlotsWith is how many slots of the other sub-pool the buffer has
// left when t full-attention token slots are in use.
func (u Unified) OtherSlotsWith(t int64) int64 {
	if u.Other.EntryBytes <= 0 {
		return 0
	}
	return max(u.TotalBytes-t*u.Full.EntryBytes, 0) / u.Other.EntryBytes
}

// TokensPerSlot is how many full-attention tokens one slot of the other
// sub-pool displaces: other entry / full entry.
func (u Unified) TokensPerSlot() float64 {
	if u.Full.EntryBytes <= 0 {
		return 0
	}
	return float64(u.Other.EntryBytes) / float64(u.Full.EntryBytes)
}
