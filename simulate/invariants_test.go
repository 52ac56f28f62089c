package simulate

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
)

// check verifies the engine's memory after a step: every allocated slot or
// block is owned exactly once, the pool's free count matches, and
// finished requests computed every token.
func check(e engine, s *sim) error {
	for _, r := range s.dones {
		if r.out != r.M {
			return fmt.Errorf("request %d finished with %d of %d outputs", r.id, r.out, r.M)
		}
	}
	switch e := e.(type) {
	case *sglang:
		return e.check()
	case *vllm:
		return e.check()
	}
	return nil
}

// reqs yields the waiting requests already made from their descriptions.
func (q *queue) reqs() func(yield func(*req) bool) {
	return func(yield func(*req) bool) {
		for i := range q.len() {
			if r := q.at(i).r; r != nil && !yield(r) {
				return
			}
		}
	}
}

func (e *sglang) check() error {
	ps := e.ps
	owner := map[int]string{} // page -> owner
	own := func(loc int32, who string) error {
		pg := int(loc) / ps
		if o, ok := owner[pg]; ok && o != who {
			return fmt.Errorf("page %d owned by %s and %s", pg, o, who)
		}
		owner[pg] = who
		return nil
	}
	var treeTok, evict, prot int
	var err error
	if e.tree != nil {
		e.tree.walk(func(n *rnode) {
			treeTok += len(n.key)
			if n.lock == 0 {
				evict += len(n.key)
			} else {
				prot += len(n.key)
			}
			if len(n.key) != len(n.value) || len(n.key)%ps != 0 {
				err = fmt.Errorf("node of %d keys, %d values (page %d)", len(n.key), len(n.value), ps)
			}
			for _, l := range n.value {
				if e2 := own(l, fmt.Sprintf("node %p", n)); e2 != nil && err == nil {
					err = e2
				}
			}
		})
		if err != nil {
			return err
		}
		queued := map[*rnode]bool{}
		for _, en := range e.tree.lru {
			if en.gen == en.n.gen && en.access == en.n.access {
				queued[en.n] = true
			}
		}
		e.tree.walk(func(n *rnode) {
			if n.lock == 0 && len(n.children) == 0 && !queued[n] && err == nil {
				err = fmt.Errorf("unlocked leaf of %d tokens is not queued for eviction", len(n.key))
			}
		})
		if err != nil {
			return err
		}
		if evict != e.tree.evictable || prot != e.tree.protected {
			return fmt.Errorf("tree counts evictable %d protected %d, nodes say %d %d", e.tree.evictable, e.tree.protected, evict, prot)
		}
	}
	reqs := append([]*req{}, e.run...)
	if e.chunked != nil {
		reqs = append(reqs, e.chunked)
	}
	inFlight := map[*req]bool{} // overlap: their batch's results are pending
	for _, r := range e.pend {
		inFlight[r] = true
	}
	private := 0
	for _, r := range reqs {
		if r.done {
			if len(r.locs) != 0 {
				return fmt.Errorf("finished request %d still holds %d slots", r.id, len(r.locs))
			}
			continue
		}
		want := r.P + r.out - 1
		if inFlight[r] {
			want++ // the slot of the token in flight
		}
		if r == e.chunked {
			want = len(r.locs)
		}
		if len(r.locs) != want {
			return fmt.Errorf("request %d holds %d slots, has %d tokens of KV", r.id, len(r.locs), want)
		}
		if r.treeLen%ps != 0 {
			return fmt.Errorf("request %d tree part %d not page aligned", r.id, r.treeLen)
		}
		private += len(r.locs) - r.treeLen
		for _, l := range r.locs[r.treeLen:] {
			if err := own(l, fmt.Sprintf("request %d", r.id)); err != nil {
				return err
			}
		}
	}
	for r := range e.waitq.reqs() {
		if len(r.locs) != 0 || r.node != nil {
			return fmt.Errorf("waiting request %d holds %d slots", r.id, len(r.locs))
		}
	}
	live := 0
	for _, r := range e.run {
		if !r.done {
			live++
		}
	}
	if live != e.live {
		return fmt.Errorf("%d running requests, counter says %d", live, e.live)
	}
	if private != e.held {
		return fmt.Errorf("requests hold %d private tokens, counter says %d", private, e.held)
	}
	used := e.alloc.Size() - e.alloc.Available()
	if len(owner)*ps != used {
		return fmt.Errorf("pool uses %d tokens, owners hold %d pages of %d", used, len(owner), ps)
	}
	if ps == 1 && used != treeTok+private {
		return fmt.Errorf("pool uses %d tokens, tree %d + requests %d", used, treeTok, private)
	}
	return nil
}

