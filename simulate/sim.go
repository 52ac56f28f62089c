package simulate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
)

// Engines.
const (
	EngineSGLang = "sglang"
	EngineVLLM   = "vllm"
)

// Binding limits (Summary.BindingLimit).
const (
	LimitKVPool      = "kv_pool"
	LimitMaxRunning  = "max_running_requests"
	LimitTokenBudget = "token_budget"
	LimitArrivals    = "arrivals"
	// LimitCompute: the GPUs cannot keep up with the arrivals at any pool
	// size (Summary.ComputeLoadEst above 1).
	LimitCompute = "compute"
)

// Config is one simulated server: the engine, its pool sizes and scheduler
// knobs (as the engine names them), and the time model.
type Config struct {
	// Engine is EngineSGLang or EngineVLLM.
	Engine string `json:"engine"`

	// MaxTotalNumTokens is SGLang's token pool (max_total_num_tokens).
	MaxTotalNumTokens int `json:"max_total_num_tokens,omitempty"`
	// PageSize is SGLang's --page-size (0: 1).
	PageSize int `json:"page_size,omitempty"`
	// MaxRunningRequests is SGLang's --max-running-requests (0: no cap
	// beyond the pool).
	MaxRunningRequests int `json:"max_running_requests,omitempty"`
	// MaxPrefillTokens is SGLang's --max-prefill-tokens (0: 16384).
	MaxPrefillTokens int `json:"max_prefill_tokens,omitempty"`
	// ChunkedPrefillSize is SGLang's --chunked-prefill-size; <= 0 disables
	// chunking.
	ChunkedPrefillSize int `json:"chunked_prefill_size,omitempty"`
	// ScheduleConservativeness is SGLang's --schedule-conservativeness
	// (0: 1.0).
	ScheduleConservativeness float64 `json:"schedule_conservativeness,omitempty"`
	// DisableRadixCache is SGLang's --disable-radix-cache.
	DisableRadixCache bool `json:"disable_radix_cache,omitempty"`
	// LegacyAdmission drops the per-request page overhead from SGLang's
	// admission test (releases before the PrefillBudget rewrite).
	LegacyAdmission bool `json:"legacy_admission,omitempty"`
	// EvictShortfall evicts only what an allocation lacks from the radix
	// tree (SGLang's newest main, mem_cache/common.py
	// evict_from_tree_cache); false evicts the whole need, as the released
	// versions do (docs/simulate.md#radix-cache).
	EvictShortfall bool `json:"evict_shortfall,omitempty"`
	// OverlapSchedule runs SGLang's overlap scheduler (its default,
	// event_loop_overlap): a batch's results (tokens, finishes and the
	// frees they bring) are processed one iteration later, after the next
	// batch was scheduled; false is the non-overlap loop
	// (--disable-overlap-schedule; docs/simulate.md#overlap-scheduler).
	OverlapSchedule bool `json:"overlap_schedule,omitempty"`
	// IgnoreEOS says every request is sent with ignore_eos: with the radix
	// cache disabled SGLang then admits it by add_one_req_ignore_eos, a
	// projected-peak test over the running requests
	// (docs/simulate.md#ignore_eos-admission).
	IgnoreEOS bool `json:"ignore_eos,omitempty"`
	// ContextLength is SGLang's context length (0: the pool's size is the
	// limit): with the pool it sets max_req_len = min(context - 1, pool -
	// 1); prompts of max_req_len - 5 tokens or more are refused and
	// max_new_tokens is clipped to max_req_len - prompt - 1
	// (docs/simulate.md#request-limits).
	ContextLength int `json:"context_length,omitempty"`

	// NumGPUBlocks is vLLM's num_gpu_blocks (the null block included).
	NumGPUBlocks int `json:"num_gpu_blocks,omitempty"`
	// BlockSize is vLLM's --block-size (0: 16).
	BlockSize int `json:"block_size,omitempty"`
	// MaxNumBatchedTokens is vLLM's --max-num-batched-tokens (0: 8192).
	MaxNumBatchedTokens int `json:"max_num_batched_tokens,omitempty"`
	// MaxNumSeqs is vLLM's --max-num-seqs (0: 256).
	MaxNumSeqs int `json:"max_num_seqs,omitempty"`
	// MaxModelLen is vLLM's --max-model-len (0: no limit): longer requests
	// are refused.
	MaxModelLen int `json:"max_model_len,omitempty"`
	// DisablePrefixCaching is vLLM's --no-enable-prefix-caching.
	DisablePrefixCaching bool `json:"disable_prefix_caching,omitempty"`
	// SHA256BlockHashes hashes blocks with vLLM's sha256_cbor (package
	// prefix) instead of a fast 128-bit content hash; hits are the same.
	SHA256BlockHashes bool `json:"sha256_block_hashes,omitempty"`

	// Time is the step-time model.
	Time TimeModel `json:"time_model"`
	// Notes say what of the planned server the simulation leaves out.
	Notes []string `json:"notes,omitempty"`
	// TimeseriesEvery records a Point every this many steps (0: none).
	TimeseriesEvery int `json:"timeseries_every,omitempty"`
	// Progress, when set, is called now and then with the requests
	// finished (completed or unservable) and the requests read so far.
	Progress func(finished, read int64) `json:"-"`
}

