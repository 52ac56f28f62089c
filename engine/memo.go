package engine

import (
	"sync"
	"sync/atomic"
)

// Memo keeps the results of a pure resolution that plans repeat (a pinned
// version's profile, a KV dtype request, a refusal of one layout), safe
// for concurrent use. It keeps at most its limit of entries: keys come
// from requests, and the bound keeps a stream of distinct ones from
// growing it without end. Make one with NewMemo.
type Memo[K comparable, V any] struct {
	m     sync.Map // K → V
	n     atomic.Int32
	limit int32
}

// NewMemo returns an empty Memo that keeps at most limit entries.
func NewMemo[K comparable, V any](limit int) *Memo[K, V] {
	return &Memo[K, V]{limit: int32(limit)}
}

// Load returns the value kept for k, and whether there is one.
func (m *Memo[K, V]) Load(k K) (V, bool) {
	v, ok := m.m.Load(k)
	if !ok {
		var zero V
		return zero, false
	}
	return v.(V), true
}

// Store keeps v for k unless the memo is full or already holds k, and
// returns the value kept for k (v when the memo is full).
func (m *Memo[K, V]) Store(k K, v V) V {
	if m.n.Load() >= m.limit {
		return v
	}
	got, loaded := m.m.LoadOrStore(k, v)
	if !loaded {
		m.n.Add(1)
	}
	return got.(V)
}
