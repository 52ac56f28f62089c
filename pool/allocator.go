package pool

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
)

// Allocator hands out KV token slots (locations: rows of the KV buffers).
// It is the Go counterpart of SGLang's token-to-KV-pool allocators. Every
// method that can fail returns an error value and leaves the allocator
// unchanged on failure; none panics on bad input.
//
// Methods that return locations append them to dst and return the extended
// slice, so a caller that reuses dst allocates nothing.
type Allocator interface {
	// PageSize is the number of token slots per page (1 for a token allocator).
	PageSize() int
	// Size is the number of usable token slots (page 0 excluded).
	Size() int
	// Available is the number of free token slots.
	Available() int
	// Alloc allocates n token slots; n must be a multiple of PageSize.
	Alloc(dst []int32, n int) ([]int32, error)
	// AllocExtend allocates the new tokens of a prefill batch: for each
	// request the slots of positions PrefixLen..SeqLen-1, continuing the
	// request's partially filled last page first.
	AllocExtend(dst []int32, reqs []Extend) ([]int32, error)
	// AllocDecode allocates one token per request (position SeqLen-1).
	AllocDecode(dst []int32, reqs []Decode) ([]int32, error)
	// Free releases token slots. A paged allocator releases the whole
	// pages the slots lie on.
	Free(locs []int32) error
	// FreeGroupBegin starts batching frees; FreeGroupEnd releases them as
	// one Free.
	FreeGroupBegin()
	// FreeGroupEnd releases the frees batched since FreeGroupBegin.
	FreeGroupEnd() error
	// Clear frees everything and restores the initial free order.
	Clear()
	// Resize changes the usable size (at most the size the allocator was
	// built with) without losing a live allocation: it fails with
	// ErrLiveOutside when a live slot lies beyond the new size.
	Resize(size int) error
	// Stats returns a snapshot of the counters.
	Stats() Stats
}

// Extend is one request of an AllocExtend batch. The allocator checks that
// LastLoc is an allocated slot aligned with PrefixLen, but it does not track
// which request owns a page: requests in one batch must be distinct and
// LastLoc must be the request's own last slot, as in the engine.
type Extend struct {
	// PrefixLen is the number of tokens the request already has slots for.
	PrefixLen int `json:"prefix_len"`
	// SeqLen is the request's length after the extend (SeqLen >= PrefixLen).
	SeqLen int `json:"seq_len"`
	// LastLoc is the slot of token PrefixLen-1 (ignored when PrefixLen is 0;
	// SGLang passes -1). A paged allocator requires
	// (LastLoc+1) % PageSize == PrefixLen % PageSize.
	LastLoc int32 `json:"last_loc"`
}

// Decode is one request of an AllocDecode batch: the request grows from
// SeqLen-1 to SeqLen tokens.
type Decode struct {
	// SeqLen is the request's length including the new token (>= 1).
	SeqLen int `json:"seq_len"`
	// LastLoc is the slot of token SeqLen-2 (ignored when SeqLen is 1).
	LastLoc int32 `json:"last_loc"`
}

// Stats is a snapshot of an allocator's counters.
type Stats struct {
	// PageSize is the number of token slots per page.
	PageSize int `json:"page_size"`
	// SizeTokens is the usable size in tokens.
	SizeTokens int `json:"size_tokens"`
	// AvailableTokens is the free size in tokens.
	AvailableTokens int `json:"available_tokens"`
	// UsedTokens is SizeTokens - AvailableTokens.
	UsedTokens int `json:"used_tokens"`
	// PeakUsedTokens is the largest UsedTokens seen since the last Clear.
	PeakUsedTokens int `json:"peak_used_tokens"`
	// Allocs counts successful allocation calls.
	Allocs int64 `json:"allocs"`
	// FailedAllocs counts allocation calls that returned an error.
	FailedAllocs int64 `json:"failed_allocs"`
	// Frees counts Free calls that released something.
	Frees int64 `json:"frees"`
}

