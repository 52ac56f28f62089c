package simulate

import (
	"encoding/binary"
	"fmt"

	"github.com/kvcfg/kvcfg/pool"
	"github.com/kvcfg/kvcfg/prefix"
)

type hashT = prefix.Hash

// vLLM V1 defaults when the config leaves a knob at 0
// (docs/simulate.md#vllm-v1).
const (
	vllmDefaultBlockSize = 16
	vllmDefaultBatched   = 8192
	vllmDefaultMaxSeqs   = 256
)

type vsched struct {
	r   *req
	n   int
	pre int // computed before this step
}

type vllm struct {
	s       *sim
	cfg     Config
	bp      *pool.BlockPool
	bs      int
	budget  int
	maxSeqs int
	caching bool
	seed    hashT
	hasher  prefix.TokenHasher

	waitq   queue
	run     []*req
	sched   []vsched
	hits    []int32
	scratch []int32
	recycle []*req

	preemptions int64
}

func newVLLM(cfg Config, s *sim) (*vllm, error) {
	bp, err := pool.NewBlockPool(cfg.NumGPUBlocks)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	e := &vllm{s: s, cfg: cfg, bp: bp, bs: cfg.BlockSize, budget: cfg.MaxNumBatchedTokens, maxSeqs: cfg.MaxNumSeqs,
		caching: !cfg.DisablePrefixCaching, seed: prefix.NoneHash("0")}
	if e.bs == 0 {
		e.bs = vllmDefaultBlockSize
	}
	if e.budget == 0 {
		e.budget = vllmDefaultBatched
	}
	if e.maxSeqs == 0 {
		e.maxSeqs = vllmDefaultMaxSeqs
	}
	return e, nil
}

func (e *vllm) usable() int          { return e.bp.NumBlocks() - 1 }
func (e *vllm) poolTokens() int64    { return int64(e.usable()) * int64(e.bs) }
func (e *vllm) busy() bool           { return e.waitq.len() > 0 || len(e.run) > 0 }
func (e *vllm) running() int         { return len(e.run) }
func (e *vllm) waiting() int         { return e.waitq.len() }
func (e *vllm) kvUsed() int          { return (e.usable() - e.bp.NumFree()) * e.bs }
func (e *vllm) kvCached() int        { return e.bp.NumFreeCached() * e.bs }
func (e *vllm) finish(s *Summary)    { n := e.preemptions; s.Preemptions = &n }
func cdiv(a, b int) int              { return (a + b - 1) / b }
func (e *vllm) numTokens(r *req) int { return r.P + r.out }

func (e *vllm) arrive(r Request, id int64) {
	p, m := r.promptLen(), r.OutputTokens
	if (e.cfg.MaxModelLen > 0 && p+m > e.cfg.MaxModelLen) || cdiv(p+m-1, e.bs) > e.usable() {
		e.s.sum.UnservableRequests++
		return
	}
	e.waitq.pushBack(qent{d: describe(r, id, m)})
}

// ensureHashes hashes r's full blocks among its first upto tokens
// (request.block_hashes, sha256_cbor).
func (e *vllm) ensureHashes(r *req, upto int) {
	for (len(r.hashes)+1)*e.bs <= upto {
		j := len(r.hashes)
		parent := e.seed
		if j > 0 {
			parent = r.hashes[j-1]
		}
		toks := r.tokens[j*e.bs : (j+1)*e.bs]
		if e.cfg.SHA256BlockHashes {
			r.hashes = append(r.hashes, e.hasher.Hash(parent, toks))
		} else {
			r.hashes = append(r.hashes, fastBlockHash(parent, toks))
		}
	}
}

