package hub

import (
	"container/list"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/kvcfg/kvcfg/catalog"
)

// memory is the client's in-process state shared by concurrent Resolves:
// models by commit within a byte budget (least recently used out), the
// commit each branch or tag named lately, failures for a short while, and
// the reads in flight (one per id and revision, shared by every caller
// asking for it meanwhile).
type memory struct {
	budget  int64
	failTTL time.Duration
	revTTL  time.Duration

	mu      sync.Mutex
	used    int64
	lru     *list.List               // of *memModel, most recent first
	models  map[string]*list.Element // id@commit
	revs    map[string]timed[string] // id@rev → commit
	fails   map[string]timed[error]  // id@rev → the failure
	flights map[string]*flight       // id@rev
}

type memModel struct {
	key  string
	m    *catalog.Model
	size int64
}

type timed[T any] struct {
	v     T
	until time.Time
}

// flight is one read that callers of the same id and revision share.
type flight struct {
	done chan struct{}
	m    *catalog.Model
	err  error
}

// maxTimed bounds the revision and failure entries kept; past it the
// expired ones go, then all.
const maxTimed = 4096

func newMemory(budget int64, failTTL, revTTL time.Duration) *memory {
	return &memory{budget: budget, failTTL: failTTL, revTTL: revTTL, lru: list.New(),
		models: map[string]*list.Element{}, revs: map[string]timed[string]{},
		fails: map[string]timed[error]{}, flights: map[string]*flight{}}
}

// lookup answers id at rev from memory: the model when rev is a commit or
// a branch whose commit is fresh and the model is held, else a failure
// remembered less than FailureTTL ago. ok is false when memory knows
// nothing.
func (mm *memory) lookup(id, rev string, now time.Time) (*catalog.Model, error, bool) {
	mm.mu.Lock()
	defer mm.mu.Unlock()
	key := id + "@" + rev
	commit := rev
	if !isCommit(rev) {
		commit = ""
		if t, ok := mm.revs[key]; ok && now.Before(t.until) {
			commit = t.v
		}
	}
	if e, ok := mm.models[id+"@"+commit]; ok && commit != "" {
		mm.lru.MoveToFront(e)
		return e.Value.(*memModel).m, nil, true
	}
	if f, ok := mm.fails[key]; ok {
		if now.Before(f.until) {
			return nil, f.v, true
		}
		delete(mm.fails, key)
	}
	return nil, nil, false
}

// model returns the model of id at commit when memory holds it.
func (mm *memory) model(id, commit string) *catalog.Model {
	mm.mu.Lock()
	defer mm.mu.Unlock()
	if e, ok := mm.models[id+"@"+commit]; ok {
		mm.lru.MoveToFront(e)
		return e.Value.(*memModel).m
	}
	return nil
}

// store records a Resolve's outcome: the model under its commit (when the
// budget allows it) and rev's commit, or the failure.
func (mm *memory) store(id, rev string, m *catalog.Model, err error, now time.Time) {
	mm.mu.Lock()
	defer mm.mu.Unlock()
	key := id + "@" + rev
	if err != nil {
		if mm.failTTL > 0 && !errors.Is(err, context.Canceled) {
			pruneTimed(mm.fails, now)
			mm.fails[key] = timed[error]{err, now.Add(mm.failTTL)}
		}
		return
	}
	delete(mm.fails, key)
	if mm.budget <= 0 || m == nil || !isCommit(m.Revision) {
		return
	}
	if rev != m.Revision {
		pruneTimed(mm.revs, now)
		mm.revs[key] = timed[string]{m.Revision, now.Add(mm.revTTL)}
	}
	mm.add(id+"@"+m.Revision, m)
}

// add puts m into the LRU, evicting the least recently used models until
// the budget holds; a model larger than the whole budget is not kept.
func (mm *memory) add(key string, m *catalog.Model) {
	if e, ok := mm.models[key]; ok {
		mm.lru.MoveToFront(e)
		return
	}
	size := modelBytes(m)
	if size > mm.budget {
		return
	}
	for mm.used+size > mm.budget {
		e := mm.lru.Back()
		old := e.Value.(*memModel)
		mm.lru.Remove(e)
		delete(mm.models, old.key)
		mm.used -= old.size
	}
	mm.models[key] = mm.lru.PushFront(&memModel{key: key, m: m, size: size})
	mm.used += size
}

// usage returns the bytes and models held.
func (mm *memory) usage() (int64, int) {
	mm.mu.Lock()
	defer mm.mu.Unlock()
	return mm.used, len(mm.models)
}

func pruneTimed[T any](m map[string]timed[T], now time.Time) {
	if len(m) < maxTimed {
		return
	}
	for k, t := range m {
		if !now.Before(t.until) {
			delete(m, k)
		}
	}
	if len(m) >= maxTimed {
		clear(m)
	}
}

// join returns the flight of key, starting it with run when none is in
// the air; leader is true for the caller that started it.
func (mm *memory) join(key string) (f *flight, leader bool) {
	mm.mu.Lock()
	defer mm.mu.Unlock()
	if f, ok := mm.flights[key]; ok {
		return f, false
	}
	f = &flight{done: make(chan struct{})}
	mm.flights[key] = f
	return f, true
}

func (mm *memory) land(key string, f *flight) {
	mm.mu.Lock()
	delete(mm.flights, key)
	mm.mu.Unlock()
	close(f.done)
}

// Per-object costs of modelBytes: a tensor's TensorInfo, slice header and
// share of the catalog's maps, and a model's fixed part.
const (
	tensorOverhead = 160
	modelOverhead  = 4 << 10
)

// modelBytes approximates the memory a model holds: its config files and
// every tensor's name, dtype and shape.
func modelBytes(m *catalog.Model) int64 {
	n := int64(modelOverhead + len(m.Config))
	for _, h := range m.Headers {
		for _, t := range h.Tensors {
			n += tensorOverhead + int64(len(t.Name)+len(t.DType)+8*len(t.Shape))
		}
		for k, v := range h.Metadata {
			n += int64(len(k) + len(v) + 32)
		}
	}
	return n
}

// MemoryUsage reports the approximate bytes and the number of models the
// memory cache holds (Options.MemoryBudget).
func (c *Client) MemoryUsage() (bytes int64, models int) { return c.mem.usage() }