// AllocatorConfig configures a TokenAllocator or PagedAllocator.
type AllocatorConfig struct {
	// Size is the usable size in tokens (max_total_num_tokens). A paged
	// allocator uses Size/PageSize whole pages.
	Size int `json:"size"`
	// PageSize is the page size in tokens; 0 or 1 means a token allocator.
	PageSize int `json:"page_size"`
	// NeedSort reproduces SGLang's disaggregation mode: freed pages wait in
	// a release list and are merged (sorted) into the free list only when an
	// allocation would otherwise fail.
	NeedSort bool `json:"need_sort,omitempty"`
	// Name names the allocator in errors ("" means "token allocator").
	Name string `json:"name,omitempty"`
	// Events, when set, receives BlockStored/BlockRemoved/AllBlocksCleared
	// events for pages registered with Store.
	Events EventSink `json:"-"`
	// EventMeta fills the locality fields of the events.
	EventMeta EventMeta `json:"event_meta,omitzero"`
}

// Validate reports every problem with the config.
func (c AllocatorConfig) Validate() error {
	var errs []error
	p := c.PageSize
	if p == 0 {
		p = 1
	}
	if p < 0 {
		errs = append(errs, fmt.Errorf("%w: page size %d is negative", ErrConfig, c.PageSize))
	}
	if c.Size < 0 {
		errs = append(errs, fmt.Errorf("%w: size %d is negative", ErrConfig, c.Size))
	}
	if p > 0 && c.Size >= 0 && (int64(c.Size)/int64(p)+1)*int64(p) > maxRows {
		errs = append(errs, fmt.Errorf("%w: size %d with page size %d exceeds %d rows (int32 locations)", ErrConfig, c.Size, p, maxRows))
	}
	return errors.Join(errs...)
}

// maxRows bounds the number of rows so that every location fits an int32.
const maxRows = 1<<31 - 1

// page states
const (
	pageFree  uint8 = 0
	pageUsed  uint8 = 1
	pageMark  uint8 = 2 // being freed by the current call
	pageSpare uint8 = 3 // beyond the current (resized) size
)

// PagedAllocator is SGLang's PagedTokenToKVPoolAllocator (page size P > 1)
// and, with page size 1, its TokenToKVPoolAllocator. Page 0 (token slots
// 0..P-1) is reserved as the padding page and never handed out; usable slots
// are P .. (Size/P+1)*P-1, matching KV buffers of Size+P rows.
//
// Reuse order follows the engine so that traces compare: with page size 1
// freed slots are appended to the back of the free list (FIFO); with P > 1
// freed pages are put at the front, lowest page first (LIFO). Allocation
// always takes from the front.
//
// A PagedAllocator is not safe for concurrent use: like SGLang's, it is owned
// by one scheduler goroutine. Wrap it in a Locked for shared use.
type PagedAllocator struct {
	name     string
	p        int
	shift    int // log2(p) when p is a power of two, else -1
	capPages int // pages the allocator was built with
	numPages int // current usable pages (<= capPages)
	needSort bool

	// free is a ring deque of free pages; the front is the next to allocate.
	ring []int32
	head int
	n    int

	release []int32 // need_sort: freed pages waiting for a merge
	state   []uint8 // per page 0..capPages
	scratch []int32 // unique pages of the current Free
	group   []int32 // batched frees
	inGroup bool
	newPg   []int32 // pages taken by the current extend/decode

	stats Stats
	ev    *eventState
}

// NewTokenAllocator returns an allocator with page size 1 (FIFO reuse).
func NewTokenAllocator(size int) (*PagedAllocator, error) {
	return NewAllocator(AllocatorConfig{Size: size, PageSize: 1})
}

// NewPagedAllocator returns an allocator of size tokens in pages of pageSize.
func NewPagedAllocator(size, pageSize int) (*PagedAllocator, error) {
	return NewAllocator(AllocatorConfig{Size: size, PageSize: pageSize})
}

