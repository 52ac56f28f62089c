package simulate

import (
	"fmt"
	"math"
	"slices"

	"github.com/kvcfg/kvcfg/pool"
)

// SGLang scheduler constants (docs/simulate.md#sglang).
const (
	sglInitNewTokenRatio  = 0.7  // SGLANG_INIT_NEW_TOKEN_RATIO
	sglMinRatioFactor     = 0.14 // SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR
	sglRatioDecaySteps    = 600  // SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS
	sglRetractDecodeSteps = 20   // SGLANG_RETRACT_DECODE_STEPS
	sglClipMaxNewTokens   = 4096 // SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION
	sglDefaultMaxPrefill  = 16384
	addContinue           = 0
	addNoToken            = 1
	addOther              = 2
	sglDefaultMaxRunning  = math.MaxInt32
	// sglIgnoreEOSReserve is IGNORE_EOS_RESERVE_TOKENS
	// (schedule_policy.py): what add_one_req_ignore_eos keeps free per
	// request still running.
	sglIgnoreEOSReserve = 1
)

type sglang struct {
	s      *sim
	cfg    Config
	alloc  *pool.PagedAllocator
	tree   *radix // nil: radix cache disabled (ChunkCache)
	ps     int
	maxRun int

	initRatio, minRatio, decay, ratio float64

	waitq    queue
	run      []*req // running batch (finished requests stay until filtered)
	live     int    // requests of run not finished
	chunked  *req
	latch    bool
	latchWhy string

	// scratch
	canRun  []*req
	extends []pool.Extend
	decs    []pool.Decode
	slots   []int32
	order   []int
	victims []*req
	ended   []*req // finished at prefill: recycled at the next step
	held    int    // tokens held by live requests (not the tree)
	states  []eosState

	// The overlap scheduler (Config.OverlapSchedule): pend is the last
	// batch, whose results are processed after this step's batch is
	// scheduled; cur is this step's batch. shrunk: a result finished a
	// request, so the next decode clears the latch (its filter_batch).
	pend, cur               []*req
	pendPrefill, curPrefill bool
	shrunk                  bool

	retractions int64
}

func newSGLang(cfg Config, s *sim) (*sglang, error) {
	ps := max(cfg.PageSize, 1)
	a, err := pool.NewAllocator(pool.AllocatorConfig{Size: cfg.MaxTotalNumTokens, PageSize: ps})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	e := &sglang{s: s, cfg: cfg, alloc: a, ps: ps, maxRun: cfg.MaxRunningRequests}
	if e.maxRun == 0 {
		e.maxRun = sglDefaultMaxRunning
	}
	if !cfg.DisableRadixCache {
		e.tree = newRadix(a)
	}
	cons := cfg.ScheduleConservativeness
	if cons == 0 {
		cons = 1
	}
	e.initRatio = min(sglInitNewTokenRatio*cons, 1)
	e.minRatio = min(e.initRatio*sglMinRatioFactor, 1)
	e.decay = (e.initRatio - e.minRatio) / sglRatioDecaySteps
	e.ratio = e.initRatio
	return e, nil
}

func (e *sglang) poolTokens() int64 { return int64(e.alloc.Size()) }
func (e *sglang) busy() bool {
	return e.waitq.len() > 0 || len(e.run) > 0 || e.chunked != nil || len(e.pend) > 0
}
func (e *sglang) waiting() int  { return e.waitq.len() }
func (e *sglang) kvUsed() int   { return e.alloc.Size() - e.alloc.Available() - e.evictable() }
func (e *sglang) kvCached() int { return e.evictable() }

func (e *sglang) running() int {
	if e.chunked != nil {
		return e.live + 1
	}
	return e.live
}

func (e *sglang) evictable() int {
	if e.tree == nil {
		return 0
	}
	return e.tree.evictable
}

func (e *sglang) finish(s *Summary) {
	n := e.retractions
	s.Retractions = &n
	s.FinalNewTokenRatio = e.ratio
}

func floorTo(x, p int) int { return x / p * p }
func ceilTo(x, p int) int  { return (x + p - 1) / p * p }

// SGLang's request limits (tp_worker.py, scheduler.py): max_req_len =
// min(context_len - 1, pool - 1); a prompt of max_req_input_len =
// max_req_len - 5 tokens or more is refused (validate_input_length tests
// >=); max_new_tokens is clipped to max_req_len - prompt - 1
// (init_req_max_new_tokens). docs/simulate.md#request-limits.
const sglInputMargin = 5

