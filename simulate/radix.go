package simulate

import (
	"container/heap"

	"github.com/kvcfg/kvcfg/pool"
)

// radix is SGLang's RadixCache (mem_cache/radix_cache.py) over a pool
// allocator: token-id keys, slot values, lock references, LRU eviction of
// unlocked leaves, keys compared and stored in whole pages
// (docs/simulate.md#radix-cache). The tree owns the slots of its nodes:
// eviction frees them through the allocator.
type radix struct {
	alloc     *pool.PagedAllocator
	ps        int
	root      *rnode
	evictable int // tokens in nodes with lock 0
	protected int // tokens in locked nodes
	tick      uint64
	lru       lruHeap
	nodes     int
	free      []*rnode // recycled nodes
}

type rnode struct {
	parent   *rnode
	children map[uint64]*rnode
	key      []uint32
	value    []int32
	lock     int32
	access   uint64
	gen      uint32 // bumped on delete/recycle, invalidates heap entries
	dead     bool
}

type lruEntry struct {
	access uint64
	gen    uint32
	n      *rnode
}

type lruHeap []lruEntry

func (h lruHeap) Len() int           { return len(h) }
func (h lruHeap) Less(i, j int) bool { return h[i].access < h[j].access }
func (h lruHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *lruHeap) Push(x any)        { *h = append(*h, x.(lruEntry)) }
func (h *lruHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

func newRadix(a *pool.PagedAllocator) *radix {
	return &radix{alloc: a, ps: a.PageSize(), root: &rnode{children: map[uint64]*rnode{}, lock: 1}}
}

// pageKey is the child key of a node starting with k (its first page).
func (t *radix) pageKey(k []uint32) uint64 {
	if t.ps == 1 {
		return uint64(k[0])
	}
	h := uint64(14695981039346656037)
	for _, v := range k[:t.ps] {
		h ^= uint64(v)
		h *= 1099511628211
	}
	return h
}

func (t *radix) newNode(parent *rnode, key []uint32, value []int32) *rnode {
	var n *rnode
	if k := len(t.free); k > 0 {
		n = t.free[k-1]
		t.free = t.free[:k-1]
		n.dead = false
	} else {
		n = &rnode{children: map[uint64]*rnode{}}
	}
	n.parent = parent
	n.key = append(n.key[:0], key...)
	n.value = append(n.value[:0], value...)
	n.lock = 0
	t.nodes++
	return n
}

// maybeLeaf queues n for eviction when it is an unlocked leaf.
func (t *radix) maybeLeaf(n *rnode) {
	if n != t.root && n.lock == 0 && len(n.children) == 0 && !n.dead {
		heap.Push(&t.lru, lruEntry{access: n.access, gen: n.gen, n: n})
	}
}

func commonPrefix(a, b []uint32) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// split cuts n after l tokens: a new node with n's first l tokens becomes
// n's parent (_split_node).
func (t *radix) split(n *rnode, l int) *rnode {
	m := t.newNode(n.parent, n.key[:l], n.value[:l])
	m.lock = n.lock
	m.access = n.access
	n.parent.children[t.pageKey(n.key)] = m
	copy(n.key, n.key[l:])
	n.key = n.key[:len(n.key)-l]
	copy(n.value, n.value[l:])
	n.value = n.value[:len(n.value)-l]
	n.parent = m
	m.children[t.pageKey(n.key)] = n
	return m
}

// match returns the length of the longest cached prefix of key (in whole
// pages), appends its slots to dst, and the deepest node on it; a partial
// match inside a node splits it (match_prefix).
func (t *radix) match(dst []int32, key []uint32) ([]int32, int, *rnode) {
	key = key[:len(key)/t.ps*t.ps]
	n := t.root
	pos := 0
	t.tick++
	for pos < len(key) {
		c, ok := n.children[t.pageKey(key[pos:])]
		if !ok {
			break
		}
		l := commonPrefix(c.key, key[pos:]) / t.ps * t.ps
		if l == 0 {
			break // a hash collision on the first page
		}
		c.access = t.tick
		t.maybeLeaf(c)
		if l < len(c.key) {
			c = t.split(c, l)
			dst = append(dst, c.value...)
			pos += l
			n = c
			break
		}
		dst = append(dst, c.value...)
		pos += l
		n = c
	}
	return dst, pos, n
}

// insert adds key with its slots; it returns how many leading tokens were
// already cached (their slots in value are duplicates the caller frees).
// Only whole pages are inserted.
func (t *radix) insert(key []uint32, value []int32) int {
	l := len(key) / t.ps * t.ps
	key, value = key[:l], value[:l]
	n := t.root
	pos := 0
	t.tick++
	for pos < len(key) {
		c, ok := n.children[t.pageKey(key[pos:])]
		if !ok {
			break
		}
		m := commonPrefix(c.key, key[pos:]) / t.ps * t.ps
		if m == 0 {
			break
		}
		c.access = t.tick
		t.maybeLeaf(c)
		if m < len(c.key) {
			c = t.split(c, m)
		}
		pos += m
		n = c
	}
	if pos < len(key) {
		c := t.newNode(n, key[pos:], value[pos:])
		c.access = t.tick
		n.children[t.pageKey(c.key)] = c
		t.evictable += len(c.key)
		t.maybeLeaf(c)
	} else if n != t.root {
		t.maybeLeaf(n)
	}
	return pos
}

// nodeFor returns the node whose path ends exactly at key (after insert).
func (t *radix) nodeFor(key []uint32) *rnode {
	n := t.root
	pos := 0
	key = key[:len(key)/t.ps*t.ps]
	for pos < len(key) {
		c := n.children[t.pageKey(key[pos:])]
		if c == nil {
			break
		}
		pos += len(c.key)
		n = c
	}
	return n
}

func (t *radix) incLock(n *rnode) {
	for ; n != t.root; n = n.parent {
		if n.lock == 0 {
			t.evictable -= len(n.key)
			t.protected += len(n.key)
		}
		n.lock++
	}
}

func (t *radix) decLock(n *rnode) {
	for ; n != t.root; n = n.parent {
		if n.lock == 1 {
			t.evictable += len(n.key)
			t.protected -= len(n.key)
		}
		n.lock--
		if n.lock == 0 {
			t.maybeLeaf(n)
		}
	}
}

// evict frees unlocked leaves, least recently used first, until at least
// need tokens were freed or nothing is evictable (whole nodes: it may free
// more). It returns the tokens freed.
func (t *radix) evict(need int) int {
	freed := 0
	for freed < need && t.lru.Len() > 0 {
		e := heap.Pop(&t.lru).(lruEntry)
		n := e.n
		if n.dead || n.gen != e.gen || n.lock != 0 || len(n.children) != 0 || n.access != e.access {
			continue
		}
		if err := t.alloc.Free(n.value); err != nil {
			panic("simulate: radix eviction freed a slot the pool does not hold: " + err.Error())
		}
		freed += len(n.key)
		t.evictable -= len(n.key)
		p := n.parent
		delete(p.children, t.pageKey(n.key))
		t.release(n)
		if p != t.root {
			t.maybeLeaf(p)
		}
	}
	if len(t.lru) > 4*t.nodes+64 {
		t.compact()
	}
	return freed
}

func (t *radix) release(n *rnode) {
	n.dead = true
	n.gen++
	n.parent = nil
	clear(n.children)
	t.nodes--
	t.free = append(t.free, n)
}

// compact drops stale heap entries.
func (t *radix) compact() {
	k := 0
	for _, e := range t.lru {
		n := e.n
		if !n.dead && n.gen == e.gen && n.lock == 0 && len(n.children) == 0 && n.access == e.access {
			t.lru[k] = e
			k++
		}
	}
	t.lru = t.lru[:k]
	heap.Init(&t.lru)
}

// size is every token the tree holds.
func (t *radix) size() int { return t.evictable + t.protected }

// walk calls f for every node but the root.
func (t *radix) walk(f func(n *rnode)) {
	stack := []*rnode{t.root}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n != t.root {
			f(n)
		}
		for _, c := range n.children {
			stack = append(stack, c)
		}
	}
}
