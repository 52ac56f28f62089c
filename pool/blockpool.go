package pool

import (
	"fmt"

	"github.com/kvcfg/kvcfg/prefix"
)

// BlockPool is vLLM V1's KV block pool (vllm/v1/core/block_pool.py), the
// paged allocator of vLLM's KV cache manager: blocks with reference counts,
// a free queue ordered least recently freed first, and the map from the hash
// of a full block to the cached block (docs/simulate.md#vllm-v1).
//
// Block 0 is the null block and is never handed out, so NumFree starts at
// numBlocks-1. The free queue holds every block with reference count 0,
// cached or not: GetNew pops from its front and evicts a popped block's
// hash, Free appends to its back, Touch takes a cached block out of it.
//
// A BlockPool is not safe for concurrent use (a scheduler owns it).
type BlockPool struct {
	ref  []int32
	hash []prefix.Hash
	has  []bool
	// free queue: a doubly linked list over block ids; head sentinel at
	// index n (prev/next have n+1 entries).
	prev, next []int32
	inQ        []bool
	numFree    int
	freeCached int
	cached     map[prefix.Hash]int32
	evictions  int64
}

// NewBlockPool returns a pool of numBlocks blocks (num_gpu_blocks, the null
// block included); the free queue starts in block-id order 1..numBlocks-1.
func NewBlockPool(numBlocks int) (*BlockPool, error) {
	if numBlocks < 2 {
		return nil, fmt.Errorf("%w: block pool of %d blocks (need at least 2: the null block and one usable)", ErrConfig, numBlocks)
	}
	if numBlocks > maxRows {
		return nil, fmt.Errorf("%w: block pool of %d blocks exceeds %d", ErrConfig, numBlocks, maxRows)
	}
	b := &BlockPool{
		ref:    make([]int32, numBlocks),
		hash:   make([]prefix.Hash, numBlocks),
		has:    make([]bool, numBlocks),
		prev:   make([]int32, numBlocks+1),
		next:   make([]int32, numBlocks+1),
		inQ:    make([]bool, numBlocks),
		cached: make(map[prefix.Hash]int32),
	}
	s := int32(numBlocks)
	b.prev[s], b.next[s] = s, s
	for i := 1; i < numBlocks; i++ {
		b.pushBack(int32(i))
	}
	b.ref[0] = 1 // the null block is permanently taken
	return b, nil
}

func (b *BlockPool) sentinel() int32 { return int32(len(b.ref)) }

func (b *BlockPool) pushBack(id int32) {
	s := b.sentinel()
	last := b.prev[s]
	b.next[last], b.prev[id] = id, last
	b.next[id], b.prev[s] = s, id
	b.inQ[id] = true
	b.numFree++
	if b.has[id] {
		b.freeCached++
	}
}

func (b *BlockPool) unlink(id int32) {
	p, n := b.prev[id], b.next[id]
	b.next[p], b.prev[n] = n, p
	b.inQ[id] = false
	b.numFree--
	if b.has[id] {
		b.freeCached--
	}
}

// NumBlocks is the number of blocks including the null block.
func (b *BlockPool) NumBlocks() int { return len(b.ref) }

// NumFree is the length of the free queue (vLLM get_num_free_blocks):
// blocks with reference count 0, cached ones included.
func (b *BlockPool) NumFree() int { return b.numFree }

// Usage is 1 - NumFree/(NumBlocks-1), vLLM's get_usage.
func (b *BlockPool) Usage() float64 { return 1 - float64(b.numFree)/float64(len(b.ref)-1) }

// NumFreeCached is the number of free blocks that still hold a cached
// hash (a prefix hit can revive them).
func (b *BlockPool) NumFreeCached() int { return b.freeCached }

// Evictions counts cached blocks whose hash GetNew dropped.
func (b *BlockPool) Evictions() int64 { return b.evictions }

// CachedBlocks is the number of blocks with a registered hash.
func (b *BlockPool) CachedBlocks() int { return len(b.cached) }

// RefCount returns block id's reference count.
func (b *BlockPool) RefCount(id int32) int32 { return b.ref[id] }

// Lookup returns the cached block holding hash h (get_cached_block).
func (b *BlockPool) Lookup(h prefix.Hash) (int32, bool) {
	id, ok := b.cached[h]
	return id, ok
}

// GetNew pops n blocks from the front of the free queue, evicting the hash
// of each popped cached block, sets their reference counts to 1 and appends
// them to dst (get_new_blocks). It fails with ErrOutOfMemory, changing
// nothing, when fewer than n blocks are free.
func (b *BlockPool) GetNew(dst []int32, n int) ([]int32, error) {
	if n < 0 {
		return dst, fmt.Errorf("%w: %d new blocks", ErrInvalid, n)
	}
	if n > b.numFree {
		return dst, oom("block pool", "blocks", n, b.numFree)
	}
	s := b.sentinel()
	for range n {
		id := b.next[s]
		b.unlink(id)
		if b.has[id] {
			delete(b.cached, b.hash[id])
			b.has[id] = false
			b.evictions++
		}
		b.ref[id] = 1
		dst = append(dst, id)
	}
	return dst, nil
}

// Touch takes a reference on each block (a prefix-cache hit): a block with
// reference count 0 leaves the free queue.
func (b *BlockPool) Touch(ids []int32) error {
	for _, id := range ids {
		if id <= 0 || int(id) >= len(b.ref) {
			return fmt.Errorf("%w: touch of block %d outside 1..%d", ErrBadLocation, id, len(b.ref)-1)
		}
	}
	for _, id := range ids {
		if b.ref[id] == 0 {
			b.unlink(id)
		}
		b.ref[id]++
	}
	return nil
}

// Free drops one reference from each block in the given order; blocks
// reaching 0 are appended to the back of the free queue (free_blocks).
// vLLM frees a request's blocks in reverse, so pass them tail first.
func (b *BlockPool) Free(ids []int32) error {
	for _, id := range ids {
		if id <= 0 || int(id) >= len(b.ref) || b.ref[id] <= 0 {
			return fmt.Errorf("%w: free of block %d, which is not held", ErrBadLocation, id)
		}
	}
	for _, id := range ids {
		b.ref[id]--
		if b.ref[id] == 0 {
			b.pushBack(id)
		}
	}
	return nil
}

// Cache registers h as the hash of the full block id (cache_full_blocks).
// A hash that is already cached keeps its first block (vLLM keeps
// duplicates apart; a lookup returns the first), and a block already
// carrying a hash keeps it.
func (b *BlockPool) Cache(id int32, h prefix.Hash) error {
	if id <= 0 || int(id) >= len(b.ref) || b.ref[id] <= 0 {
		return fmt.Errorf("%w: cache of block %d, which is not held", ErrBadLocation, id)
	}
	if b.has[id] {
		return nil
	}
	if _, dup := b.cached[h]; dup {
		return nil
	}
	b.hash[id], b.has[id] = h, true
	b.cached[h] = id
	return nil
}

// FreeQueue returns the free queue front first (for tests and traces).
func (b *BlockPool) FreeQueue() []int32 {
	out := make([]int32, 0, b.numFree)
	s := b.sentinel()
	for id := b.next[s]; id != s; id = b.next[id] {
		out = append(out, id)
	}
	return out
}