// SGLangContextLength is the least context length with which SGLang
// serves a request of prompt tokens and output tokens in full: the prompt
// must stay under max_req_len - 5 and the outputs within max_req_len -
// prompt - 1, with max_req_len = context - 1, so max(prompt + output + 2,
// prompt + 7) (docs/simulate.md#request-limits).
func SGLangContextLength(prompt, output int) int {
	return max(prompt+output+2, prompt+sglInputMargin+2)
}

// maxReqLen is SGLang's max_req_len.
func (e *sglang) maxReqLen() int {
	n := e.alloc.Size() - 1
	if e.cfg.ContextLength > 0 {
		n = min(n, e.cfg.ContextLength-1)
	}
	return n
}

// arrive validates a request against the server's limits
// (docs/simulate.md#request-limits) and queues its description.
func (e *sglang) arrive(r Request, id int64) {
	p, maxLen := r.promptLen(), e.maxReqLen()
	if p >= maxLen-sglInputMargin {
		e.s.sum.UnservableRequests++
		return
	}
	m := r.OutputTokens
	if clip := maxLen - p - 1; m > clip {
		m = clip
		e.s.sum.ClippedRequests++
	}
	e.waitq.pushBack(qent{d: describe(r, id, m)})
}

// evictFor evicts the tree when fewer than n slots are free
// (evict_from_tree_cache): the newest main evicts only the shortfall,
// released versions the whole n (docs/simulate.md#radix-cache).
func (e *sglang) evictFor(n int) {
	if e.tree == nil {
		return
	}
	if avail := e.alloc.Available(); avail < n {
		if e.cfg.EvictShortfall {
			n -= avail
		}
		e.tree.evict(n)
	}
}

// adder is SGLang's PrefillAdder with its PrefillBudget.
type adder struct {
	totalOffset, currentOffset float64
	remInput, remChunk         int
	chunking                   bool
	newChunked                 *req
}

func (e *sglang) remaining(a *adder) (total, current float64) {
	base := float64(e.alloc.Available() + e.evictable())
	return base - a.totalOffset, base - a.currentOffset
}

func (e *sglang) overhead() int {
	if e.cfg.LegacyAdmission {
		return 0
	}
	return e.ps
}

func (e *sglang) reserve(a *adder, extend, reservedNew int) {
	immediate := float64(ceilTo(extend, e.ps) + e.overhead())
	a.totalOffset += immediate + float64(reservedNew)
	a.currentOffset += immediate
	a.remInput -= ceilTo(extend, e.ps)
	if a.chunking {
		a.remChunk -= ceilTo(extend, e.ps)
	}
}

func (e *sglang) budgetState(a *adder) int {
	t, c := e.remaining(a)
	if t <= 0 || c <= 0 {
		return addNoToken
	}
	if a.remInput <= 0 || (a.chunking && a.remChunk <= 0) {
		return addOther
	}
	return addContinue
}

// match sets r's prefix from the tree (init_next_round_input): fill_ids
// capped at len-1, whole pages.
func (e *sglang) match(r *req) {
	if e.tree != nil { // token ids only key the radix tree
		e.s.materialize(r)
	}
	if cap(r.locs) < r.P+r.M {
		r.locs = make([]int32, 0, r.P+r.M)
	}
	fill := r.P + r.out
	r.locs = r.locs[:0]
	r.prefix, r.treeLen, r.node = 0, 0, nil
	if e.tree == nil {
		return
	}
	var n int
	r.locs, n, r.node = e.tree.match(r.locs, r.tokens[:fill-1])
	r.prefix, r.treeLen = n, n
	if r.node == e.tree.root {
		r.node = nil
	}
}

func (e *sglang) lock(n *rnode) {
	if n != nil {
		e.tree.incLock(n)
	}
}

func (e *sglang) unlock(n *rnode) {
	if n != nil {
		e.tree.decLock(n)
	}
}