// fastBlockHash is a chained 128-bit content hash standing in for
// sha256_cbor: the cache behaves the same (it only compares hashes for
// equality; a collision has probability about 2^-128 per pair of blocks)
// at a fraction of the cost. Config.SHA256BlockHashes uses vLLM's.
func fastBlockHash(parent hashT, tokens []uint32) hashT {
	a := binary.LittleEndian.Uint64(parent[0:8]) ^ 0x9e3779b97f4a7c15
	b := binary.LittleEndian.Uint64(parent[8:16]) ^ 0xc2b2ae3d27d4eb4f
	for _, t := range tokens {
		a = (a ^ uint64(t)) * 0xbf58476d1ce4e5b9
		a ^= a >> 31
		b = (b + uint64(t)) * 0x94d049bb133111eb
		b ^= b >> 29
	}
	a ^= b >> 17
	b ^= a >> 23
	var h hashT
	binary.LittleEndian.PutUint64(h[0:8], a*0xff51afd7ed558ccd)
	binary.LittleEndian.PutUint64(h[8:16], b*0xc4ceb9fe1a85ec53)
	return h
}

// computedBlocks is get_computed_blocks: cached full blocks from the
// start, stopping at the first miss, capped so one token is computed.
func (e *vllm) computedBlocks(r *req) []int32 {
	if e.caching { // token ids only make the block hashes
		e.s.materialize(r)
	}
	if nb := cdiv(r.P+r.M, e.bs); cap(r.blocks) < nb {
		r.blocks = make([]int32, 0, nb)
		if e.caching {
			r.hashes = make([]hashT, 0, nb)
		}
	}
	e.hits = e.hits[:0]
	if !e.caching || r.computed != 0 {
		return e.hits
	}
	n := (e.numTokens(r) - 1) / e.bs
	e.ensureHashes(r, n*e.bs)
	for j := 0; j < n; j++ {
		id, ok := e.bp.Lookup(r.hashes[j])
		if !ok {
			break
		}
		e.hits = append(e.hits, id)
	}
	return e.hits
}

// allocate is allocate_slots: hit blocks in the free queue count against
// free space; full blocks are registered at allocation time.
func (e *vllm) allocate(r *req, n int, hits []int32) bool {
	need := cdiv(r.computed+len(hits)*e.bs+n, e.bs)
	toAlloc := need - len(r.blocks) - len(hits)
	for _, id := range hits {
		if e.bp.RefCount(id) == 0 {
			toAlloc++
		}
	}
	if toAlloc > e.bp.NumFree() {
		return false
	}
	if err := e.bp.Touch(hits); err != nil {
		panic(fmt.Sprintf("simulate: vllm touch: %v", err))
	}
	r.blocks = append(r.blocks, hits...)
	if len(hits) > 0 {
		r.cachedB = len(r.blocks)
	}
	var err error
	if k := need - len(r.blocks); k > 0 {
		if r.blocks, err = e.bp.GetNew(r.blocks, k); err != nil {
			panic(fmt.Sprintf("simulate: vllm allocation after its check: %v", err))
		}
	}
	if e.caching {
		full := min(r.computed+len(hits)*e.bs+n, e.numTokens(r)) / e.bs
		if full > r.cachedB {
			e.ensureHashes(r, full*e.bs)
			for j := r.cachedB; j < full; j++ {
				if err := e.bp.Cache(r.blocks[j], r.hashes[j]); err != nil {
					panic(fmt.Sprintf("simulate: vllm cache: %v", err))
				}
			}
			r.cachedB = full
		}
	}
	return true
}

// freeBlocks frees r's blocks tail first.
func (e *vllm) freeBlocks(r *req) {
	e.scratch = e.scratch[:0]
	for i := len(r.blocks) - 1; i >= 0; i-- {
		e.scratch = append(e.scratch, r.blocks[i])
	}
	if err := e.bp.Free(e.scratch); err != nil {
		panic(fmt.Sprintf("simulate: vllm free: %v", err))
	}
	r.blocks = r.blocks[:0]
	r.cachedB = 0
}

// preempt is _preempt_request: recompute mode, back to the queue front.
func (e *vllm) preempt(r *req) {
	e.freeBlocks(r)
	r.lost = r.computed
	r.computed = 0
	e.waitq.pushFront(qent{r: r})
	e.preemptions++
}

