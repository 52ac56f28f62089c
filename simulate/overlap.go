package simulate

import "slices"

// committed is the KV r has computed: all but its last sampled token
// (P + out - 1), or what it holds when less (mid-chunk). Under the overlap
// scheduler a request may also hold the slot of a token still in flight.
func committed(r *req) int { return min(len(r.locs), r.P+r.out-1) }

// stepOverlap is one iteration of SGLang's event_loop_overlap
// (scheduler.py; docs/simulate.md#overlap-scheduler): it schedules and
// allocates this step's batch from a state that does not yet have the
// last batch's results, then processes those results (tokens, finishes and
// the frees they bring), one step late.
func (e *sglang) stepOverlap() stepInfo {
	// Requests that finished before the last batch's results may sit in
	// that batch: they are recycled only after it is processed.
	prev := len(e.ended)
	e.cur, e.curPrefill = e.cur[:0], false
	st, ok := e.prefill()
	if !ok {
		blocked := st.blocked
		st = e.decode()
		st.blocked = blocked
	}
	e.processResults()
	e.pend, e.cur = e.cur, e.pend
	e.pendPrefill = e.curPrefill
	for _, r := range e.ended[:prev] {
		e.s.recycle(r)
	}
	n := copy(e.ended, e.ended[prev:])
	clear(e.ended[n:])
	e.ended = e.ended[:n]
	return st
}

// processResults is process_batch_result for the last batch under the
// overlap scheduler: every request still running gets its token; one that
// reaches max_new_tokens finishes (its KV becomes evictable, the slot of
// the token computed in the meantime is freed) and leaves the running
// batch; a prefilled one puts its prompt in the tree. Retracted requests'
// results are dropped.
func (e *sglang) processResults() {
	finished := false
	for _, r := range e.pend {
		if r.done || r.retracted {
			continue
		}
		if e.sample(r) {
			e.live--
			finished = true
			continue
		}
		if e.pendPrefill {
			e.cacheUnfinished(r)
		}
	}
	clear(e.pend)
	e.pend = e.pend[:0]
	if finished {
		e.run = slices.DeleteFunc(e.run, func(r *req) bool { return r.done })
		e.shrunk = true
	}
}

// eosState is one request of add_one_req_ignore_eos's projection: the
// tokens it still decodes and the tokens it holds.
type eosState struct{ left, occupied int }

// addOneIgnoreEOS is add_one_req_ignore_eos (schedule_policy.py), SGLang's
// admission of an ignore_eos request with the radix cache disabled
// (docs/simulate.md#ignore_eos-admission): the prompt's pages must fit
// what is left, and with every running, admitted and new request decoding
// to its max_new_tokens, shortest first, at each finish the pool must
// still hold more than IGNORE_EOS_RESERVE_TOKENS per request left running.
func (e *sglang) addOneIgnoreEOS(a *adder, r *req, batch []*req) (res int, extend int, ok bool) {
	extend = r.P + r.out - r.prefix
	paged := ceilTo(extend, e.ps)
	remTotal, remCur := e.remaining(a)
	if float64(paged) > min(remCur, remTotal) {
		return addNoToken, 0, false
	}
	st := e.states[:0]
	add := func(q *req) {
		if left := q.M - q.out; left > 0 {
			st = append(st, eosState{left: left, occupied: q.P + q.out})
		}
	}
	add(r)
	for _, q := range e.run {
		if !q.done {
			add(q)
		}
	}
	for _, q := range batch {
		add(q)
	}
	slices.SortStableFunc(st, func(x, y eosState) int { return x.left - y.left })
	e.states = st
	cur, freed := remCur-float64(paged), 0.0
	for i, s := range st {
		bs := float64(len(st) - i)
		if cur+freed-float64(s.left)*bs <= sglIgnoreEOSReserve*bs {
			return addNoToken, 0, false
		}
		freed += float64(s.occupied)
	}
	reservedNew := min(r.M, sglClipMaxNewTokens)
	if a.chunking && extend > a.remChunk {
		extend = floorTo(a.remChunk, e.ps)
		if extend <= 0 {
			return addOther, 0, false
		}
		a.newChunked = r
		reservedNew = 0
	}
	e.reserve(a, extend, reservedNew)
	return e.budgetState(a), extend, true
}
