package pool

import (
	"fmt"
)

// ReqToTokenPool is SGLang's request-to-token table: one int32 row of token
// locations per request slot. Row 0 is the padding row of CUDA-graph padded
// batches and is never handed out; slots are 1..Size, reused FIFO.
//
// A ReqToTokenPool is not safe for concurrent use.
type ReqToTokenPool struct {
	width int
	table []int32
	slots *PagedAllocator
}

// NewReqToTokenPool returns a table of size request slots of width tokens
// (context length plus the extra of docs/sglang.md#request-table-width).
func NewReqToTokenPool(size, width int) (*ReqToTokenPool, error) {
	if size < 0 || width <= 0 || size >= maxRows || (float64(size)+1)*float64(width)*4 > maxHostBytes {
		return nil, fmt.Errorf("%w: request table %d slots x %d tokens", ErrConfig, size, width)
	}
	slots, err := NewAllocator(AllocatorConfig{Size: size, PageSize: 1, Name: "request slots"})
	if err != nil {
		return nil, err
	}
	return &ReqToTokenPool{width: width, table: make([]int32, (size+1)*width), slots: slots}, nil
}

// Size is the number of request slots.
func (r *ReqToTokenPool) Size() int { return r.slots.Size() }

// Width is the row width in tokens.
func (r *ReqToTokenPool) Width() int { return r.width }

// Available is the number of free request slots.
func (r *ReqToTokenPool) Available() int { return r.slots.Available() }

// Bytes is the table's memory (rows × width × 4; row 0 included).
func (r *ReqToTokenPool) Bytes() int64 { return int64(len(r.table)) * 4 }

// Alloc takes n request slots (the first n free), appended to dst. It fails
// with an *OutOfMemoryError (unit "slots") when fewer are free.
func (r *ReqToTokenPool) Alloc(dst []int32, n int) ([]int32, error) {
	if n < 0 {
		return dst, fmt.Errorf("%w: alloc of %d request slots", ErrInvalid, n)
	}
	if n > r.slots.Available() {
		r.slots.stats.FailedAllocs++
		return dst, oom("request slots", "slots", n, r.slots.Available())
	}
	return r.slots.Alloc(dst, n)
}

// Free releases request slots; their rows keep stale content.
func (r *ReqToTokenPool) Free(slots ...int32) error { return r.slots.Free(slots) }

// Clear frees every slot.
func (r *ReqToTokenPool) Clear() { r.slots.Clear() }

// Stats returns the slot allocator's counters (in slots).
func (r *ReqToTokenPool) Stats() Stats { return r.slots.Stats() }

// Row returns the row of a live slot (a view into the table).
func (r *ReqToTokenPool) Row(slot int32) ([]int32, error) {
	if !r.slots.usedLoc(slot) {
		return nil, fmt.Errorf("%w: request slot %d is not allocated", ErrBadLocation, slot)
	}
	i := int(slot) * r.width
	return r.table[i : i+r.width : i+r.width], nil
}

// Write stores token locations for positions start.. of a live slot.
func (r *ReqToTokenPool) Write(slot int32, start int, locs []int32) error {
	row, err := r.Row(slot)
	if err != nil {
		return err
	}
	if start < 0 || start+len(locs) > len(row) {
		return fmt.Errorf("%w: write of positions %d..%d past row width %d", ErrInvalid, start, start+len(locs), len(row))
	}
	copy(row[start:], locs)
	return nil
}

// LastLoc is the location of token prefixLen-1 of a slot, or -1 when
// prefixLen is 0 (the last_loc alloc_extend takes).
func (r *ReqToTokenPool) LastLoc(slot int32, prefixLen int) (int32, error) {
	if prefixLen == 0 {
		return -1, nil
	}
	row, err := r.Row(slot)
	if err != nil {
		return 0, err
	}
	if prefixLen < 0 || prefixLen > len(row) {
		return 0, fmt.Errorf("%w: prefix length %d outside row width %d", ErrInvalid, prefixLen, len(row))
	}
	return row[prefixLen-1], nil
}