func (e *vllm) step(now float64) stepInfo {
	for _, r := range e.recycle {
		e.s.recycle(r)
	}
	e.recycle = e.recycle[:0]
	var st stepInfo
	e.sched = e.sched[:0]
	budget, preempted := e.scheduleRunning(e.budget)
	if e.waitq.len() > 0 && preempted {
		st.blocked = LimitKVPool
	}
	if !preempted {
		st.blocked = e.scheduleWaiting(budget)
	}
	if len(e.sched) == 0 {
		st.idle = true
		return st
	}
	e.execute(&st)
	return st
}

// scheduleRunning schedules the running requests first, in order, within
// budget tokens, preempting from the back of the running queue when the
// pool is short. It returns the budget left and whether it preempted.
func (e *vllm) scheduleRunning(budget int) (int, bool) {
	preempted := false
	for i := 0; i < len(e.run) && budget > 0; {
		r := e.run[i]
		n := min(e.numTokens(r)-r.computed, budget)
		if e.cfg.MaxModelLen > 0 {
			n = min(n, e.cfg.MaxModelLen-1-r.computed)
		}
		if n <= 0 {
			i++
			continue
		}
		self := false
		for !e.allocate(r, n, nil) {
			v := e.run[len(e.run)-1]
			e.run = e.run[:len(e.run)-1]
			e.preempt(v)
			preempted = true
			if v == r {
				self = true
				break
			}
		}
		if self {
			break
		}
		e.sched = append(e.sched, vsched{r: r, n: n, pre: r.computed})
		budget -= n
		i++
	}
	return budget, preempted
}

// scheduleWaiting admits waiting requests from the queue head within
// budget tokens and returns what stopped it while requests still wait
// ("" when the queue emptied).
func (e *vllm) scheduleWaiting(budget int) string {
	for e.waitq.len() > 0 {
		if budget <= 0 {
			return LimitTokenBudget
		}
		if len(e.run) >= e.maxSeqs {
			return LimitMaxRunning
		}
		r := e.s.take(e.waitq.at(0))
		hits := e.computedBlocks(r)
		hitTok := len(hits) * e.bs
		n := min(e.numTokens(r)-hitTok, budget)
		if !e.allocate(r, n, hits) {
			return LimitKVPool
		}
		e.waitq.popFront(1)
		e.run = append(e.run, r)
		r.computed = hitTok
		if !r.admitted {
			r.admitted = true
			e.s.sum.PromptTokens += int64(r.P)
			e.s.sum.CachedPromptTokens += int64(hitTok)
		}
		if r.lost > 0 {
			e.s.sum.RecomputedTokens += int64(max(r.lost-hitTok, 0))
			r.lost = 0
		}
		e.sched = append(e.sched, vsched{r: r, n: n, pre: hitTok})
		budget -= n
	}
	return ""
}

// execute runs the scheduled batch: it advances each request's computed
// tokens, samples a token for those fully computed, frees finished
// requests and drops them from the running queue.
func (e *vllm) execute(st *stepInfo) {
	st.reqs = len(e.sched)
	finished := false
	for _, x := range e.sched {
		r := x.r
		if x.pre < e.numTokens(r)-1 {
			st.prefill = true
		}
		r.computed += x.n
		st.newTokens += x.n
		st.attnWork += float64(x.n) * (float64(x.pre) + float64(x.n)/2)
		st.kvRead += int64(r.computed)
		if r.computed < e.numTokens(r) {
			continue // partial prefill: nothing sampled
		}
		r.out++
		if r.out == 1 {
			e.s.firsts = append(e.s.firsts, r)
		}
		if r.out >= r.M {
			e.freeBlocks(r)
			r.done = true
			finished = true
			e.s.dones = append(e.s.dones, r)
			e.recycle = append(e.recycle, r)
		}
	}
	if finished {
		k := 0
		for i, r := range e.run {
			if !r.done {
				if k != i { // a pointer write costs a GC write barrier
					e.run[k] = r
				}
				k++
			}
		}
		clear(e.run[k:])
		e.run = e.run[:k]
	}
}