// NewAllocator returns the allocator cfg describes.
func NewAllocator(cfg AllocatorConfig) (*PagedAllocator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := max(cfg.PageSize, 1)
	a := &PagedAllocator{
		name:     cfg.Name,
		p:        p,
		capPages: cfg.Size / p,
		needSort: cfg.NeedSort,
	}
	if a.name == "" {
		a.name = "token allocator"
	}
	a.shift = -1
	if p&(p-1) == 0 {
		a.shift = bits.TrailingZeros(uint(p))
	}
	a.numPages = a.capPages
	a.ring = make([]int32, a.capPages)
	a.state = make([]uint8, a.capPages+1)
	a.Clear()
	if cfg.Events != nil {
		a.ev = newEventState(cfg.Events, cfg.EventMeta, a.capPages, p)
	}
	return a, nil
}

// PageSize implements Allocator.
func (a *PagedAllocator) PageSize() int { return a.p }

// Size implements Allocator.
func (a *PagedAllocator) Size() int { return a.numPages * a.p }

// Rows is the number of KV buffer rows the allocator's locations address:
// the built size plus the padding page.
func (a *PagedAllocator) Rows() int { return (a.capPages + 1) * a.p }

// Available implements Allocator.
func (a *PagedAllocator) Available() int { return (a.n + len(a.release)) * a.p }

// AvailablePages is the number of free pages.
func (a *PagedAllocator) AvailablePages() int { return a.n + len(a.release) }

// Clear implements Allocator. It restores the free order [1..pages].
func (a *PagedAllocator) Clear() {
	a.head, a.n = 0, 0
	a.release = a.release[:0]
	a.group = a.group[:0]
	a.inGroup = false
	for pg := 1; pg <= a.capPages; pg++ {
		if pg <= a.numPages {
			a.state[pg] = pageFree
			a.ring[a.n] = int32(pg)
			a.n++
		} else {
			a.state[pg] = pageSpare
		}
	}
	a.stats.PeakUsedTokens = 0
	if a.ev != nil {
		a.ev.clear()
	}
	a.verify()
}

func (a *PagedAllocator) popFront() int32 {
	v := a.ring[a.head]
	a.head++
	if a.head == len(a.ring) {
		a.head = 0
	}
	a.n--
	return v
}

func (a *PagedAllocator) pushFront(v int32) {
	a.head--
	if a.head < 0 {
		a.head = len(a.ring) - 1
	}
	a.ring[a.head] = v
	a.n++
}

func (a *PagedAllocator) pushBack(v int32) {
	i := a.head + a.n
	if i >= len(a.ring) {
		i -= len(a.ring)
	}
	a.ring[i] = v
	a.n++
}

// takeFront moves the first len(out) free pages (page size 1: slots) of
// the ring to out, in order, and marks them used.
func (a *PagedAllocator) takeFront(out []int32) {
	k := len(out)
	n := copy(out, a.ring[a.head:min(a.head+k, len(a.ring))])
	copy(out[n:], a.ring[:k-n])
	a.head += k
	if a.head >= len(a.ring) {
		a.head -= len(a.ring)
	}
	a.n -= k
	for _, pg := range out {
		a.state[pg] = pageUsed
	}
}

// putBack appends pages to the back of the ring, in order.
func (a *PagedAllocator) putBack(pages []int32) {
	i := a.head + a.n
	if i >= len(a.ring) {
		i -= len(a.ring)
	}
	n := copy(a.ring[i:], pages)
	copy(a.ring, pages[n:])
	a.n += len(pages)
}

// mergeAndSort is SGLang's merge_and_sort_free: free = sort(free ∪ release).
func (a *PagedAllocator) mergeAndSort() {
	if len(a.release) == 0 {
		return
	}
	all := a.scratch[:0]
	for a.n > 0 {
		all = append(all, a.popFront())
	}
	all = append(all, a.release...)
	slices.Sort(all)
	a.head = 0
	for _, v := range all {
		a.pushBack(v)
	}
	a.release = a.release[:0]
	a.scratch = all[:0]
}