// Validate reports every problem with the config.
func (c Config) Validate() error {
	var errs []error
	switch c.Engine {
	case EngineSGLang:
		ps := max(c.PageSize, 1)
		if c.PageSize < 0 {
			errs = append(errs, fmt.Errorf("page_size %d must not be negative", c.PageSize))
		}
		if c.MaxTotalNumTokens < ps {
			errs = append(errs, fmt.Errorf("max_total_num_tokens %d must be at least one page (%d tokens)", c.MaxTotalNumTokens, ps))
		}
		if n := min(c.MaxTotalNumTokens, c.ContextLength) - 1 - sglInputMargin; c.ContextLength > 0 && n <= 0 || c.MaxTotalNumTokens-1-sglInputMargin <= 0 {
			errs = append(errs, fmt.Errorf("max_total_num_tokens %d and context_length %d leave no prompt length: SGLang needs min(context_length, max_total_num_tokens) - 6 > 0 (\"Memory pool size is too small\")", c.MaxTotalNumTokens, c.ContextLength))
		}
		if c.MaxRunningRequests < 0 || c.MaxPrefillTokens < 0 || c.ContextLength < 0 {
			errs = append(errs, fmt.Errorf("max_running_requests %d, max_prefill_tokens %d and context_length %d must not be negative", c.MaxRunningRequests, c.MaxPrefillTokens, c.ContextLength))
		}
		if c.ScheduleConservativeness < 0 || math.IsNaN(c.ScheduleConservativeness) || math.IsInf(c.ScheduleConservativeness, 0) {
			errs = append(errs, fmt.Errorf("schedule_conservativeness %v must be a finite number >= 0", c.ScheduleConservativeness))
		}
	case EngineVLLM:
		if c.NumGPUBlocks < 2 {
			errs = append(errs, fmt.Errorf("num_gpu_blocks %d must be at least 2 (block 0 is the null block)", c.NumGPUBlocks))
		}
		if c.BlockSize < 0 || c.MaxNumBatchedTokens < 0 || c.MaxNumSeqs < 0 || c.MaxModelLen < 0 {
			errs = append(errs, fmt.Errorf("block_size %d, max_num_batched_tokens %d, max_num_seqs %d and max_model_len %d must not be negative", c.BlockSize, c.MaxNumBatchedTokens, c.MaxNumSeqs, c.MaxModelLen))
		}
	default:
		errs = append(errs, fmt.Errorf("engine %q is not %s or %s", c.Engine, EngineSGLang, EngineVLLM))
	}
	if c.TimeseriesEvery < 0 {
		errs = append(errs, fmt.Errorf("timeseries_every %d must not be negative", c.TimeseriesEvery))
	}
	if err := c.Time.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}

// Point is one sample of the time series.
type Point struct {
	Step    int64   `json:"step"`
	TimeS   float64 `json:"t_est_s"`
	Running int     `json:"running"`
	Waiting int     `json:"waiting"`
	// KVUsedTokens are held by requests; KVCachedTokens are cached but
	// free to evict (SGLang's evictable tree, vLLM's cached free blocks).
	KVUsedTokens   int `json:"kv_used_tokens"`
	KVCachedTokens int `json:"kv_cached_tokens"`
	BatchTokens    int `json:"batch_tokens"`
}

