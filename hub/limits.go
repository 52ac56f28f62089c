package hub

import (
	"context"
	"sync"
	"time"
)

// Defaults of the limits in Options.
const (
	// DefaultMaxHeaderBytes caps one shard's JSON header: 32 MiB, about
	// 300,000 tensors' entries; real shards' headers are under 2 MiB.
	DefaultMaxHeaderBytes = 32 << 20
	// DefaultMaxTensors caps one checkpoint's tensors: 524,288, over five
	// times DeepSeek-V3's 94,000. A parsed tensor costs a few hundred
	// bytes, so one Resolve stays under a few hundred MB.
	DefaultMaxTensors = 1 << 19
	// DefaultMemoryBudget is the memory cache a server is advised to
	// keep (Options.MemoryBudget): 512 MiB, some fifty DeepSeek-V3-sized
	// checkpoints.
	DefaultMemoryBudget = 512 << 20
	// DefaultFailureTTL is how long a failure is remembered.
	DefaultFailureTTL = 5 * time.Second
	// DefaultRevisionTTL is how long a branch's commit is trusted.
	DefaultRevisionTTL = time.Minute
	// DefaultServeTimeout is the Resolve deadline (Options.Timeout) for a
	// server whose write timeout is 30 s: with the 10 s RequestTimeout
	// and the retry waits cut at the deadline, the Hub's error reaches
	// the client with 10 s to spare before the connection is closed.
	DefaultServeTimeout = 20 * time.Second
)

// withLimits fills the limits' defaults.
func withLimits(o Options) Options {
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if o.MaxTensors <= 0 {
		o.MaxTensors = DefaultMaxTensors
	}
	if o.FailureTTL == 0 {
		o.FailureTTL = DefaultFailureTTL
	}
	if o.RevisionTTL <= 0 {
		o.RevisionTTL = DefaultRevisionTTL
	}
	return o
}

// inflightBytes bounds the shard headers being read at once,
// all Resolves of a client together: Concurrency maximum-size headers.
// A read holds only its own header's length, so slow reads of ordinary
// headers never hold back the others.
func inflightBytes(o Options) int64 { return int64(o.Concurrency) * (firstRead + o.MaxHeaderBytes) }

// parseBytes bounds the shard headers being parsed at once, all Resolves
// of a client together: two maximum-size headers. Parsing is work on the
// CPU (no peer can slow it down), and a parsed header takes about ten
// times its bytes while it is built, so this budget, not the read budget,
// sets a Resolve's peak memory on huge headers.
func parseBytes(o Options) int64 { return 2 * (firstRead + o.MaxHeaderBytes) }

// byteSem is a weighted semaphore of bytes.
type byteSem struct {
	mu    sync.Mutex
	avail int64
	wake  chan struct{}
}

func newByteSem(n int64) *byteSem { return &byteSem{avail: n, wake: make(chan struct{})} }

// acquire takes n bytes (n at most the semaphore's size), waiting for
// them or for ctx to end.
func (s *byteSem) acquire(ctx context.Context, n int64) error {
	for {
		s.mu.Lock()
		if s.avail >= n {
			s.avail -= n
			s.mu.Unlock()
			return nil
		}
		w := s.wake
		s.mu.Unlock()
		select {
		case <-w:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *byteSem) release(n int64) {
	s.mu.Lock()
	s.avail += n
	close(s.wake)
	s.wake = make(chan struct{})
	s.mu.Unlock()
}

// Caps on the files read from the HF cache and kvcfg's header cache
// (through internal/inputfile: regular files only, so a named pipe or a
// device planted in a cache is refused instead of blocking or filling
// memory).
const (
	// maxRefBytes caps refs/<revision>: a 40-character commit.
	maxRefBytes = 1 << 10
	// maxSummaryBytes caps a cached header summary: the headers of one
	// checkpoint, at most MaxTensors entries.
	maxSummaryBytes = 512 << 20
)
