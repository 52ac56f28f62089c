package pool

import "sync"

// Locked wraps an Allocator with a mutex. It is safe for concurrent use;
// the wrapped allocator must not be used directly meanwhile.
type Locked struct {
	mu sync.Mutex
	a  Allocator
}

// NewLocked returns a, guarded by a mutex.
func NewLocked(a Allocator) *Locked { return &Locked{a: a} }

// PageSize implements Allocator.
func (l *Locked) PageSize() int { return l.a.PageSize() }

// Size implements Allocator.
func (l *Locked) Size() int { l.mu.Lock(); defer l.mu.Unlock(); return l.a.Size() }

// Available implements Allocator.
func (l *Locked) Available() int { l.mu.Lock(); defer l.mu.Unlock(); return l.a.Available() }

// Alloc implements Allocator.
func (l *Locked) Alloc(dst []int32, n int) ([]int32, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.a.Alloc(dst, n)
}

// AllocExtend implements Allocator.
func (l *Locked) AllocExtend(dst []int32, reqs []Extend) ([]int32, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.a.AllocExtend(dst, reqs)
}

// AllocDecode implements Allocator.
func (l *Locked) AllocDecode(dst []int32, reqs []Decode) ([]int32, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.a.AllocDecode(dst, reqs)
}

// Free implements Allocator.
func (l *Locked) Free(locs []int32) error { l.mu.Lock(); defer l.mu.Unlock(); return l.a.Free(locs) }

// FreeGroupBegin implements Allocator. The group is shared by all goroutines.
func (l *Locked) FreeGroupBegin() { l.mu.Lock(); defer l.mu.Unlock(); l.a.FreeGroupBegin() }

// FreeGroupEnd implements Allocator.
func (l *Locked) FreeGroupEnd() error { l.mu.Lock(); defer l.mu.Unlock(); return l.a.FreeGroupEnd() }

// Clear implements Allocator.
func (l *Locked) Clear() { l.mu.Lock(); defer l.mu.Unlock(); l.a.Clear() }

// Resize implements Allocator.
func (l *Locked) Resize(size int) error { l.mu.Lock(); defer l.mu.Unlock(); return l.a.Resize(size) }

// Stats implements Allocator.
func (l *Locked) Stats() Stats { l.mu.Lock(); defer l.mu.Unlock(); return l.a.Stats() }