// addOne is add_one_req; extend is set on r.ext via the returned value.
func (e *sglang) addOne(a *adder, r *req, nCanRun int) (res int, extend int, ok bool) {
	fill := r.P + r.out
	extend = fill - r.prefix
	maxNew := min(max(r.M-r.out, 0), sglClipMaxNewTokens)
	total := float64(extend + maxNew + e.overhead())
	e.lock(r.node)
	remTotal, _ := e.remaining(a)
	if total >= remTotal {
		e.unlock(r.node)
		return addNoToken, 0, false
	}
	if !a.chunking && nCanRun > 0 && ceilTo(extend, e.ps) >= a.remInput {
		e.unlock(r.node)
		return addOther, 0, false
	}
	reservedNew := min(r.M, sglClipMaxNewTokens)
	if a.chunking && ceilTo(extend, e.ps) > a.remChunk {
		extend = floorTo(a.remChunk, e.ps)
		if extend <= 0 {
			e.unlock(r.node)
			return addOther, 0, false
		}
		a.newChunked = r
		reservedNew = 0
	}
	e.reserve(a, extend, reservedNew)
	return e.budgetState(a), extend, true
}

// addChunked is add_chunked_req: a continuation always progresses.
func (e *sglang) addChunked(a *adder, r *req) int {
	remTotal, _ := e.remaining(a)
	budget := min(a.remChunk, int(remTotal))
	if budget <= 0 {
		budget = a.remChunk
	}
	left := r.P + r.out - len(r.locs)
	extend := min(left, budget)
	last := extend == left
	if !last {
		extend = max(floorTo(len(r.locs)+extend, e.ps)-len(r.locs), 0)
	}
	reservedNew := 0
	if last {
		reservedNew = min(r.M, sglClipMaxNewTokens)
	}
	e.reserve(a, extend, reservedNew)
	return extend
}

func (e *sglang) step(now float64) stepInfo {
	if e.cfg.OverlapSchedule {
		return e.stepOverlap()
	}
	for i, r := range e.ended {
		e.s.recycle(r)
		e.ended[i] = nil
	}
	e.ended = e.ended[:0]
	p, ok := e.prefill()
	if ok {
		return p
	}
	st := e.decode()
	st.blocked = p.blocked
	return st
}

// prefill is _get_new_batch_prefill_raw plus the forward and
// process_batch_result_prefill.
func (e *sglang) prefill() (stepInfo, bool) {
	var st stepInfo
	if (e.latch || e.waitq.len() == 0) && e.chunked == nil {
		if e.waitq.len() > 0 {
			st.blocked = e.latchWhy
		}
		return st, false
	}
	if len(e.run) >= e.maxRun && e.chunked == nil {
		e.latch, e.latchWhy = true, LimitMaxRunning
		st.blocked = LimitMaxRunning
		return st, false
	}
	allocatable := e.maxRun - len(e.run)
	a := e.newAdder()
	batch := e.canRun[:0]
	e.extends = e.extends[:0]
	cont := e.chunked
	if cont != nil {
		ext := e.addChunked(&a, cont)
		batch = append(batch, cont)
		e.extends = append(e.extends, e.extendOf(cont, ext))
		e.chunked = nil
	}
	batch, stalled := e.admitWaiting(&a, &st, batch, allocatable, cont)
	if stalled {
		return st, true
	}
	e.canRun = batch
	if len(batch) == 0 {
		return st, false
	}
	e.allocBatch(&st, batch)
	e.sampleBatch(batch, a.newChunked)
	return st, true
}

// newAdder starts a PrefillAdder for one prefill step: the input and
// chunk budgets, and the new tokens the running requests still reserve.
func (e *sglang) newAdder() adder {
	a := adder{remInput: e.cfg.MaxPrefillTokens}
	if a.remInput == 0 {
		a.remInput = sglDefaultMaxPrefill
	}
	if e.cfg.ChunkedPrefillSize > 0 {
		a.chunking, a.remChunk = true, e.cfg.ChunkedPrefillSize
	}
	for _, r := range e.run {
		if !r.done {
			a.totalOffset += float64(min(r.M-r.out, sglClipMaxNewTokens)) * e.ratio
		}
	}
	return a
}