// Summary is the outcome of a simulation. The memory-side counts are exact
// for the policy; keys with _est are estimates of the time model.
type Summary struct {
	Engine string `json:"engine"`
	// PoolTokens is the KV pool in tokens (vLLM: usable blocks x block size).
	PoolTokens         int64 `json:"pool_tokens"`
	RequestsRead       int64 `json:"requests_read"`
	RequestsCompleted  int64 `json:"requests_completed"`
	UnservableRequests int64 `json:"unservable_requests"`
	// ClippedRequests were served with fewer outputs than asked: SGLang
	// clips max_new_tokens to max_req_len - prompt - 1.
	ClippedRequests int64   `json:"clipped_requests,omitempty"`
	PeakRunning     int     `json:"peak_running"`
	MeanRunning     float64 `json:"mean_running"`
	PeakWaiting     int     `json:"peak_waiting"`
	// Retractions (SGLang) or Preemptions (vLLM): only the engine's key is
	// present.
	Retractions *int64 `json:"retractions,omitempty"`
	Preemptions *int64 `json:"preemptions,omitempty"`
	// RecomputedTokens are KV tokens computed again after a retraction or
	// preemption (lost tokens not recovered from the prefix cache).
	RecomputedTokens int64 `json:"recomputed_tokens"`
	// PrefixHitRate is cached / looked-up prompt tokens over first
	// admissions (docs/simulate.md#prefix-hit-rate).
	PrefixHitRate      float64 `json:"prefix_hit_rate"`
	PromptTokens       int64   `json:"prompt_tokens"`
	CachedPromptTokens int64   `json:"cached_prompt_tokens"`
	// PeakKVTokens is the most KV tokens held by requests at once (cached,
	// evictable tokens not counted).
	PeakKVTokens int64 `json:"peak_kv_tokens"`
	// BindingLimit is compute when the GPUs cannot keep up with the
	// arrivals (ComputeLoadEst above 1: no pool size would help), else
	// what most often kept a waiting request out: the KV pool, the
	// running-request cap, the per-step token budget, or nothing
	// (arrivals: the queue was empty).
	BindingLimit string           `json:"binding_limit"`
	BlockedSteps map[string]int64 `json:"blocked_steps"`
	Steps        int64            `json:"steps"`
	PrefillSteps int64            `json:"prefill_steps"`
	DecodeSteps  int64            `json:"decode_steps"`
	// RequestSteps is the sum over steps of the requests in the batch.
	RequestSteps int64 `json:"request_steps"`
	OutputTokens int64 `json:"output_tokens"`
	// FinalNewTokenRatio is SGLang's new_token_ratio at the end.
	FinalNewTokenRatio float64 `json:"final_new_token_ratio,omitempty"`

	TimeModel           string  `json:"time_model"`
	DurationEstS        float64 `json:"duration_est_s"`
	MeanTTFTEstS        float64 `json:"mean_ttft_est_s"`
	MaxTTFTEstS         float64 `json:"max_ttft_est_s"`
	MeanITLEstS         float64 `json:"mean_itl_est_s"`
	OutputTokensPerSEst float64 `json:"output_tokens_per_s_est"`
	// KVQueueEstS is request-seconds spent waiting while the KV pool was
	// the reason the queue head was not admitted.
	KVQueueEstS float64 `json:"kv_queue_est_s"`
	// ComputeLoadEst is the GPU time the workload's tokens need at best
	// (their compute and KV reads, which no batch size or pool amortizes;
	// recomputed tokens left out) over the time its requests arrive in,
	// with every pipeline stage busy: above 1 the server cannot keep up
	// with the arrivals whatever its pool, and about that many replicas
	// would. 0 with a constant step time or when every request arrives at
	// once.
	ComputeLoadEst float64 `json:"compute_load_est"`

	Timeseries []Point `json:"timeseries,omitempty"`
}

// stepInfo is what one engine iteration did.
type stepInfo struct {
	idle      bool
	prefill   bool
	reqs      int     // requests in the batch
	newTokens int     // tokens computed
	attnWork  float64 // sum over prefill requests of new x (prefix + new/2)
	kvRead    int64   // KV tokens read by the batch
	blocked   string  // why waiting requests were not admitted ("" none)
}

// engine is one scheduler policy.
type engine interface {
	// arrive queues a new request, or counts it unservable.
	arrive(r Request, id int64)
	step(now float64) stepInfo
	busy() bool
	running() int
	waiting() int
	kvUsed() int
	kvCached() int
	poolTokens() int64
	finish(s *Summary)
}