// ensure merges the release list into the free list when need_sort is on
// and demand exceeds the free list, with SGLang's triggers: alloc and
// alloc_decode compare pages (decode: the batch size), alloc_extend compares
// extend_tokens/P + batch + 1 (page size 1: the token count).
func (a *PagedAllocator) ensure(demand int) {
	if a.needSort && demand > a.n {
		a.mergeAndSort()
	}
}

func (a *PagedAllocator) extendDemand(tokens, bs int) int {
	if a.p == 1 {
		return tokens
	}
	return tokens/a.p + bs + 1
}

func (a *PagedAllocator) fail(needTokens int) error {
	a.stats.FailedAllocs++
	return oom(a.name, "tokens", needTokens, a.Available())
}

func (a *PagedAllocator) took() {
	a.stats.Allocs++
	if u := a.Size() - a.Available(); u > a.stats.PeakUsedTokens {
		a.stats.PeakUsedTokens = u
	}
}

// Alloc implements Allocator: the first n/P free pages, each as P
// consecutive slots.
func (a *PagedAllocator) Alloc(dst []int32, n int) ([]int32, error) {
	if n < 0 || n%a.p != 0 {
		a.stats.FailedAllocs++
		return dst, fmt.Errorf("%w: alloc of %d tokens is not a whole number of %d-token pages", ErrInvalid, n, a.p)
	}
	k := n / a.p
	a.ensure(k)
	if k > a.n {
		return dst, a.fail(n)
	}
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	out := dst[start:]
	if a.p == 1 {
		a.takeFront(out)
		a.took()
		a.verify()
		return dst, nil
	}
	for i := range k {
		pg := a.popFront()
		a.state[pg] = pageUsed
		base := pg * int32(a.p)
		o := out[i*a.p : (i+1)*a.p]
		for j := range o {
			o[j] = base + int32(j)
		}
	}
	a.took()
	a.verify()
	return dst, nil
}

func ceilDiv(x, p int) int { return (x + p - 1) / p }

// pageOf returns the page of a non-negative slot.
func (a *PagedAllocator) pageOf(loc int32) int {
	if a.shift >= 0 {
		return int(loc) >> a.shift
	}
	return int(loc) / a.p
}

// usedLoc reports whether loc is an allocated slot.
func (a *PagedAllocator) usedLoc(loc int32) bool {
	if loc < 0 {
		return false
	}
	pg := a.pageOf(loc)
	return pg >= 1 && pg <= a.capPages && a.state[pg] == pageUsed
}

// checkExtend validates an extend batch and returns its new pages and tokens.
func (a *PagedAllocator) checkExtend(reqs []Extend) (pages, tokens int, err error) {
	for i, r := range reqs {
		if r.PrefixLen < 0 || r.SeqLen < r.PrefixLen {
			return 0, 0, fmt.Errorf("%w: request %d: prefix %d, seq %d (need 0 <= prefix <= seq)", ErrInvalid, i, r.PrefixLen, r.SeqLen)
		}
		if r.SeqLen > maxRows {
			return 0, 0, fmt.Errorf("%w: request %d: seq %d too long", ErrInvalid, i, r.SeqLen)
		}
		if a.p > 1 && r.PrefixLen%a.p != 0 {
			if !a.usedLoc(r.LastLoc) {
				return 0, 0, fmt.Errorf("%w: request %d: last loc %d is not an allocated slot", ErrBadLocation, i, r.LastLoc)
			}
			if (int(r.LastLoc)+1)%a.p != r.PrefixLen%a.p {
				return 0, 0, fmt.Errorf("%w: request %d: (last loc %d + 1) %% %d != prefix %d %% %d", ErrInvalid, i, r.LastLoc, a.p, r.PrefixLen, a.p)
			}
		}
		pages += ceilDiv(r.SeqLen, a.p) - ceilDiv(r.PrefixLen, a.p)
		tokens += r.SeqLen - r.PrefixLen
	}
	return pages, tokens, nil
}