func (e *vllm) check() error {
	refs := make([]int32, e.bp.NumBlocks())
	for _, r := range e.run {
		if need := cdiv(r.computed, e.bs); len(r.blocks) < need {
			return fmt.Errorf("request %d computed %d tokens in %d blocks", r.id, r.computed, len(r.blocks))
		}
		for _, b := range r.blocks {
			refs[b]++
		}
	}
	free := 0
	for id := 1; id < len(refs); id++ {
		if refs[id] != e.bp.RefCount(int32(id)) {
			return fmt.Errorf("block %d: ref count %d, requests hold it %d times", id, e.bp.RefCount(int32(id)), refs[id])
		}
		if refs[id] == 0 {
			free++
		}
	}
	if free != e.bp.NumFree() {
		return fmt.Errorf("free queue %d blocks, %d unreferenced", e.bp.NumFree(), free)
	}
	for r := range e.waitq.reqs() {
		if len(r.blocks) != 0 || r.computed != 0 {
			return fmt.Errorf("waiting request %d holds %d blocks", r.id, len(r.blocks))
		}
	}
	return nil
}

// randomCase builds a small random server and workload from seed.
func randomCase(seed uint64) (Config, []Request) {
	rng := rand.New(rand.NewPCG(seed, 7))
	var cfg Config
	cfg.Time.ConstantStepS = 0.01
	if rng.IntN(2) == 0 {
		cfg.Engine = EngineSGLang
		cfg.PageSize = []int{1, 1, 2, 4}[rng.IntN(4)]
		cfg.MaxTotalNumTokens = 16 + rng.IntN(300)
		if rng.IntN(2) == 0 {
			cfg.ChunkedPrefillSize = 8 + rng.IntN(64)
		}
		cfg.MaxPrefillTokens = 16 + rng.IntN(200)
		if rng.IntN(3) == 0 {
			cfg.MaxRunningRequests = 1 + rng.IntN(8)
		}
		cfg.ScheduleConservativeness = []float64{0.05, 0.3, 1, 2}[rng.IntN(4)]
		cfg.DisableRadixCache = rng.IntN(5) == 0
		cfg.LegacyAdmission = rng.IntN(4) == 0
		cfg.OverlapSchedule = rng.IntN(2) == 0
		cfg.EvictShortfall = rng.IntN(2) == 0
		cfg.IgnoreEOS = rng.IntN(2) == 0
	} else {
		cfg.Engine = EngineVLLM
		cfg.BlockSize = []int{1, 4, 16}[rng.IntN(3)]
		cfg.NumGPUBlocks = 2 + rng.IntN(40)
		cfg.MaxNumBatchedTokens = 8 + rng.IntN(128)
		cfg.MaxNumSeqs = 1 + rng.IntN(16)
		cfg.DisablePrefixCaching = rng.IntN(5) == 0
	}
	n := 1 + rng.IntN(40)
	reqs := make([]Request, n)
	t := 0.0
	for i := range reqs {
		t += rng.Float64() * 0.05
		p := 1 + rng.IntN(60)
		r := Request{ArrivalS: t, PromptTokens: p, OutputTokens: 1 + rng.IntN(30)}
		if rng.IntN(2) == 0 {
			r.PrefixGroup, r.PrefixTokens = rng.IntN(3), rng.IntN(p+1)
		}
		if rng.IntN(4) == 0 {
			r.Session = 1 + rng.IntN(3)
		}
		reqs[i] = r
	}
	return cfg, reqs
}

