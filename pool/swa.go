package pool

import (
	"errors"
	"fmt"

	"github.com/kvcfg/kvcfg/prefix"
)

// SWAConfig configures a SWAAllocator.
type SWAConfig struct {
	// FullSize is the full-attention pool size in tokens
	// (full_max_total_num_tokens).
	FullSize int `json:"full_size"`
	// SWASize is the sliding-window pool size in tokens
	// (swa_max_total_num_tokens).
	SWASize int `json:"swa_size"`
	// PageSize is shared by both pools (0 or 1: token granular).
	PageSize int `json:"page_size"`
	// NeedSort is AllocatorConfig.NeedSort for both pools.
	NeedSort bool `json:"need_sort,omitempty"`
	// FullEvents and SWAEvents receive the events of each pool (nil: none).
	FullEvents EventSink `json:"-"`
	SWAEvents  EventSink `json:"-"`
	// SlidingWindow is reported in the SWA pool's events.
	SlidingWindow int `json:"sliding_window,omitempty"`
}

// Validate reports every problem with the config.
func (c SWAConfig) Validate() error {
	var errs []error
	if c.FullSize <= 0 {
		errs = append(errs, fmt.Errorf("%w: swa allocator full size %d must be positive (an all-SWA model uses a plain allocator)", ErrConfig, c.FullSize))
	}
	if c.SWASize <= 0 {
		errs = append(errs, fmt.Errorf("%w: swa size %d must be positive", ErrConfig, c.SWASize))
	}
	errs = append(errs, AllocatorConfig{Size: max(c.FullSize, 0), PageSize: c.PageSize}.Validate())
	return errors.Join(errs...)
}

// SWAAllocator is SGLang's SWATokenToKVPoolAllocator: a full-attention pool
// and a sliding-window pool with the same page size. Locations it returns are
// full-pool slots; FullToSWA translates them to SWA-pool slots (the
// full_to_swa_index_mapping). Every allocation takes the same number of
// pages from both pools; Free releases both, FreeSWA only the SWA slots of
// tokens that left the window.
//
// A SWAAllocator is not safe for concurrent use.
type SWAAllocator struct {
	full, swa *PagedAllocator
	p         int
	mapping   []int32 // full slot -> swa slot (0: none)

	swaExt  []Extend
	swaDec  []Decode
	swaLocs []int32
	group   []int32
	inGroup bool
}

// NewSWAAllocator returns the allocator cfg describes.
func NewSWAAllocator(cfg SWAConfig) (*SWAAllocator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	fc := AllocatorConfig{Size: cfg.FullSize, PageSize: cfg.PageSize, NeedSort: cfg.NeedSort, Name: "full pool", Events: cfg.FullEvents}
	sc := AllocatorConfig{Size: cfg.SWASize, PageSize: cfg.PageSize, NeedSort: cfg.NeedSort, Name: "swa pool", Events: cfg.SWAEvents,
		EventMeta: EventMeta{GroupIdx: 1, SpecKind: prefix.SlidingWindow, SlidingWindow: cfg.SlidingWindow}}
	full, err := NewAllocator(fc)
	if err != nil {
		return nil, err
	}
	swa, err := NewAllocator(sc)
	if err != nil {
		return nil, err
	}
	return &SWAAllocator{full: full, swa: swa, p: full.p, mapping: make([]int32, full.Rows())}, nil
}

// Full returns the full-attention pool's allocator (read-only use: stats,
// FreePages; allocating from it directly breaks the mapping).
func (s *SWAAllocator) Full() *PagedAllocator { return s.full }

// SWA returns the sliding-window pool's allocator (read-only use).
func (s *SWAAllocator) SWA() *PagedAllocator { return s.swa }

// PageSize implements Allocator.
func (s *SWAAllocator) PageSize() int { return s.p }

// Size implements Allocator: min(full, swa).
func (s *SWAAllocator) Size() int { return min(s.full.Size(), s.swa.Size()) }

// Available implements Allocator: min(full available, swa available).
func (s *SWAAllocator) Available() int { return min(s.full.Available(), s.swa.Available()) }

// FullAvailable is the free size of the full pool in tokens.
func (s *SWAAllocator) FullAvailable() int { return s.full.Available() }