// AllocExtend implements Allocator with SGLang's alloc_extend layout: for a
// request with prefix p and new length s, first the rest of the partially
// filled page (slots LastLoc+1...), then whole new pages, then the start of
// one more page for the tail; new pages are taken from the front of the free
// list in request order. The returned slots are the new tokens of each
// request in order (SeqLen-PrefixLen per request).
func (a *PagedAllocator) AllocExtend(dst []int32, reqs []Extend) ([]int32, error) {
	pages, tokens, err := a.checkExtend(reqs)
	if err != nil {
		a.stats.FailedAllocs++
		return dst, err
	}
	a.ensure(a.extendDemand(tokens, len(reqs)))
	if pages > a.n {
		return dst, a.fail(pages * a.p)
	}
	start := len(dst)
	dst = slices.Grow(dst, tokens)[:start+tokens]
	out := dst[start:]
	if a.p == 1 { // every token takes the next free slot
		a.takeFront(out)
		a.took()
		a.verify()
		return dst, nil
	}
	p, o := a.p, 0
	for _, r := range reqs {
		first := ceilDiv(r.PrefixLen, p) * p // first position on a new page
		pos := r.PrefixLen
		for ; pos < r.SeqLen && pos < first; pos++ {
			out[o] = r.LastLoc + 1 + int32(pos-r.PrefixLen)
			o++
		}
		for pos < r.SeqLen {
			pg := a.popFront()
			a.state[pg] = pageUsed
			base := pg * int32(p)
			n := min(r.SeqLen-pos, p)
			page := out[o : o+n]
			for j := range page {
				page[j] = base + int32(j)
			}
			o += n
			pos += n
		}
	}
	a.took()
	a.verify()
	return dst, nil
}

// AllocDecode implements Allocator: a request needs a new page iff its new
// token starts one (ceil(s/P) > ceil((s-1)/P)); otherwise its slot is
// LastLoc+1.
func (a *PagedAllocator) AllocDecode(dst []int32, reqs []Decode) ([]int32, error) {
	pages := 0
	for i, r := range reqs {
		if r.SeqLen < 1 || r.SeqLen > maxRows {
			a.stats.FailedAllocs++
			return dst, fmt.Errorf("%w: request %d: decode seq len %d (need >= 1)", ErrInvalid, i, r.SeqLen)
		}
		if (r.SeqLen-1)%a.p == 0 {
			pages++
			continue
		}
		if !a.usedLoc(r.LastLoc) || (int(r.LastLoc)+1)%a.p != (r.SeqLen-1)%a.p {
			a.stats.FailedAllocs++
			return dst, fmt.Errorf("%w: request %d: last loc %d does not end token %d of an allocated page", ErrBadLocation, i, r.LastLoc, r.SeqLen-2)
		}
	}
	a.ensure(len(reqs))
	if pages > a.n {
		return dst, a.fail(pages * a.p)
	}
	if a.p == 1 { // every request takes the next free slot
		start := len(dst)
		dst = slices.Grow(dst, len(reqs))[:start+len(reqs)]
		a.takeFront(dst[start:])
		a.took()
		a.verify()
		return dst, nil
	}
	dst = slices.Grow(dst, len(reqs))
	for _, r := range reqs {
		if (r.SeqLen-1)%a.p == 0 {
			pg := a.popFront()
			a.state[pg] = pageUsed
			dst = append(dst, pg*int32(a.p))
		} else {
			dst = append(dst, r.LastLoc+1)
		}
	}
	a.took()
	a.verify()
	return dst, nil
}