func runChecked(t testing.TB, cfg Config, reqs []Request) *Summary {
	t.Helper()
	seen := map[int64]int{}
	sum, err := run(context.Background(), cfg, &SliceSource{Reqs: reqs}, func(e engine, s *sim) error {
		for _, r := range s.dones {
			seen[r.id]++
			if seen[r.id] > 1 {
				return fmt.Errorf("request %d finished twice", r.id)
			}
		}
		return check(e, s)
	})
	if err != nil {
		t.Fatalf("%+v: %v", cfg, err)
	}
	if sum.RequestsCompleted+sum.UnservableRequests != int64(len(reqs)) || sum.RequestsRead != int64(len(reqs)) {
		t.Fatalf("%+v: %d read, %d completed + %d unservable, want %d", cfg, sum.RequestsRead, sum.RequestsCompleted, sum.UnservableRequests, len(reqs))
	}
	return sum
}

func TestInvariantsRandom(t *testing.T) {
	n := 400
	if testing.Short() {
		n = 50
	}
	for seed := range uint64(n) {
		cfg, reqs := randomCase(seed)
		runChecked(t, cfg, reqs)
	}
}

func FuzzSimulate(f *testing.F) {
	for _, s := range []uint64{0, 1, 2, 3, 42} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		cfg, reqs := randomCase(seed)
		runChecked(t, cfg, reqs)
	})
}

// A pool holding every request's full length at once never retracts or
// preempts.
func TestBigPoolNeverRetracts(t *testing.T) {
	for seed := range uint64(100) {
		cfg, reqs := randomCase(seed)
		total := 0
		for _, r := range reqs {
			total += r.PromptTokens + r.OutputTokens
		}
		cfg.MaxTotalNumTokens = 2*total + 64
		cfg.MaxRunningRequests = 0
		cfg.NumGPUBlocks = total + 2
		cfg.MaxNumSeqs = len(reqs)
		sum := runChecked(t, cfg, reqs)
		if sum.Retractions != nil && *sum.Retractions != 0 || sum.Preemptions != nil && *sum.Preemptions != 0 || sum.UnservableRequests != 0 {
			t.Errorf("seed %d %s: retractions %v preemptions %v unservable %d with a pool holding everything", seed, cfg.Engine, sum.Retractions, sum.Preemptions, sum.UnservableRequests)
		}
	}
}

// A pool smaller than one request reports it unservable and finishes.
// SGLang clips max_new_tokens to max_req_len - prompt - 1 = 99 - 60 - 1 =
// 38 (init_req_max_new_tokens), so P60 M60 is served with 38 outputs
// unless a page of 4 makes its admission total 60 + 38 + 4 = 102 > 100.
func TestPoolSmallerThanOneRequest(t *testing.T) {
	reqs := []Request{{PromptTokens: 10, OutputTokens: 5}, {PromptTokens: 200, OutputTokens: 100}, {PromptTokens: 60, OutputTokens: 60}, {PromptTokens: 10, OutputTokens: 5}}
	for _, c := range []struct {
		cfg                            Config
		completed, unservable, clipped int64
	}{
		{Config{Engine: EngineSGLang, MaxTotalNumTokens: 100}, 3, 1, 1},
		{Config{Engine: EngineSGLang, MaxTotalNumTokens: 100, ChunkedPrefillSize: 16}, 3, 1, 1},
		{Config{Engine: EngineSGLang, MaxTotalNumTokens: 100, PageSize: 4}, 2, 2, 1},
		{Config{Engine: EngineVLLM, NumGPUBlocks: 7, BlockSize: 16}, 2, 2, 0},
	} {
		c.cfg.Time.ConstantStepS = 0.01
		sum := runChecked(t, c.cfg, reqs)
		if sum.UnservableRequests != c.unservable || sum.RequestsCompleted != c.completed || sum.ClippedRequests != c.clipped {
			t.Errorf("%+v: completed %d unservable %d clipped %d, want %d, %d and %d", c.cfg, sum.RequestsCompleted, sum.UnservableRequests,
				sum.ClippedRequests, c.completed, c.unservable, c.clipped)
		}
	}
}

// Simulations share nothing: concurrent runs (go test -race) give the
// same answers as sequential ones.
func TestConcurrentRuns(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			cfg, reqs := randomCase(seed)
			a := runChecked(t, cfg, reqs)
			b := runChecked(t, cfg, reqs)
			if a.Steps != b.Steps || a.RecomputedTokens != b.RecomputedTokens || a.CachedPromptTokens != b.CachedPromptTokens {
				t.Errorf("runs differ: %+v vs %+v", a, b)
			}
		})
	}
}