// SWAAvailable is the free size of the SWA pool in tokens.
func (s *SWAAllocator) SWAAvailable() int { return s.swa.Available() }

// FullToSWA translates full-pool slots to SWA-pool slots, appended to dst:
// -1 stays -1, a slot without a live SWA slot maps to 0 (the padding slot).
func (s *SWAAllocator) FullToSWA(dst, locs []int32) []int32 {
	for _, l := range locs {
		dst = append(dst, s.translate(l))
	}
	return dst
}

func (s *SWAAllocator) translate(l int32) int32 {
	if l < 0 || int(l) >= len(s.mapping) {
		return -1
	}
	return s.mapping[l]
}

func (s *SWAAllocator) oom(needPages int) error {
	s.full.stats.FailedAllocs++
	if s.full.AvailablePages() < needPages {
		return oom("full pool", "tokens", needPages*s.p, s.full.Available())
	}
	return oom("swa pool", "tokens", needPages*s.p, s.swa.Available())
}

func (s *SWAAllocator) setMapping(full, swa []int32) {
	for i, l := range full {
		s.mapping[l] = swa[i]
	}
}

// Alloc implements Allocator: n slots in both pools.
func (s *SWAAllocator) Alloc(dst []int32, n int) ([]int32, error) {
	if n < 0 || n%s.p != 0 {
		return dst, fmt.Errorf("%w: alloc of %d tokens is not a whole number of %d-token pages", ErrInvalid, n, s.p)
	}
	k := n / s.p
	s.full.ensure(k)
	s.swa.ensure(k)
	if k > s.full.n || k > s.swa.n {
		return dst, s.oom(k)
	}
	start := len(dst)
	dst, _ = s.full.Alloc(dst, n)
	s.swaLocs, _ = s.swa.Alloc(s.swaLocs[:0], n)
	s.setMapping(dst[start:], s.swaLocs)
	s.verify()
	return dst, nil
}

// AllocExtend implements Allocator. The requests' LastLoc are full-pool
// slots; the SWA pool continues from their translation.
func (s *SWAAllocator) AllocExtend(dst []int32, reqs []Extend) ([]int32, error) {
	pages, tokens, err := s.full.checkExtend(reqs)
	if err != nil {
		s.full.stats.FailedAllocs++
		return dst, err
	}
	s.swaExt = s.swaExt[:0]
	for _, r := range reqs {
		r.LastLoc = s.translate(r.LastLoc)
		s.swaExt = append(s.swaExt, r)
	}
	if _, _, err := s.swa.checkExtend(s.swaExt); err != nil {
		s.full.stats.FailedAllocs++
		return dst, fmt.Errorf("swa pool: %w", err)
	}
	s.full.ensure(s.full.extendDemand(tokens, len(reqs)))
	s.swa.ensure(s.swa.extendDemand(tokens, len(reqs)))
	if pages > s.full.n || pages > s.swa.n {
		return dst, s.oom(pages)
	}
	start := len(dst)
	dst, _ = s.full.AllocExtend(dst, reqs)
	s.swaLocs, _ = s.swa.AllocExtend(s.swaLocs[:0], s.swaExt)
	s.setMapping(dst[start:], s.swaLocs)
	s.verify()
	return dst, nil
}

// AllocDecode implements Allocator.
func (s *SWAAllocator) AllocDecode(dst []int32, reqs []Decode) ([]int32, error) {
	s.swaDec = s.swaDec[:0]
	pages := 0
	for i, r := range reqs {
		if r.SeqLen < 1 || r.SeqLen > maxRows {
			return dst, fmt.Errorf("%w: request %d: decode seq len %d (need >= 1)", ErrInvalid, i, r.SeqLen)
		}
		if (r.SeqLen-1)%s.p == 0 {
			pages++
		} else if !s.full.usedLoc(r.LastLoc) || !s.swa.usedLoc(s.translate(r.LastLoc)) || (int(r.LastLoc)+1)%s.p != (r.SeqLen-1)%s.p {
			return dst, fmt.Errorf("%w: request %d: last loc %d does not end token %d of an allocated page in both pools", ErrBadLocation, i, r.LastLoc, r.SeqLen-2)
		}
		r.LastLoc = s.translate(r.LastLoc)
		s.swaDec = append(s.swaDec, r)
	}
	s.full.ensure(len(reqs))
	s.swa.ensure(len(reqs))
	if pages > s.full.n || pages > s.swa.n {
		return dst, s.oom(pages)
	}
	start := len(dst)
	dst, _ = s.full.AllocDecode(dst, reqs)
	s.swaLocs, _ = s.swa.AllocDecode(s.swaLocs[:0], s.swaDec)
	s.setMapping(dst[start:], s.swaLocs)
	s.verify()
	return dst, nil
}

