package plan

import (
	"sync"
	"sync/atomic"
)

// boundedCache is a concurrent map that keeps at most max entries: a
// process plans a few models, GPUs and versions again and again (a sweep,
// a server, advice), while an API client chooses the keys, so past max
// values are computed each time rather than kept.
type boundedCache[K comparable, V any] struct {
	m   sync.Map
	n   atomic.Int32
	max int32
}

// load returns the value kept for k.
func (c *boundedCache[K, V]) load(k K) (V, bool) {
	v, ok := c.m.Load(k)
	if !ok {
		var zero V
		return zero, false
	}
	return v.(V), true
}

// store keeps v for k while the cache has room and returns the value kept
// for k (v when the cache is full).
func (c *boundedCache[K, V]) store(k K, v V) V {
	if c.n.Load() >= c.max {
		return v
	}
	got, loaded := c.m.LoadOrStore(k, v)
	if !loaded {
		c.n.Add(1)
	}
	return got.(V)
}