// admitWaiting adds waiting requests to batch (which holds the chunked
// continuation cont, if any) until one does not fit, and drops the
// admitted ones from the queue. stalled is true when the queue head can
// never run on an idle server: it is then counted unservable and the step
// is idle.
func (e *sglang) admitWaiting(a *adder, st *stepInfo, batch []*req, allocatable int, cont *req) (_ []*req, stalled bool) {
	admitted := 0
	idleServer := e.running() == 0 && cont == nil
	for i := 0; i < e.waitq.len(); i++ {
		if len(batch) >= allocatable {
			e.latch, e.latchWhy = true, LimitMaxRunning
			st.blocked = LimitMaxRunning
			break
		}
		r := e.s.take(e.waitq.at(i)) // made from its description when first considered
		e.match(r)
		var res, ext int
		var ok bool
		if e.cfg.IgnoreEOS && e.tree == nil {
			res, ext, ok = e.addOneIgnoreEOS(a, r, batch)
		} else {
			res, ext, ok = e.addOne(a, r, len(batch))
		}
		if ok {
			r.retracted = false
			admitted++
			batch = append(batch, r)
			e.extends = append(e.extends, e.extendOf(r, ext))
			if !r.admitted {
				r.admitted = true
				e.s.sum.PromptTokens += int64(r.P)
				e.s.sum.CachedPromptTokens += int64(min(r.prefix, r.P))
			}
			if r.lost > 0 {
				e.s.sum.RecomputedTokens += int64(max(r.lost-r.prefix, 0))
				r.lost = 0
			}
		} else {
			r.locs = r.locs[:0]
			r.node, r.prefix, r.treeLen = nil, 0, 0
		}
		if res == addNoToken {
			e.latch, e.latchWhy = true, LimitKVPool
			st.blocked = LimitKVPool
			if !ok && admitted == 0 && idleServer {
				// Nothing runs and nothing else holds memory: the
				// engine would stall its queue on this request forever.
				e.waitq.popFront(1)
				e.s.sum.UnservableRequests++
				e.s.recycle(r)
				e.latch = false
				st.idle = true
				return batch, true
			}
			break
		}
		if res == addOther {
			st.blocked = LimitTokenBudget
			break
		}
	}
	e.waitq.popFront(admitted)
	if e.waitq.len() == 0 {
		st.blocked = ""
	}
	return batch, false
}

// allocBatch is prepare_for_extend: it evicts, then allocates every
// request's new slots and counts the step's work.
func (e *sglang) allocBatch(st *stepInfo, batch []*req) {
	need := 0
	for _, x := range e.extends {
		need += x.SeqLen - x.PrefixLen
	}
	if e.ps > 1 {
		need += len(e.extends) * e.ps
	}
	e.evictFor(need)
	var err error
	if e.ps == 1 {
		// alloc_extend with page size 1 takes each request's slots from
		// the front of the free list in batch order: straight into its
		// own slots, one copy less per token.
		for i, r := range batch {
			x := e.extends[i]
			if r.locs, err = e.alloc.Alloc(r.locs, x.SeqLen-x.PrefixLen); err != nil {
				break
			}
		}
	} else {
		e.slots, err = e.alloc.AllocExtend(e.slots[:0], e.extends)
	}
	if err != nil {
		panic(fmt.Sprintf("simulate: sglang prefill allocation failed after admission: %v", err))
	}
	off := 0
	st.prefill = true
	st.reqs = len(batch)
	for i, r := range batch {
		x := e.extends[i]
		n := x.SeqLen - x.PrefixLen
		if e.ps > 1 {
			r.locs = append(r.locs, e.slots[off:off+n]...)
		}
		off += n
		e.held += n
		st.newTokens += n
		st.attnWork += float64(n) * (float64(x.PrefixLen) + float64(n)/2)
		st.kvRead += int64(x.SeqLen)
	}
}

// sampleBatch ends a prefill step: a request whose prompt is not all in
// (newChunked among them) stays the chunked continuation; the others
// sample a token, then finish or join the running batch.
func (e *sglang) sampleBatch(batch []*req, newChunked *req) {
	shrank := false
	for _, r := range batch {
		if r == newChunked || len(r.locs) < r.P+r.out {
			e.cacheUnfinished(r)
			e.chunked = r
			continue
		}
		if e.cfg.OverlapSchedule {
			// Merged into the running batch at once; its first token
			// comes with the results, one step later.
			e.run = append(e.run, r)
			e.live++
			e.cur = append(e.cur, r)
			e.curPrefill = true
			continue
		}
		if e.sample(r) {
			shrank = true
			continue
		}
		e.cacheUnfinished(r)
		e.run = append(e.run, r)
		e.live++
	}
	if shrank {
		e.latch = false
	}
}