// Free implements Allocator. Every slot must be allocated; a slot that is
// not (a double free, a slot of page 0 or beyond the pool) fails the whole
// call with ErrBadLocation and frees nothing. Within one call several slots
// of the same page are fine (the page is released once).
func (a *PagedAllocator) Free(locs []int32) error {
	if len(locs) == 0 {
		return nil
	}
	if a.inGroup {
		for _, l := range locs {
			if !a.usedLoc(l) {
				return fmt.Errorf("%w: free of slot %d, which is not allocated", ErrBadLocation, l)
			}
		}
		a.group = append(a.group, locs...)
		return nil
	}
	if a.p == 1 && !a.needSort && a.ev == nil && a.freeTokens(locs) {
		return nil
	}
	return a.free(locs)
}

// freeTokens is free for page size 1 without need_sort or events: slots
// are pages, appended to the back in the given order. It frees nothing and
// returns false when a slot is not allocated (free then says why).
func (a *PagedAllocator) freeTokens(locs []int32) bool {
	for i, l := range locs {
		// A slot seen twice is free the second time: the check fails
		// and every slot before it was in use.
		if l < 1 || int(l) > a.capPages || a.state[l] != pageUsed {
			for _, m := range locs[:i] {
				a.state[m] = pageUsed
			}
			return false
		}
		a.state[l] = pageFree
	}
	a.putBack(locs)
	a.stats.Frees++
	a.verify()
	return true
}

func (a *PagedAllocator) free(locs []int32) error {
	pages := a.scratch[:0]
	last := -1
	for _, l := range locs {
		if l < 0 {
			a.unmark(pages)
			return fmt.Errorf("%w: free of negative slot %d", ErrBadLocation, l)
		}
		pg := a.pageOf(l)
		if pg == last && a.p > 1 {
			continue // another slot of the page just marked
		}
		last = pg
		if pg < 1 || pg > a.capPages {
			a.unmark(pages)
			return fmt.Errorf("%w: free of slot %d outside the pool (slots %d..%d)", ErrBadLocation, l, a.p, a.Rows()-1)
		}
		switch a.state[pg] {
		case pageUsed:
			a.state[pg] = pageMark
			pages = append(pages, int32(pg))
		case pageMark:
			if a.p == 1 {
				a.unmark(pages)
				return fmt.Errorf("%w: slot %d freed twice in one call", ErrBadLocation, l)
			}
		default:
			a.unmark(pages)
			return fmt.Errorf("%w: free of slot %d, which is not allocated (double free?)", ErrBadLocation, l)
		}
	}
	a.scratch = pages[:0]
	if a.ev != nil {
		a.ev.removed(pages)
	}
	for _, pg := range pages {
		a.state[pg] = pageFree
	}
	switch {
	case a.p == 1 && !a.needSort:
		for _, pg := range pages { // FIFO: append in the given order
			a.pushBack(pg)
		}
	case a.p == 1:
		a.release = append(a.release, pages...)
	default:
		if !slices.IsSorted(pages) {
			slices.Sort(pages) // torch.unique returns sorted pages
		}
		if a.needSort {
			a.release = append(a.release, pages...)
		} else {
			for i := len(pages) - 1; i >= 0; i-- { // prepend, lowest first
				a.pushFront(pages[i])
			}
		}
	}
	a.stats.Frees++
	a.verify()
	return nil
}

func (a *PagedAllocator) unmark(pages []int32) {
	for _, pg := range pages {
		a.state[pg] = pageUsed
	}
	a.scratch = pages[:0]
}

// FreeGroupBegin implements Allocator.
func (a *PagedAllocator) FreeGroupBegin() {
	a.inGroup = true
	a.group = a.group[:0]
}

// FreeGroupEnd implements Allocator.
func (a *PagedAllocator) FreeGroupEnd() error {
	a.inGroup = false
	err := a.free(a.group)
	a.group = a.group[:0]
	return err
}

// Resize implements Allocator: the post-capture shrink (docs/sglang.md#post-capture-resize) that keeps
// live allocations. size is rounded down to whole pages and may not exceed
// the size the allocator was built with. Free pages beyond the new size are
// dropped from the free list (the order of the others is kept); pages that
// come back into range are appended to its back.
func (a *PagedAllocator) Resize(size int) error {
	if err := a.checkResize(size); err != nil {
		return err
	}
	a.resize(size)
	return nil
}