// sim holds what both engines share: requests, counters, the clock.
type sim struct {
	sum      *Summary
	now      float64
	free     []*req // finished requests, their buffers kept for reuse
	live     int    // requests made by take and not yet recycled
	firsts   []*req // got their first token this step
	dones    []*req // finished this step
	ttftSum  float64
	itlSum   float64
	itlN     int64
	firstAdm int64
	// compS and kvS sum the steps' unamortized compute and KV-read time
	// (TimeModel.work); firstArr and lastArr bound the arrivals.
	compS, kvS        float64
	firstArr, lastArr float64
}

// req is one request inside the simulator.
type req struct {
	// The fields every decode step reads come first: one cache line.
	out      int
	P, M     int
	done     bool
	admitted bool    // admitted at least once
	locs     []int32 // SGLang: slots of tokens[:len(locs)]
	computed int     // vLLM
	blocks   []int32 // vLLM

	id      int64
	arrival float64
	tokens  []uint32 // P+M token ids (outputs included: they are fixed); made at first admission

	// where the token ids come from (materialize)
	own, group uint64
	groupLen   int
	ids        []uint32

	// SGLang
	treeLen int    // leading tokens owned by the radix tree
	node    *rnode // locked tree node (nil: none)
	prefix  int    // prefix matched at the last admission
	// retracted: back in the queue; a pending result for it is dropped
	// (the overlap scheduler's is_retracted)
	retracted bool

	// vLLM
	hashes  []hashT
	hashed  int // tokens covered by hashes
	cachedB int // blocks registered in the cache

	lost   int // computed tokens lost at the last retraction/preemption
	firstT float64
}

// Token streams: tokens of a prefix group, a session or a request.
func tok(key uint64, i int) uint32 {
	z := key*0x9e3779b97f4a7c15 + uint64(i)*0xbf58476d1ce4e5b9 + 0x94d049bb133111eb
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return uint32(z ^ (z >> 31))
}

const (
	keyGroup   = 1 << 60
	keySession = 2 << 60
	keyOwn     = 3 << 60
)

// describe is what a waiting request holds: its description, m outputs
// (after the engine's clip).
func describe(r Request, id int64, m int) desc {
	d := desc{arrival: r.ArrivalS, id: id, own: uint64(keyOwn) | uint64(id), P: int32(r.promptLen()), M: int32(m),
		group: int32(r.PrefixGroup), prefix: int32(r.PrefixTokens)}
	if r.Session > 0 { // session 0 is no session
		d.own = uint64(keySession) | uint64(r.Session)
	}
	if len(r.PromptIDs) > 0 {
		ids := r.PromptIDs
		d.ids = &ids
	}
	return d
}

// take returns the waiting request w, making it from its description
// (reusing a finished request's buffers) the first time it is considered.
func (s *sim) take(w *qent) *req {
	if w.r != nil {
		return w.r
	}
	var q *req
	if k := len(s.free); k > 0 {
		q = s.free[k-1]
		s.free[k-1] = nil
		s.free = s.free[:k-1]
		*q = req{tokens: q.tokens[:0], locs: q.locs[:0], blocks: q.blocks[:0], hashes: q.hashes[:0]}
	} else {
		q = &req{}
	}
	s.live++
	d := &w.d
	q.id, q.arrival, q.P, q.M = d.id, d.arrival, int(d.P), int(d.M)
	q.own, q.group, q.groupLen = d.own, uint64(keyGroup)|uint64(d.group), int(d.prefix)
	if d.ids != nil {
		q.ids = *d.ids
	}
	w.r = q
	return q
}

// materialize makes q's token ids (prompt and outputs) when it is first
// considered for admission: a waiting request holds only its description.
func (s *sim) materialize(q *req) {
	n := q.P + q.M
	if len(q.tokens) == n {
		return
	}
	if cap(q.tokens) < n {
		q.tokens = make([]uint32, 0, n)
	}
	t := q.tokens[:n]
	if len(q.ids) > 0 {
		copy(t, q.ids)
		for i := q.P; i < n; i++ {
			t[i] = tok(q.own, i)
		}
	} else {
		for i := range t {
			if i < q.groupLen {
				t[i] = tok(q.group, i)
			} else {
				t[i] = tok(q.own, i)
			}
		}
	}
	q.tokens, q.ids = t, nil
}