// sample gives r its next token: its first joins the first-token list;
// one that reaches max_new_tokens finishes (its KV cached, r ended). It
// reports whether r finished.
func (e *sglang) sample(r *req) bool {
	r.out++
	if r.out == 1 {
		e.s.firsts = append(e.s.firsts, r)
	}
	if r.out < r.M {
		return false
	}
	e.cacheFinished(r)
	e.ended = append(e.ended, r)
	return true
}

func (e *sglang) extendOf(r *req, ext int) pool.Extend {
	x := pool.Extend{PrefixLen: len(r.locs), SeqLen: len(r.locs) + ext, LastLoc: -1}
	if len(r.locs) > 0 {
		x.LastLoc = r.locs[len(r.locs)-1]
	}
	return x
}

// cacheUnfinished is cache_unfinished_req: the computed, page-aligned
// tokens go into the tree, duplicates are freed, the lock moves to the
// new node.
func (e *sglang) cacheUnfinished(r *req) {
	if e.tree == nil {
		return
	}
	n := floorTo(committed(r), e.ps)
	if n <= r.treeLen {
		return
	}
	existing := e.tree.insert(r.tokens[:n], r.locs[:n])
	if existing > r.treeLen {
		e.free(r.locs[r.treeLen:existing])
	}
	e.held -= n - r.treeLen
	var node *rnode
	e.slots, _, node = e.tree.match(e.slots[:0], r.tokens[:n])
	copy(r.locs, e.slots)
	e.lock(node)
	e.unlock(r.node)
	r.node, r.treeLen = node, n
}

// cacheFinished is cache_finished_req: the request's KV (all but the last
// sampled token) becomes evictable tree nodes.
func (e *sglang) cacheFinished(r *req) {
	if e.tree == nil {
		e.free(r.locs)
	} else {
		n := floorTo(committed(r), e.ps)
		existing := r.treeLen
		if n > r.treeLen {
			existing = e.tree.insert(r.tokens[:n], r.locs[:n])
		}
		if existing > r.treeLen {
			e.free(r.locs[r.treeLen:existing])
		}
		// The unaligned tail and, under the overlap scheduler, the slot
		// of the token in flight (release_kv_cache frees both).
		if len(r.locs) > n {
			e.free(r.locs[n:])
		}
		e.unlock(r.node)
	}
	e.held -= len(r.locs) - r.treeLen
	r.locs = r.locs[:0]
	r.node, r.treeLen = nil, 0
	r.done = true
	e.s.dones = append(e.s.dones, r)
}

// release is release_req for a retracted request: its decoded KV is freed
// (not cached), its prompt stays in the tree, now unlocked.
func (e *sglang) release(r *req) {
	r.lost = len(r.locs)
	e.free(r.locs[r.treeLen:])
	e.held -= len(r.locs) - r.treeLen
	e.unlock(r.node)
	r.locs = r.locs[:0]
	r.node, r.treeLen, r.prefix = nil, 0, 0
}

func (e *sglang) free(locs []int32) {
	if len(locs) == 0 {
		return
	}
	if err := e.alloc.Free(locs); err != nil {
		panic(fmt.Sprintf("simulate: sglang freed a slot it does not hold: %v", err))
	}
}

// decodeNeed is the slots the next decode of rs needs.
func (e *sglang) decodeNeed(rs []*req) int {
	if e.ps == 1 {
		return len(rs)
	}
	n := 0
	for _, r := range rs {
		if len(r.locs)%e.ps == 0 {
			n++
		}
	}
	return n * e.ps
}

// checkDecodeMem is check_decode_mem over rs.
func (e *sglang) checkDecodeMem(rs []*req) bool {
	need := e.decodeNeed(rs)
	e.evictFor(need)
	return e.alloc.Available() >= need
}

// compact drops the finished requests from the running batch, recycling
// them, and returns how many stay (it leaves the tail for decode to clear).
func (e *sglang) compact() int {
	k := 0
	for i, r := range e.run {
		if r.done {
			e.s.recycle(r)
			continue
		}
		if k != i { // a pointer write costs a GC write barrier
			e.run[k] = r
		}
		k++
	}
	return k
}