// Free implements Allocator: releases the full slots and their SWA slots.
func (s *SWAAllocator) Free(locs []int32) error {
	if len(locs) == 0 {
		return nil
	}
	if s.inGroup {
		for _, l := range locs {
			if !s.full.usedLoc(l) {
				return fmt.Errorf("%w: free of slot %d, which is not allocated", ErrBadLocation, l)
			}
		}
		s.group = append(s.group, locs...)
		return nil
	}
	return s.free(locs)
}

func (s *SWAAllocator) free(locs []int32) error {
	if err := s.full.free(locs); err != nil {
		return err
	}
	return s.freeSWA(locs)
}

// FreeSWA releases only the SWA slots of full-pool slots (tokens that left
// the sliding window); their full slots stay allocated. With page size P > 1
// whole pages are released. Slots without a live SWA slot are skipped, so
// FreeSWA is idempotent. A slot that is not allocated in the full pool is an
// ErrBadLocation.
func (s *SWAAllocator) FreeSWA(locs []int32) error {
	for _, l := range locs {
		if !s.full.usedLoc(l) {
			return fmt.Errorf("%w: free_swa of slot %d, which is not allocated in the full pool", ErrBadLocation, l)
		}
	}
	return s.freeSWA(locs)
}

func (s *SWAAllocator) freeSWA(locs []int32) error {
	out := s.swaLocs[:0]
	if s.p == 1 {
		for _, l := range locs {
			if v := s.mapping[l]; v > 0 {
				out = append(out, v)
				s.mapping[l] = 0
			}
		}
	} else {
		p := int32(s.p)
		for _, l := range locs {
			base := l / p * p
			for j := range p {
				if v := s.mapping[base+j]; v > 0 {
					out = append(out, v)
					s.mapping[base+j] = 0
				}
			}
		}
	}
	s.swaLocs = out[:0]
	if len(out) == 0 {
		return nil
	}
	err := s.swa.free(out)
	s.verify()
	return err
}

// FreeGroupBegin implements Allocator.
func (s *SWAAllocator) FreeGroupBegin() {
	s.inGroup = true
	s.group = s.group[:0]
}

// FreeGroupEnd implements Allocator.
func (s *SWAAllocator) FreeGroupEnd() error {
	s.inGroup = false
	err := s.free(s.group)
	s.group = s.group[:0]
	return err
}

// Clear implements Allocator.
func (s *SWAAllocator) Clear() {
	s.full.Clear()
	s.swa.Clear()
	clear(s.mapping)
	s.inGroup = false
	s.group = s.group[:0]
}

// Resize implements Allocator: it resizes the full pool and keeps the SWA
// pool's size. Use ResizeBoth to change both.
func (s *SWAAllocator) Resize(size int) error { return s.ResizeBoth(size, s.swa.Size()) }

// ResizeBoth resizes the full and SWA pools, or neither: it fails with
// ErrLiveOutside when a live slot of either pool lies beyond its new size.
func (s *SWAAllocator) ResizeBoth(full, swa int) error {
	if err := errors.Join(s.full.checkResize(full), s.swa.checkResize(swa)); err != nil {
		return err
	}
	s.full.resize(full)
	s.swa.resize(swa)
	return nil
}

// Stats implements Allocator with the combined view (Size and Available are
// the minimum of the two pools); Full().Stats() and SWA().Stats() give each.
func (s *SWAAllocator) Stats() Stats {
	st := s.full.Stats()
	st.FailedAllocs += s.swa.stats.FailedAllocs
	st.SizeTokens = s.Size()
	st.AvailableTokens = s.Available()
	st.UsedTokens = st.SizeTokens - st.AvailableTokens
	return st
}