// recycle returns a finished request to the free list, which keeps at
// most as many requests as are live (plus a few), so that the buffers kept
// for reuse stay proportional to the running requests, not to all of them.
func (s *sim) recycle(q *req) {
	s.live--
	if len(s.free) < s.live+64 {
		s.free = append(s.free, q)
	}
}

// Run replays src through the engine cfg describes and returns the
// summary. It stops early with ctx's error when ctx is done.
func Run(ctx context.Context, cfg Config, src Source) (*Summary, error) {
	return run(ctx, cfg, src, nil)
}

// run is Run with a hook called after every step (tests check invariants
// there).
func run(ctx context.Context, cfg Config, src Source, hook func(e engine, s *sim) error) (sum *Summary, err error) {
	defer func() {
		// An engine invariant that breaks is a bug in this package; the
		// caller (a server, say) gets an error, not a crash.
		if p := recover(); p != nil {
			sum, err = nil, fmt.Errorf("simulate: internal error: %v", p)
		}
	}()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if src == nil {
		return nil, fmt.Errorf("%w: no workload", ErrWorkload)
	}
	sum = &Summary{Engine: cfg.Engine, BlockedSteps: map[string]int64{}, TimeModel: cfg.Time.Label()}
	s := &sim{sum: sum}
	var e engine
	if cfg.Engine == EngineSGLang {
		e, err = newSGLang(cfg, s)
	} else {
		e, err = newVLLM(cfg, s)
	}
	if err != nil {
		return nil, err
	}
	sum.PoolTokens = e.poolTokens()
	l := &loop{cfg: cfg, src: src, hook: hook, e: e, s: s}
	if err := l.pull(); err != nil {
		return nil, err
	}
	if err := l.replay(ctx); err != nil {
		return nil, err
	}
	if cfg.Progress != nil {
		cfg.Progress(sum.RequestsCompleted+sum.UnservableRequests, sum.RequestsRead)
	}
	e.finish(sum)
	s.summarize(l.runSum)
	s.computeLoad(cfg.Time)
	return sum, nil
}

// loop is the state of one replay: the next request from the source and
// the step counters run keeps.
type loop struct {
	cfg  Config
	src  Source
	hook func(e engine, s *sim) error
	e    engine
	s    *sim

	next           Request
	have           bool // next holds a request not yet arrived
	nextID         int64
	runSum         float64 // running requests summed over steps
	idles          int     // idle steps in a row
	lastUnservable int64
}

// pull reads the next request from the source; at its end have is false.
func (l *loop) pull() error {
	r, err := l.src.Next()
	if errors.Is(err, io.EOF) {
		l.have = false
		return nil
	}
	if err != nil {
		return err
	}
	l.next, l.have = r, true
	return nil
}

// replay steps the engine until the source is drained and the engine is
// idle, stopping early with ctx's error when ctx is done.
func (l *loop) replay(ctx context.Context) error {
	s, sum, e, cfg := l.s, l.s.sum, l.e, &l.cfg
	for {
		for l.have && l.next.ArrivalS <= s.now {
			if sum.RequestsRead == 0 {
				s.firstArr = l.next.ArrivalS
			}
			s.lastArr = l.next.ArrivalS
			sum.RequestsRead++
			e.arrive(l.next, l.nextID)
			l.nextID++
			// A trace of millions of requests arriving at once is read
			// here without a step in between: look at ctx here too.
			if sum.RequestsRead&1023 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			if err := l.pull(); err != nil {
				return err
			}
		}
		if !e.busy() {
			if !l.have {
				return nil
			}
			s.now = l.next.ArrivalS
			continue
		}
		if sum.Steps&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			if cfg.Progress != nil {
				cfg.Progress(sum.RequestsCompleted+sum.UnservableRequests, sum.RequestsRead)
			}
		}
		st := e.step(s.now)
		if l.hook != nil {
			if err := l.hook(e, s); err != nil {
				return err
			}
		}
		waiting := e.waiting()
		if st.blocked != "" {
			sum.BlockedSteps[st.blocked]++
		}
		if st.idle {
			// The overlap scheduler processes the last batch's results
			// in a step that runs nothing.
			l.flush()
			if sum.UnservableRequests != l.lastUnservable {
				l.idles, l.lastUnservable = 0, sum.UnservableRequests
			}
			if l.idles++; l.idles > 3 {
				return fmt.Errorf("simulate: internal error: the %s scheduler made no progress with %d requests waiting", cfg.Engine, waiting)
			}
			continue
		}
		l.idles = 0
		l.record(st, waiting)
	}
}

