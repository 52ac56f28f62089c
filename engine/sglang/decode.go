package sglang

import "fmt"

// Mamba radix-cache strategies (--mamba-radix-cache-strategy, named
// --mamba-scheduler-strategy before).
const (
	MambaNoBuffer        = "no_buffer"
	MambaExtraBuffer     = "extra_buffer"
	MambaExtraBufferLazy = "extra_buffer_lazy"
)

// The Mamba state slots one running request holds (kv_cache_configurator.py
// @ 003fca8, module constants): a base of 3, one less under
// SGLANG_OPT_MAMBA_SKIP_DECODE_LOCK, plus the extra buffer's ping-pong
// slots (2 with the overlap scheduler, 1 lazily, 1 without it; 1 with no
// buffer under the skip-lock env).
const (
	mambaBaseRatio         = 3
	mambaSkipLockDrop      = 1
	mambaExtraOverlap      = 2
	mambaExtraOverlapLazy  = 1
	mambaExtraNoOverlap    = 1
	mambaNoBufferSkipExtra = 1
)

// mambaSlotRatio is _calculate_mamba_ratio: 1 without the radix cache; else
// the base and the buffer's slots. The lazy buffer and the skip-lock env
// are the newest SGLang's (latest profile); before, lazy counts as the
// extra buffer and the env is ignored.
func (c *Configurator) mambaSlotRatio() int {
	a, d := &c.in.Args, &c.d
	if d.DisableRadixCache {
		return 1
	}
	newest := c.prof.mambaSlotOpts
	skip := newest && a.MambaSkipDecodeLock
	r := mambaBaseRatio
	if skip {
		r -= mambaSkipLockDrop
	}
	overlap := !a.DisableOverlapSchedule
	switch c.mambaStrategy() {
	case MambaExtraBufferLazy:
		if newest && overlap {
			return r + mambaExtraOverlapLazy
		}
		fallthrough
	case MambaExtraBuffer:
		if overlap {
			return r + mambaExtraOverlap
		}
		return r + mambaExtraNoOverlap
	}
	if skip {
		r += mambaNoBufferSkipExtra
	}
	return r
}

// mambaStrategy is the radix-cache strategy asked for, no_buffer when none.
func (c *Configurator) mambaStrategy() string {
	if s := c.in.Args.MambaRadixCacheStrategy; s != "" {
		return s
	}
	return MambaNoBuffer
}

// checkMambaStrategy validates the strategy (SGLang asserts that the lazy
// extra buffer has the overlap scheduler).
func (a *ServerArgs) checkMambaStrategy() error {
	switch a.MambaRadixCacheStrategy {
	case "", MambaNoBuffer, MambaExtraBuffer:
	case MambaExtraBufferLazy:
		if a.DisableOverlapSchedule {
			return fmt.Errorf("%w: Lazy extra buffer requires overlap schedule (--disable-overlap-schedule is incompatible)", ErrInvalid)
		}
	default:
		return fmt.Errorf("%w: mamba radix cache strategy %q (accepted: no_buffer, extra_buffer, extra_buffer_lazy)", ErrInvalid, a.MambaRadixCacheStrategy)
	}
	return nil
}

// DecodeReservation is what the newest SGLang reserves per running request
// for decoding (mem_cache/allocation_sizing.py @ 027bddf).
type DecodeReservation struct {
	// AllocLen is alloc_len_per_decode: 1 without speculation; with it
	// max(steps·topk, draft tokens), or, with page > 1 and topk > 1,
	// max(ceil((2·page − 2 + steps)/page)·page·topk, draft tokens).
	AllocLen int `json:"alloc_len_per_decode"`
	// Reserve is 2 × AllocLen (the overlap scheduler's double buffer).
	Reserve int `json:"alloc_reserve_per_decode"`
	// ReqToTokenExtra is the request-to-token row headroom: 4 + draft
	// tokens, or max(that, Reserve + page − 1) with speculation and
	// page > 1.
	ReqToTokenExtra int `json:"req_to_token_extra"`
}

// DecodeReservationFor computes the reservation for a page size and, with
// speculative decoding (spec), its steps, top-k and draft tokens.
func DecodeReservationFor(page int, spec bool, steps, topk, draftTokens int) DecodeReservation {
	page, topk = max(page, 1), max(topk, 1)
	r := DecodeReservation{AllocLen: 1, ReqToTokenExtra: 4 + max(draftTokens, 0)}
	if spec {
		r.AllocLen = max(steps*topk, draftTokens)
		if page > 1 && topk > 1 {
			r.AllocLen = max((2*page-2+steps+page-1)/page*page*topk, draftTokens)
		}
	}
	r.Reserve = 2 * r.AllocLen
	if spec && page > 1 {
		r.ReqToTokenExtra = max(r.ReqToTokenExtra, r.Reserve+page-1)
	}
	return r
}