// decode is update_running_batch plus the forward.
func (e *sglang) decode() stepInfo {
	var st stepInfo
	k := len(e.run)
	if e.live < k { // some finished: drop them
		k = e.compact()
	}
	if k < len(e.run) || e.shrunk {
		clear(e.run[k:])
		e.run = e.run[:k]
		e.latch, e.shrunk = false, false
	}
	if len(e.run) == 0 {
		if len(e.pend) == 0 {
			e.ratio = e.initRatio // idle self-check
		}
		st.idle = true
		return st
	}
	if e.checkDecodeMem(e.run) {
		e.ratio = max(e.ratio-e.decay, e.minRatio)
	} else {
		e.retract()
		if len(e.run) == 0 {
			st.idle = true
			return st
		}
	}
	var err error
	if e.ps == 1 {
		// prepare_for_decode: alloc_token_slots(batch size)
		e.slots, err = e.alloc.Alloc(e.slots[:0], len(e.run))
	} else {
		e.decs = e.decs[:0]
		for _, r := range e.run {
			d := pool.Decode{SeqLen: len(r.locs) + 1, LastLoc: -1}
			if len(r.locs) > 0 {
				d.LastLoc = r.locs[len(r.locs)-1]
			}
			e.decs = append(e.decs, d)
		}
		e.slots, err = e.alloc.AllocDecode(e.slots[:0], e.decs)
	}
	if err != nil {
		panic(fmt.Sprintf("simulate: sglang decode allocation failed after its memory check: %v", err))
	}
	st.reqs = len(e.run)
	st.newTokens = len(e.run)
	e.held += len(e.run)
	if e.cfg.OverlapSchedule {
		// The tokens and finishes come with the results, next step.
		for i, r := range e.run {
			r.locs = append(r.locs, e.slots[i])
			st.kvRead += int64(len(r.locs))
		}
		e.cur = append(e.cur, e.run...)
		return st
	}
	for i, r := range e.run {
		r.locs = append(r.locs, e.slots[i])
		st.kvRead += int64(len(r.locs))
		r.out++
		if r.out >= r.M {
			e.cacheFinished(r)
			e.live--
		}
	}
	return st
}

// retract is retract_decode: victims are the requests with the fewest
// outputs, ties the longest prompt; at least one; then while the rest do
// not fit. The ratio becomes the survivors' progress estimate.
func (e *sglang) retract() {
	e.order = e.order[:0]
	for i := range e.run {
		e.order = append(e.order, i)
	}
	run := e.run
	slices.SortStableFunc(e.order, func(a, b int) int {
		ra, rb := run[a], run[b]
		if ra.out != rb.out {
			return rb.out - ra.out // descending out
		}
		return ra.P - rb.P // descending -P: ascending P
	})
	retracted := 0
	first := true
	for first || !e.checkDecodeMem(e.survivors()) {
		if len(e.order) == 1 {
			if !e.checkDecodeMem(e.survivors()) {
				// One request and no slot: newer SGLang aborts it.
				r := run[e.order[0]]
				e.release(r)
				e.order = e.order[:0]
				e.s.sum.UnservableRequests++
				r.done = true
				e.ended = append(e.ended, r)
			}
			break
		}
		first = false
		v := run[e.order[len(e.order)-1]]
		e.order = e.order[:len(e.order)-1]
		e.release(v)
		v.done = true // leaves the running batch below
		retracted++
		e.victims = append(e.victims, v)
		e.evictFor(sglRetractDecodeSteps * len(e.order))
	}
	k := 0
	var outSum, mSum int
	for i, r := range e.run {
		if r.done {
			continue
		}
		if k != i {
			e.run[k] = r
		}
		k++
		outSum += r.out
		mSum += r.M
	}
	e.live = k
	clear(e.run[k:])
	e.run = e.run[:k]
	for _, v := range e.victims {
		v.done, v.retracted = false, true
		e.waitq.pushBack(qent{r: v})
	}
	clear(e.victims)
	e.victims = e.victims[:0]
	e.retractions += int64(retracted)
	e.latch = false
	// retract_decode: the survivors' progress estimate over their
	// max_new_tokens + 1 (current releases; docs/simulate.md#retraction).
	e.ratio = min(1, float64(outSum+sglRetractDecodeSteps*k)/float64(mSum+1))
}

// survivors returns the running requests still in e.order.
func (e *sglang) survivors() []*req {
	out := e.canRun[:0]
	for _, i := range e.order {
		out = append(out, e.run[i])
	}
	e.canRun = out
	return out
}