func (a *PagedAllocator) checkResize(size int) error {
	if size < 0 || size/a.p > a.capPages {
		return fmt.Errorf("%w: resize to %d tokens (built with %d)", ErrConfig, size, a.capPages*a.p)
	}
	np := size / a.p
	live := 0
	for pg := np + 1; pg <= a.numPages; pg++ {
		if s := a.state[pg]; s == pageUsed || s == pageMark {
			live++
		}
	}
	if live > 0 {
		return fmt.Errorf("%w: %d live pages above page %d (resize to %d tokens)", ErrLiveOutside, live, np, size)
	}
	if a.inGroup {
		return fmt.Errorf("%w: resize inside a free group", ErrInvalid)
	}
	return nil
}

func (a *PagedAllocator) resize(size int) {
	np := size / a.p
	keep := a.scratch[:0]
	for a.n > 0 {
		if pg := a.popFront(); int(pg) <= np {
			keep = append(keep, pg)
		}
	}
	a.head = 0
	for _, pg := range keep {
		a.pushBack(pg)
	}
	a.release = slices.DeleteFunc(a.release, func(pg int32) bool { return int(pg) > np })
	for pg := a.numPages + 1; pg <= np; pg++ {
		a.state[pg] = pageFree
		a.pushBack(int32(pg))
	}
	for pg := np + 1; pg <= a.numPages; pg++ {
		a.state[pg] = pageSpare
	}
	a.numPages = np
	a.scratch = keep[:0]
	a.verify()
}

// Stats implements Allocator.
func (a *PagedAllocator) Stats() Stats {
	s := a.stats
	s.PageSize = a.p
	s.SizeTokens = a.Size()
	s.AvailableTokens = a.Available()
	s.UsedTokens = s.SizeTokens - s.AvailableTokens
	return s
}

// FreePages returns the free list in allocation order (front first), then
// the release list; for tests and traces.
func (a *PagedAllocator) FreePages() []int32 {
	out := make([]int32, 0, a.n+len(a.release))
	for i := range a.n {
		j := a.head + i
		if j >= len(a.ring) {
			j -= len(a.ring)
		}
		out = append(out, a.ring[j])
	}
	return append(out, a.release...)
}

// NumNewPages is SGLang's get_num_new_pages for an extend batch: the sum of
// ceil(SeqLen/P) - ceil(PrefixLen/P).
func NumNewPages(reqs []Extend, pageSize int) int {
	p := max(pageSize, 1)
	n := 0
	for _, r := range reqs {
		n += ceilDiv(r.SeqLen, p) - ceilDiv(r.PrefixLen, p)
	}
	return n
}

// Snapshot is a saved allocator state (SGLang's backup_state).
type Snapshot struct {
	free, release []int32
	state         []uint8
	numPages      int
}

// Backup saves the free lists and page states, for Restore; speculative
// decoding uses it to roll back a tentative allocation.
func (a *PagedAllocator) Backup() *Snapshot {
	return &Snapshot{free: a.FreePages()[:a.n], release: slices.Clone(a.release), state: slices.Clone(a.state), numPages: a.numPages}
}

// Restore returns the allocator to a Backup of itself (restore_state):
// slots allocated since are free again and slots freed since are allocated
// again. Events already emitted are not undone. A snapshot of another
// allocator (other page count) is an ErrInvalid.
func (a *PagedAllocator) Restore(s *Snapshot) error {
	if s == nil || len(s.state) != len(a.state) {
		return fmt.Errorf("%w: snapshot of another allocator", ErrInvalid)
	}
	copy(a.state, s.state)
	a.numPages = s.numPages
	a.head, a.n = 0, 0
	for _, pg := range s.free {
		a.pushBack(pg)
	}
	a.release = append(a.release[:0], s.release...)
	a.inGroup, a.group = false, a.group[:0]
	a.verify()
	return nil
}