// record advances the clock by the step's estimated time and counts what
// the step did: first tokens, completions, batch and pool peaks, and the
// time series.
func (l *loop) record(st stepInfo, waiting int) {
	s, sum, e, cfg := l.s, l.s.sum, l.e, &l.cfg
	dt, comp, kv := cfg.Time.stepWork(st)
	s.compS += comp
	s.kvS += kv
	if st.blocked == LimitKVPool {
		sum.KVQueueEstS += dt * float64(waiting)
	}
	if cfg.OverlapSchedule {
		// Results processed this step are the last batch's: they
		// arrived when it ended, before this step's time.
		l.flush()
	}
	s.now += dt
	l.flush()
	sum.Steps++
	if st.prefill {
		sum.PrefillSteps++
	} else {
		sum.DecodeSteps++
	}
	sum.RequestSteps += int64(st.reqs)
	run := e.running()
	l.runSum += float64(run)
	sum.PeakRunning = max(sum.PeakRunning, run)
	sum.PeakWaiting = max(sum.PeakWaiting, waiting)
	used := e.kvUsed()
	sum.PeakKVTokens = max(sum.PeakKVTokens, int64(used))
	if cfg.TimeseriesEvery > 0 && sum.Steps%int64(cfg.TimeseriesEvery) == 0 {
		sum.Timeseries = append(sum.Timeseries, Point{Step: sum.Steps, TimeS: s.now, Running: run, Waiting: waiting,
			KVUsedTokens: used, KVCachedTokens: e.kvCached(), BatchTokens: st.newTokens})
	}
}

// flush stamps the requests that got their first token or finished with
// the current time and counts the finished ones.
func (l *loop) flush() {
	s, sum := l.s, l.s.sum
	for _, r := range s.firsts {
		r.firstT = s.now
	}
	for _, r := range s.dones {
		sum.RequestsCompleted++
		sum.OutputTokens += int64(r.M)
		ttft := r.firstT - r.arrival
		s.ttftSum += ttft
		sum.MaxTTFTEstS = max(sum.MaxTTFTEstS, ttft)
		if r.M > 1 {
			s.itlSum += (s.now - r.firstT) / float64(r.M-1)
			s.itlN++
		}
	}
	s.firsts, s.dones = s.firsts[:0], s.dones[:0]
}

// summarize fills the summary's means, rates and binding limit once the
// replay is over; runSum is the running requests summed over steps.
func (s *sim) summarize(runSum float64) {
	sum := s.sum
	if sum.Steps > 0 {
		sum.MeanRunning = runSum / float64(sum.Steps)
	}
	if sum.PromptTokens > 0 {
		sum.PrefixHitRate = float64(sum.CachedPromptTokens) / float64(sum.PromptTokens)
	}
	sum.DurationEstS = s.now
	if sum.RequestsCompleted > 0 {
		sum.MeanTTFTEstS = s.ttftSum / float64(sum.RequestsCompleted)
	}
	if s.itlN > 0 {
		sum.MeanITLEstS = s.itlSum / float64(s.itlN)
	}
	if s.now > 0 {
		sum.OutputTokensPerSEst = float64(sum.OutputTokens) / s.now
	}
	sum.BindingLimit = LimitArrivals
	var most int64
	for _, k := range []string{LimitKVPool, LimitMaxRunning, LimitTokenBudget} {
		if n := sum.BlockedSteps[k]; n > most {
			most, sum.BindingLimit = n, k
		}
	}
}

// computeLoad sets the summary's ComputeLoadEst and, above 1, names
// compute the binding limit: the GPU time the work needs at best over the
// time the requests arrive in.
func (s *sim) computeLoad(m TimeModel) {
	sum := s.sum
	span := s.lastArr - s.firstArr
	if span <= 0 || sum.RequestsRead < 2 {
		return
	}
	// Spread over the gaps between arrivals: n requests arrive over n-1
	// of them.
	perReq := span / float64(sum.RequestsRead-1)
	comp := max(s.compS-m.tokenCompute(sum.RecomputedTokens), 0)
	stages := float64(max(m.PipelineStages, 1))
	sum.ComputeLoadEst = max(comp, s.kvS) / stages / (perReq * float64(sum.RequestsRead))
	if sum.ComputeLoadEst > 1 {
		sum.BindingLimit = LimitCompute
	}
}
